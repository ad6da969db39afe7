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
    assert_eq!(2 * t.key_hints.len(), 1 << MIN_KEY_BITS);
}

/// The arena's structure: every slot not marked dead is reachable from the root (what
/// the walk hints rely on), a child lies in its slot's subrange of its parent, `live`
/// counts the nodes, and the counts sum to the events.
fn check_structure(t: &RapTree) {
    fn walk(t: &RapTree, node: usize, seen: &mut Vec<bool>, sum: &mut u64) {
        assert!(!seen[node], "slot {node} reached twice");
        seen[node] = true;
        let n = t.nodes[node];
        *sum += n.count;
        if n.first == 0 {
            return;
        }
        assert!(u32::from(n.depth) < t.height);
        for d in 0..t.b {
            let c = n.first as usize + d;
            let cn = t.nodes[c];
            if cn.depth == DEAD {
                continue;
            }
            assert!(cn.depth > n.depth, "child not deeper");
            let below = u32::from(cn.depth - n.depth);
            assert_eq!(
                t.prefix_of(c) >> (t.k * below),
                t.prefix_of(node),
                "child outside its parent"
            );
            let digit = (t.prefix_of(c) >> (t.k * (below - 1))) as usize & (t.b - 1);
            assert_eq!(digit, d, "child in the wrong slot");
            walk(t, c, seen, sum);
        }
    }
    let mut seen = vec![false; t.nodes.len()];
    let mut sum = 0;
    walk(t, 0, &mut seen, &mut sum);
    assert_eq!(sum, t.n, "counts sum to the events");
    let reachable = seen.iter().filter(|&&s| s).count();
    assert_eq!(reachable, t.live, "live nodes");
    for (i, n) in t.nodes.iter().enumerate() {
        assert!(
            seen[i] || n.depth == DEAD,
            "slot {i} neither reachable nor dead"
        );
    }
}

#[test]
fn an_interior_merge_leaves_a_hot_key_under_a_short_chain() {
    // One key: before the merge a chain of 64 levels with b nodes on each.  The chain's
    // nodes hold an event each; a merge folds them upward (Fig 1: [0,63] under [0,255]).
    let mut t = RapTree::new(4, 0.01, 2, 1 << 40);
    for _ in 0..100_000 {
        t.add(42, 1);
    }
    assert_eq!(t.nodes(), 1 + 4 * 64);
    t.merge();
    check_structure(&t);
    assert!(t.nodes() <= 8, "{} nodes after the merge", t.nodes());
    assert_eq!(t.points().len(), 1);
    assert_eq!(t.estimate(0, 0), 100_000);
    assert_eq!(t.estimate(42, 128), t.points()[0].1);
}

#[test]
fn children_need_not_cover_the_range_after_an_interior_merge() {
    // 8-bit keys, b = 2 (Fig 1's tree): the stream visits 12 and the whole range.
    let mut t = RapTree::with_key_bits(2, 0.5, 2, 1 << 40, 8);
    let key = |v: u128| v << 120;
    for i in 0..4000u128 {
        t.add(key(if i % 2 == 0 { 12 } else { (i * 37) % 256 }), 1);
    }
    t.merge();
    check_structure(&t);
    let views = t.nodes_with_hotness(0.1);
    let has = |prefix: u128, bits: u32| views.iter().any(|v| v.prefix == prefix && v.bits == bits);
    // Some node's immediate parent range is gone: its parent holds it two or more levels up.
    let orphan = views
        .iter()
        .find(|v| v.bits > 1 && !has(v.prefix >> 1, v.bits - 1));
    assert!(orphan.is_some(), "every node's parent range is a node");
    // The hot key stays a point, and every estimate stays within eps n of the truth.
    assert!(t.points().iter().any(|&(k, _)| k == 12));
    assert_eq!(t.estimate(0, 0), 4000);
    // Now the uncovered parts take events until their node splits again, re-parenting
    // the deeper children under the new subranges (3.3.1).
    for i in 0..20_000u128 {
        t.add(key((i * 101) % 256), 1);
        if i % 1000 == 0 {
            check_structure(&t);
        }
    }
    check_structure(&t);
    assert_eq!(t.estimate(0, 0), 24_000);
    let slack = (0.5 * 24_000.0) as u64;
    for v in 0..256u128 {
        let truth = 2000 * u64::from(v == 12)
            + (0..2000u128)
                .filter(|i| (i * 2 + 1) * 37 % 256 == v)
                .count() as u64
            + (0..20_000u128).filter(|i| i * 101 % 256 == v).count() as u64;
        let est = t.estimate(v, 8);
        assert!(
            est <= truth && truth - est <= slack,
            "{v}: {est} of {truth}"
        );
    }
}

#[test]
fn after_each_merge_the_tree_is_within_the_papers_order() {
    // 40 keys spread over 32-bit space, each holding twice the threshold eps n / h: a
    // merge that takes only nodes whose children are all leaves keeps b nodes on each of
    // the h levels of each key's path, O(h h / eps); the interior merge folds the paths.
    let (b, eps, h) = (4u32, 0.2, 16u32);
    let bound = 1.0 + 4.0 * f64::from(b + 1) * f64::from(h) / eps;
    let mut t = RapTree::with_key_bits(b, eps, 2, 1024, 32);
    let mut merges = 0;
    let mut last = 0;
    for i in 0..400_000u64 {
        let k = (i % 40).wrapping_mul(0x9E37_79B9) as u32;
        t.add(u128::from(k) << 96, 1);
        if t.last_merge != last {
            last = t.last_merge;
            merges += 1;
            assert!(
                t.nodes() as f64 <= bound,
                "{} nodes after the merge at {last} > {bound}",
                t.nodes()
            );
            assert!(t.nodes() <= t.merged_bound());
        }
        if let Some(m) = t.memory_bound() {
            assert!(t.nodes() <= m, "{} nodes > {m}", t.nodes());
        }
    }
    assert!(merges >= 5);
    check_structure(&t);
}

#[test]
fn merges_and_splits_keep_the_structure_and_every_points_growth() {
    // A mixed stream with small merge periods: many interior merges, re-parenting
    // splits and moved points; the touched list must follow them.
    let mut t = RapTree::new(4, 0.05, 2, 256);
    let mut truth: std::collections::HashMap<u128, u64> = std::collections::HashMap::new();
    let mut x = 7u64;
    let mut reported: std::collections::HashMap<u128, u64> = std::collections::HashMap::new();
    for i in 0..60_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let key = if i % 3 == 0 {
            u128::from(x >> 40) << 64 | u128::from(x & 0xff)
        } else {
            u128::from(i % 7) << 100 | u128::from((x >> 60) % 3)
        };
        t.add(key, 1 + i % 2);
        *truth.entry(key).or_default() += 1 + i % 2;
        if i % 997 == 0 {
            check_structure(&t);
            for (k, g) in t.take_point_growth() {
                *reported.entry(k).or_default() += g;
            }
        }
    }
    check_structure(&t);
    for (k, g) in t.take_point_growth() {
        *reported.entry(k).or_default() += g;
    }
    for (k, g) in &reported {
        assert!(*g <= truth[k], "{k:x}: growth {g} > true {}", truth[k]);
    }
    // The hot keys' points report (nearly) all their events.
    for d in 0..7u128 {
        for v in 0..3u128 {
            let k = d << 100 | v;
            let slack = (0.05 * t.events() as f64) as u64;
            assert!(reported.get(&k).copied().unwrap_or(0) + slack >= truth[&k]);
        }
    }
}

#[test]
fn a_plain_walk_builds_the_same_tree_without_hint_tables() {
    let (mut hinted, mut plain) = (
        RapTree::new(4, 0.01, 2, 1024),
        RapTree::new(4, 0.01, 2, 1024),
    );
    plain.set_plain_walk(true);
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut batch = Vec::new();
    for i in 0..60_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // A few hot keys among many cold ones, added one by one and in batches.
        let key = if x.is_multiple_of(3) {
            u128::from(x % 8)
        } else {
            u128::from(x) << 40
        };
        if i.is_multiple_of(2) {
            hinted.add(key, 1 + i % 3);
            plain.add(key, 1 + i % 3);
        } else {
            batch.push((key, 1));
            if batch.len() == 64 {
                hinted.add_batch(&batch);
                plain.add_batch(&batch);
                batch.clear();
            }
        }
    }
    assert!(plain.key_hints.is_empty() && plain.top_hints.is_empty());
    assert!(!hinted.key_hints.is_empty());
    assert_eq!(plain.events(), hinted.events());
    assert_eq!(plain.nodes(), hinted.nodes());
    assert_eq!(plain.peak_nodes(), hinted.peak_nodes());
    assert_eq!(plain.points(), hinted.points());
    assert_eq!(
        plain.nodes_with_hotness(0.1),
        hinted.nodes_with_hotness(0.1)
    );
}
