#!/bin/sh
# Rebuilds every programs/c/*.wasm from its .c source (WASI commands, -O2).
# Needs Debian's packages: clang lld wasi-libc libclang-rt-14-dev-wasm32
# (the wasm32 builtins clang links, named for clang 14, Debian 12's clang):
#   apt-get install -y clang lld wasi-libc libclang-rt-14-dev-wasm32
# The .wasm files are committed: the tests need no C compiler.
set -eu
cd "$(dirname "$0")"
CC=${CC:-clang}
SYSROOT=${WASI_SYSROOT:-/usr}
for src in *.c; do
    out="${src%.c}.wasm"
    "$CC" --target=wasm32-wasi --sysroot="$SYSROOT" -O2 -Wall -Wextra \
        -o "$out" "$src"
    echo "built $out ($(wc -c < "$out") bytes)"
done
