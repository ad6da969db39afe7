//! Which configurations a comparison runs: `--profiles` lists and
//! `--sweep` grids, both expanded to canonical spec strings.

use toyvm_profiler::ProfilerSpec;
use toyvm_profiler::spec::MODEL_NAMES;

/// The configuration of one column of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub enum Config {
    /// Interpreter only, the JIT off: the baseline and the output oracle.
    Interpreter,
    /// A profiler model driving the JIT.
    Model(ProfilerSpec),
}

impl Config {
    /// `none`, or the canonical spec.
    pub fn spec_string(&self) -> String {
        match self {
            Config::Interpreter => "none".to_owned(),
            Config::Model(s) => s.to_string(),
        }
    }

    /// `none`, or the model's name.
    pub fn model_name(&self) -> &'static str {
        match self {
            Config::Interpreter => "none",
            Config::Model(s) => s.model.name(),
        }
    }

    pub fn spec(&self) -> Option<&ProfilerSpec> {
        match self {
            Config::Interpreter => None,
            Config::Model(s) => Some(s),
        }
    }
}

/// Splits `--profiles` values as `toyvm profile` does: `;` always
/// separates, and in a comma list a part without `=` (a model name) starts
/// a new spec, as does a part whose key carries a model (`perfect:interval=
/// 1000`: keys never contain `:`).
pub fn split_specs(values: &[String]) -> Vec<String> {
    let starts_spec = |part: &str| match part.split_once('=') {
        None => true,
        Some((key, _)) => key.contains(':'),
    };
    let mut specs: Vec<String> = Vec::new();
    for v in values {
        for chunk in v.split(';').map(str::trim).filter(|c| !c.is_empty()) {
            let mut current = String::new();
            for part in chunk.split(',').map(str::trim) {
                if starts_spec(part) && !current.is_empty() {
                    specs.push(std::mem::take(&mut current));
                }
                if !current.is_empty() {
                    current.push(',');
                }
                current.push_str(part);
            }
            if !current.is_empty() {
                specs.push(current);
            }
        }
    }
    specs
}

/// Parses one spec string; `none` is the interpreter.
pub fn parse_config(s: &str) -> Result<Config, String> {
    if s.trim() == "none" {
        return Ok(Config::Interpreter);
    }
    toyvm_profiler::parse_spec(s)
        .map(Config::Model)
        .map_err(|e| e.to_string())
}

/// Every model at its paper defaults, after the interpreter.
pub fn defaults() -> Vec<Config> {
    std::iter::once(Config::Interpreter)
        .chain(MODEL_NAMES.iter().map(|m| {
            Config::Model(toyvm_profiler::parse_spec(m).expect("every model parses bare"))
        }))
        .collect()
}

/// Expands a sweep grid: `model:key=a|b,key2=x|y` is the cartesian product
/// of every key's `|` alternatives, the last key varying fastest. Several
/// grids may be joined by `;`.
pub fn expand_sweep(grid: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for g in grid.split(';').map(str::trim).filter(|g| !g.is_empty()) {
        let (model, opts) = match g.split_once(':') {
            Some((m, o)) => (m.trim(), o),
            None => (g, ""),
        };
        let mut axes: Vec<(String, Vec<String>)> = Vec::new();
        for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            let (key, values) = opt
                .split_once('=')
                .ok_or_else(|| format!("sweep `{g}`: option `{opt}` is not key=value|value..."))?;
            let values: Vec<String> = values
                .split('|')
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .collect();
            if values.is_empty() {
                return Err(format!("sweep `{g}`: key `{key}` has no values"));
            }
            axes.push((key.trim().to_owned(), values));
        }
        let mut combos: Vec<Vec<String>> = vec![Vec::new()];
        for (key, values) in &axes {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push(format!("{key}={v}"));
                        c
                    })
                })
                .collect();
        }
        for c in combos {
            out.push(if c.is_empty() {
                model.to_owned()
            } else {
                format!("{model}:{}", c.join(","))
            });
        }
    }
    if out.is_empty() {
        return Err(format!("sweep `{grid}` is empty"));
    }
    Ok(out)
}

/// The configurations of a comparison, in column order and without
/// duplicates (two spellings of one canonical spec are one column). The
/// interpreter always comes first; with a sweep and no `--profiles`, the
/// perfect profiler is added as the reference of "speedup over perfect".
pub fn plan(profiles: &[String], sweeps: &[String]) -> Result<Vec<Config>, String> {
    let mut configs = if profiles.is_empty() && sweeps.is_empty() {
        defaults()
    } else {
        let mut v = vec![Config::Interpreter];
        if profiles.is_empty() {
            v.push(parse_config("perfect")?);
        }
        for s in split_specs(profiles) {
            v.push(parse_config(&s)?);
        }
        for grid in sweeps {
            for s in expand_sweep(grid)? {
                v.push(parse_config(&s).map_err(|e| format!("sweep `{grid}`: {e}"))?);
            }
        }
        v
    };
    let mut seen = std::collections::HashSet::new();
    configs.retain(|c| seen.insert(c.spec_string()));
    Ok(configs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_lists_split_at_model_names() {
        let v = vec![
            "multihash:tables=4,entries=2048,perfect".to_owned(),
            "rap:eps=1%;conte,perfect:interval=1000,threshold=5%".to_owned(),
        ];
        assert_eq!(
            split_specs(&v),
            [
                "multihash:tables=4,entries=2048",
                "perfect",
                "rap:eps=1%",
                "conte",
                "perfect:interval=1000,threshold=5%"
            ]
        );
    }

    #[test]
    fn sweeps_expand_to_the_cartesian_product() {
        let g = expand_sweep("multihash:tables=1|2|4|8,entries=512|2048").unwrap();
        assert_eq!(g.len(), 8);
        assert_eq!(g[0], "multihash:tables=1,entries=512");
        assert_eq!(g[1], "multihash:tables=1,entries=2048");
        assert_eq!(g[7], "multihash:tables=8,entries=2048");
        let g = expand_sweep("rap:eps=1%|5%; conte").unwrap();
        assert_eq!(g, ["rap:eps=1%", "rap:eps=5%", "conte"]);
        assert!(expand_sweep("multihash:tables").is_err());
        assert!(expand_sweep("multihash:tables=").is_err());
    }

    #[test]
    fn plans_start_with_the_interpreter_and_drop_duplicates() {
        let p = plan(&[], &[]).unwrap();
        assert_eq!(p.len(), 1 + MODEL_NAMES.len());
        assert_eq!(p[0], Config::Interpreter);
        let p = plan(&["perfect,perfect:interval=10000,none".into()], &[]).unwrap();
        assert_eq!(p.len(), 2);
        let p = plan(&[], &["singlehash:entries=512|1024".into()]).unwrap();
        let names: Vec<&str> = p.iter().map(Config::model_name).collect();
        assert_eq!(names, ["none", "perfect", "singlehash", "singlehash"]);
        assert!(plan(&["nosuch".into()], &[]).is_err());
    }
}
