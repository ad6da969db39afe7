//! A model from its spec: the one place that knows every model, so it
//! stands above them all (the spec and each model stand below it; none
//! imports this module).

use crate::contract::Profiler;
use crate::spec::{Model, ProfilerSpec};

impl ProfilerSpec {
    /// Builds the model.
    pub fn build(&self) -> Box<dyn Profiler> {
        match &self.model {
            Model::Perfect => Box::new(crate::perfect::Perfect::new(self.clone())),
            Model::MultiHash(o) | Model::SingleHash(o) => {
                Box::new(crate::multihash::MultiHash::new(self.clone(), o.clone()))
            }
            Model::Stratified(o) => {
                Box::new(crate::stratified::Stratified::new(self.clone(), o.clone()))
            }
            Model::Tagged(o) => Box::new(crate::tagged::Tagged::new(self.clone(), o.clone())),
            Model::Conte(o) => Box::new(crate::conte::Conte::new(self.clone(), o.clone())),
            Model::Rap(o) => Box::new(crate::rap::Rap::new(self.clone(), o.clone())),
        }
    }
}
