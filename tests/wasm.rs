//! The project's C programs (`programs/c/*.c`, built to the `.wasm` beside
//! each) under `toyvm run`: each prints what its header says, interpreted
//! and under the JIT driven by every model, with the same exit status. The
//! front-end's own tests check the same modules against wasmi.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn every_c_program_runs_as_its_header_says_in_every_mode() {
    let dir = root().join("programs/c");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    sources.sort();
    assert!(sources.len() >= 8, "the eight C programs: {sources:?}");
    let configs: &[&[&str]] = &[
        &[],
        &["--profile", "perfect", "--no-jit"],
        &["--profile", "perfect"],
        &["--profile", "multihash"],
        &["--profile", "multihash:interval=1000"],
        &["--profile", "stratified"],
        &["--profile", "tagged"],
        &["--profile", "rap"],
        &["--profile", "conte"],
    ];
    for src in &sources {
        let header =
            toyvm_lab::suite::parse_header(&std::fs::read_to_string(src).unwrap()).unwrap();
        let module = src.with_extension("wasm");
        let args: Vec<String> = header.args.iter().map(|a| a.to_string()).collect();
        for config in configs {
            let o = Command::new(env!("CARGO_BIN_EXE_toyvm"))
                .current_dir(root())
                .arg("run")
                .arg(&module)
                .args(&args)
                .args(*config)
                .output()
                .unwrap();
            assert!(
                o.status.success() && header.expect.matches(&o.stdout),
                "{} {config:?}: status {:?}\nstdout:\n{}\nstderr:\n{}",
                module.display(),
                o.status,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}

/// A module's trap is a toyvm trap that names the WebAssembly trap and
/// where it happened; `dis` prints the translation.
#[test]
fn a_modules_trap_names_the_webassembly_trap_and_dis_prints_the_translation() {
    let dir = std::env::temp_dir().join(format!("toyvm-wasm-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // (module (func (export "_start") unreachable)), by hand.
    let module: &[u8] = &[
        0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, // magic, version
        1, 4, 1, 0x60, 0, 0, // type: () -> ()
        3, 2, 1, 0, // function 0 has type 0
        7, 10, 1, 6, b'_', b's', b't', b'a', b'r', b't', 0, 0, // export "_start"
        10, 5, 1, 3, 0, 0x00, 0x0b, // code: unreachable, end
    ];
    let path = dir.join("trap.wasm");
    std::fs::write(&path, module).unwrap();
    for config in [&[][..], &["--profile", "multihash"][..]] {
        let o = Command::new(env!("CARGO_BIN_EXE_toyvm"))
            .arg("run")
            .arg(&path)
            .args(config)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{err}");
        assert!(err.contains("unreachable"), "{err}");
        assert!(err.contains("WebAssembly code offset"), "{err}");
    }
    let o = Command::new(env!("CARGO_BIN_EXE_toyvm"))
        .arg("dis")
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("trap 0"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
