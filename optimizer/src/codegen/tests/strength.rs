//! Strength reduction (`codegen::strength`): which products are carried
//! around their loops, and compiled code that does so against the
//! interpreter, including wrapping products and side exits mid-loop.

use super::*;

/// Plans `src`'s hot regions from a run on `profile_args`, compiles them,
/// and runs every `args` with them against the interpreter; the products
/// the compiled regions reduced, summed.
fn reduced_and_identical(src: &str, profile_args: &[i64], runs: &[&[i64]]) -> usize {
    let p = assemble(src).unwrap();
    let regions = profile_and_plan(&p, profile_args, &[]);
    assert!(!regions.is_empty(), "no region planned");
    let mut cache = CodeCache::new().unwrap();
    cache.compile_natives(&p).unwrap();
    let mut compiled = HashMap::new();
    let mut reduced = 0;
    for r in &regions {
        let c = cache.compile(r).unwrap_or_else(|e| panic!("{e}\n{r}"));
        reduced += c.reduced_products();
        compiled.entry((r.func, r.head)).or_insert(c);
    }
    for args in runs {
        let oracle = run_oracle(&p, args, &[]);
        let (mixed, stats) = run_mixed(&p, args, &[], &compiled, 100_000_000);
        assert_eq!(mixed, oracle, "args {args:?}");
        if args == &profile_args {
            assert!(stats.entries > 0, "compiled code never ran");
        }
    }
    reduced
}

#[test]
fn a_product_of_the_loop_counter_and_an_outer_counter_is_carried() {
    // `loop`'s nest: `i * j` over the inner counter `j`, with `i` invariant
    // in the inner loop and stepping in the outer one.
    let runs: &[&[i64]] = &[&[300], &[1], &[0], &[2], &[17]];
    assert!(reduced_and_identical(crate::testing::LOOP_NEST, &[300], runs) >= 1);
}

#[test]
fn steps_other_than_one_constants_and_invariants_reduce_and_wrap() {
    // `k` steps by -3 from a value near the top of the range, so `k * c`
    // and `k * 1000003` wrap; `c` is set before the loop and `c * i`
    // multiplies it by the counter `i`. Every product feeds the sum, which
    // goes through memory, so a wrong one changes the result.
    let src = "
    .memory 8
    .func main(n, start)
        .reg s, k, c, t, u, w, i, a
        li s, 0
        mov k, start
        muli c, n, 5
        addi c, c, 1
        li i, 0
    top:
        mul t, k, c
        muli u, k, 1000003
        mul w, c, i
        xor s, s, t
        add s, s, u
        sub s, s, w
        andi a, i, 7
        st a, 0, s
        ld s, a, 0
        subi k, k, 3
        addi i, i, 1
        blt i, n, top
        ret s
    .end";
    let runs: &[&[i64]] = &[
        &[300, 9_223_372_036_854_775_000],
        &[301, -9_223_372_036_854_775_000],
        &[1, 0],
        &[0, 5],
        &[50, 123_456_789],
    ];
    assert!(reduced_and_identical(src, &[300, 9_223_372_036_854_775_000], runs) >= 3);
}

#[test]
fn a_product_live_at_a_side_exit_is_written_back_exactly() {
    // The loop leaves from its middle when the product passes a bound: the
    // register the exit writes back is the carried product itself.
    let src = "
    .func main(n, x)
        .reg j, t, s
        li j, 0
        li s, 0
    top:
        mul t, j, x
        bgt t, n, out
        add s, s, t
        addi j, j, 1
        jmp top
    out:
        add s, s, t
        add s, s, j
        ret s
    .end";
    let runs: &[&[i64]] = &[
        &[100_000, 7],
        &[5, 1],
        &[0, 3],
        &[1_000_000, 13],
        &[50, 0x4000_0000_0000_0000],
    ];
    assert!(reduced_and_identical(src, &[100_000, 7], runs) >= 1);
}

#[test]
fn products_whose_factors_both_change_or_square_are_left_alone() {
    // `j * j` and `j * t` with `t` written in the loop: no edge passes the
    // product's next value as a sum, so nothing is reduced.
    let src = "
    .func main(n)
        .reg s, j, t, u
        li s, 0
        li j, 0
        li t, 1
    top:
        mul u, j, j
        add s, s, u
        mul t, j, t
        addi t, t, 1
        add s, s, t
        loop j, n, top
        ret s
    .end";
    let runs: &[&[i64]] = &[&[1000], &[3]];
    assert_eq!(reduced_and_identical(src, &[1000], runs), 0);
}

#[test]
fn a_product_computed_on_some_trips_only_is_left_alone() {
    // `i * x` only when `i` is a multiple of 8: carrying it as a sum would
    // add an addition to every trip to save a multiplication on one in 8.
    let src = "
    .func main(n, x)
        .reg s, i, t, u
        li s, 0
        li i, 0
    top:
        andi u, i, 7
        jnz u, skip
        mul t, i, x
        add s, s, t
    skip:
        addi i, i, 1
        blt i, n, top
        ret s
    .end";
    let runs: &[&[i64]] = &[&[1000, 3], &[9, -5]];
    assert_eq!(reduced_and_identical(src, &[1000, 3], runs), 0);
}
