#!/usr/bin/env bash
# A runtime author's first hour, checked: a crate outside this workspace
# depends on `toyvm` by path and runs, as written, the example on the
# crate's front page (runtime/src/lib.rs) and runtime/examples/embed.rs.
# `.ci/run` runs it after the tests; it shares the workspace's target
# folder and build profile, so only the small crate itself is compiled.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/src" "$dir/examples"

cat > "$dir/Cargo.toml" <<EOF
[package]
name = "toyvm-outside"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
toyvm = { path = "$root/runtime" }

[workspace]

# The workspace's dev profile, so its compiled dependencies are reused.
[profile.dev]
opt-level = 1
debug = "line-tables-only"

[profile.dev.package."*"]
opt-level = 2
debug = false
EOF
cp "$root/Cargo.lock" "$dir/Cargo.lock"
cp "$root/runtime/examples/embed.rs" "$dir/examples/embed.rs"

# The front page's first code block, its hidden lines shown, as a main.
{
    echo 'fn main() -> Result<(), toyvm::Error> {'
    awk '/^\/\/! ```/ { n++; next } n == 1 { sub(/^\/\/! ?/, ""); sub(/^# /, ""); print }' \
        "$root/runtime/src/lib.rs"
    echo '}'
} > "$dir/src/main.rs"

export CARGO_TARGET_DIR="$root/target"
cargo run --quiet --manifest-path "$dir/Cargo.toml"
echo "outside: the front page example ran"
cargo run --quiet --manifest-path "$dir/Cargo.toml" --example embed
echo "outside: examples/embed.rs ran"
