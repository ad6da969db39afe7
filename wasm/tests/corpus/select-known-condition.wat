;; `select` whose condition is a constant 0 picks its second operand; when
;; that operand was computed into its stack slot's register, the translator
;; left it there and read the result from the first slot's register: unwritten
;; (`f`, a verifier error: the campaign's module wasm-fuzz-seed3-module18582,
;; `wasm_fuzz --modules 20000 --seed 3`, minimized) or holding an earlier,
;; dropped value (`stale`, a wrong result). Fixed in control.rs `select`.
(module
  (memory 1)
  (data (i32.const 0) "\07\09")
  (func (export "f") (param i64) (result i64)
    i64.const 5
    i32.const 0
    i64.load8_s
    i32.const 0
    select
    i64.ctz)
  (func (export "stale") (param i32) (result i64)
    (drop (i64.load8_s (i32.const 0)))
    i64.const 5
    i32.const 1
    i64.load8_s
    i32.const 0
    select)
  (func (export "first") (param i32) (result i64)
    (drop (i64.load8_s (i32.const 1)))
    i32.const 0
    i64.load8_s
    i64.const 5
    i32.const 7
    select))
