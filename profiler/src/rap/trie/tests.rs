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
