//! `toyvm profile` without the VM: runs specs over a trace file, or over a synthetic
//! stream when the path is `-`, and prints the report.
//!
//! `cargo run -p toyvm-profiler --example profile_trace -- TRACE 'SPEC[;SPEC...]' [--json]`

use toyvm_profiler::synth::{noisy_zipf_stream, program_edges};
use toyvm_profiler::{TraceReader, parse_specs, profile_stream};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, specs) = match args.as_slice() {
        [p, s, ..] => (p.as_str(), s.as_str()),
        _ => return Err("usage: profile_trace TRACE|- 'SPEC[;SPEC...]' [--json]".into()),
    };
    let specs = parse_specs(specs)?;
    let report = if path == "-" {
        let mut s = noisy_zipf_stream(100_000, 20_000, 1.0, 0.3, 1);
        s.extend(program_edges(100_000, 8, 30, 2));
        profile_stream(s.into_iter().map(Ok), &specs)?
    } else {
        profile_stream(TraceReader::open(path)?, &specs)?
    };
    if args.iter().any(|a| a == "--json") {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text(5));
    }
    Ok(())
}
