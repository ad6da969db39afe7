//! Recording the VM's tuple stream as a trace file.

use std::io::Write;

use toyvm_profiler::trace::{Format, TraceWriter};
use toyvm_vm::tuple::TupleSink;

/// A sink that writes every batch to a trace.  The first write error is
/// kept and reported by [`RecordSink::finish`]; later batches are dropped.
#[derive(Debug)]
pub struct RecordSink<W: Write> {
    writer: Option<TraceWriter<W>>,
    error: Option<toyvm_profiler::Error>,
}

impl<W: Write> RecordSink<W> {
    /// A sink writing a `format` trace to `out` (wrap a file in a
    /// `BufWriter`: every batch is written as it comes). A binary trace's
    /// header is written now, so an error here is `out`'s.
    pub fn new(out: W, format: Format) -> toyvm_profiler::Result<Self> {
        Ok(RecordSink {
            writer: Some(TraceWriter::new(out, format)?),
            error: None,
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
        if let Some(w) = self.writer.as_mut()
            && let Err(e) = w.write_all(batch)
        {
            self.error = Some(e);
        }
    }
}
