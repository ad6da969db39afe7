//! Unit tests of the RAP tree.

use super::*;

#[test]
fn a_hot_key_is_refined_to_a_point() {
    let mut t = RapTree::new(4, 0.01, 2, 64);
    for _ in 0..100_000 {
        t.add(42, 1);
    }
    let pts = t.points();
    assert_eq!(pts.len(), 1);
    assert_eq!(pts[0].0, 42);
    assert!(100_000 - pts[0].1 <= (0.01 * 100_000.0) as u64);
    assert_eq!(t.estimate(0, 0), 100_000, "the root range holds everything");
}

#[test]
fn weighted_adds_equal_single_adds() {
    let keys = [5u128, 1 << 100, 77, 5, 1 << 100, 3 << 120];
    let (mut a, mut b) = (
        RapTree::new(4, 0.05, 2, 1 << 40),
        RapTree::new(4, 0.05, 2, 1 << 40),
    );
    for (i, &k) in keys.iter().cycle().take(600).enumerate() {
        let c = 1 + (i as u64 % 7);
        a.add(k, c);
        for _ in 0..c {
            b.add(k, 1);
        }
    }
    assert_eq!(a.points(), b.points());
    assert_eq!(a.nodes(), b.nodes());
}

#[test]
fn merges_free_cold_subtrees() {
    let mut t = RapTree::new(4, 0.1, 2, 1 << 60);
    for i in 0..2000u128 {
        t.add(i << 64, 1);
    }
    let before = t.nodes();
    for _ in 0..200_000 {
        t.add(7, 1);
    }
    t.merge();
    assert!(t.nodes() < before, "{} -> {}", before, t.nodes());
    assert_eq!(t.estimate(0, 0), 202_000);
}

#[test]
fn partial_level_estimates_sum_the_matching_children() {
    let mut t = RapTree::new(16, 0.01, 2, 1 << 60);
    for _ in 0..10_000 {
        t.add(1 << 126, 1); // top bits 01
        t.add(3 << 126, 1); // top bits 11
    }
    // The very first event stays at the root (threshold floored at one event).
    assert_eq!(t.estimate(0b01, 2), 9_999);
    assert_eq!(t.estimate(0b1, 1), 10_000);
    assert_eq!(t.estimate(0b11, 2), 10_000);
}

#[test]
fn hint_tables_grow_with_the_tree_and_change_no_count() {
    // 30,000 keys (no merge before the end): the tables grow from their
    // first size to their largest on the way, each growth emptying them.
    let keys: Vec<(u128, u64)> = (0..200_000u64)
        .map(|i| {
            let k = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 30_000) as u128;
            (
                k.wrapping_mul(0x0123_4567_89AB_CDEF_0FED_CBA9_8765_4321),
                1 + i % 3,
            )
        })
        .collect();
    let mut grown = RapTree::new(4, 0.001, 2, 1 << 40);
    // The reference starts at full size, so its hints are never emptied.
    let mut full = RapTree::new(4, 0.001, 2, 1 << 40);
    full.n = u64::MAX / 8;
    full.alloc_hints();
    full.n = 0;
    assert_eq!(full.hint_bits, KEY_BITS);
    for chunk in keys.chunks(1000) {
        grown.add_batch(chunk);
        full.add_batch(chunk);
    }
    assert_eq!(grown.hint_bits, KEY_BITS, "the tables grew to full size");
    assert_eq!(grown.points(), full.points());
    assert_eq!(grown.nodes(), full.nodes());
    assert_eq!(grown.estimate(0, 0), full.estimate(0, 0));
}

#[test]
fn a_small_tree_keeps_small_hint_tables() {
    let mut t = RapTree::new(4, 0.01, 2, 64);
    t.add_batch(&[(42, 100), (7, 10), (1 << 100, 3)]);
    assert_eq!(t.hint_bits, MIN_KEY_BITS);
    assert_eq!(t.key_hints.len(), 1 << MIN_KEY_BITS);
}
