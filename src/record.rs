//! Recording the VM's tuple stream as a trace file.

use std::io::Write;

use toyvm_profiler::trace::{Format, TraceWriter};
use toyvm_vm::tuple::TupleSink;

/// Converts a VM tuple to the profiler crate's (the encodings agree: a test
/// below pins the kind discriminants).
#[inline(always)]
pub fn to_profiler(t: &toyvm_vm::Tuple) -> toyvm_profiler::Tuple {
    use toyvm_profiler::Kind as P;
    use toyvm_vm::Kind as V;
    let kind = match t.kind {
        V::Value => P::Value,
        V::Edge => P::Edge,
        V::Call => P::Call,
    };
    toyvm_profiler::Tuple {
        kind,
        a: t.a,
        b: t.b,
    }
}

/// The VM tuple of a profiler tuple, for printing it the one way tuples
/// are printed (`E f0:7 f0:2`, see [`toyvm_vm::Tuple`]'s `Display`).
#[inline]
pub fn to_vm(t: &toyvm_profiler::Tuple) -> toyvm_vm::Tuple {
    use toyvm_profiler::Kind as P;
    use toyvm_vm::Kind as V;
    let kind = match t.kind {
        P::Value => V::Value,
        P::Edge => V::Edge,
        P::Call => V::Call,
    };
    toyvm_vm::Tuple {
        kind,
        a: t.a,
        b: t.b,
    }
}

/// A sink that writes every batch to a trace.  The first write error is
/// kept and reported by [`RecordSink::finish`]; later batches are dropped.
#[derive(Debug)]
pub struct RecordSink<W: Write> {
    writer: Option<TraceWriter<W>>,
    error: Option<toyvm_profiler::Error>,
    scratch: Vec<toyvm_profiler::Tuple>,
}

impl<W: Write> RecordSink<W> {
    pub fn new(out: W, format: Format) -> toyvm_profiler::Result<Self> {
        Ok(RecordSink {
            writer: Some(TraceWriter::new(out, format)?),
            error: None,
            scratch: Vec::new(),
        })
    }

    /// Flushes the trace; returns the first error seen.
    pub fn finish(self) -> toyvm_profiler::Result<W> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.writer
            .expect("writer is present until finish")
            .finish()
    }
}

impl<W: Write> TupleSink for RecordSink<W> {
    fn accept(&mut self, batch: &[toyvm_vm::Tuple]) {
        if self.error.is_some() {
            return;
        }
        self.scratch.clear();
        self.scratch.extend(batch.iter().map(to_profiler));
        if let Some(w) = self.writer.as_mut()
            && let Err(e) = w.write_all(&self.scratch)
        {
            self.error = Some(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_encodings_agree_between_vm_and_profiler() {
        for k in toyvm_vm::Kind::ALL {
            let t = to_profiler(&toyvm_vm::Tuple {
                kind: k,
                a: 1,
                b: 2,
            });
            assert_eq!(t.kind as u8, k as u8);
        }
    }
}
