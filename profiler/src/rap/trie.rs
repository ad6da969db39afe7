//! The RAP tree as a multibit trie (004 sections 2.2, 3.1, 3.2.2).
//!
//! A node covers an aligned power-of-two range of 128-bit keys: the keys sharing its
//! `k * depth`-bit prefix, where `b = 2^k` is the branching factor.  The tree height is
//! `h = 128 / k`, so the split threshold is `eps * n / h` (the paper's log_b(R) with
//! R = 2^128).  Operations, exactly as the paper:
//!
//! - **update**: an event goes to the smallest range holding it: walk from the root
//!   choosing the child by the next k key bits until a leaf; increment its counter.
//! - **split**: a leaf whose count would grow over the split threshold gets `b` children
//!   covering its range with zero counts; the node keeps its count.  A weighted add (the
//!   event buffer hands over `(key, count)` pairs) fills the leaf up to the threshold and
//!   passes the rest down, which is what `count` single updates with a check after each
//!   would do, so buffering does not change precision (3.2.1).  Point nodes (depth h)
//!   never split.
//! - **merge**, batched: when the event count reaches the next merge time the whole tree
//!   is walked bottom-up and every node whose children are all leaves and whose count
//!   plus its children's counts is below the threshold absorbs them (2.2.2); merges
//!   cascade upward within the pass.  The period between merges then grows by `q` (3.1).
//!
//! One deviation: the split threshold is floored at one event.  With h = 64 the paper's
//! `eps * n / h` is below one for the first h/eps events, so every new key would split
//! its way down all h levels at once (4h nodes a key); with the floor a leaf first takes
//! one event, so the tree grows by at most one level per event until n reaches h/eps.
//! The error bound becomes max(eps * n, h) events, the same as the paper's from then on.
//!
//! Invariants relied on by the error bound: every non-point node's count is at most
//! max(1, the current threshold) (splits happen before it would be exceeded; a merge only
//! makes a node whose total is below it); counts only ever move to an ancestor.  Hence a
//! range's estimate (the sum of the counts of the nodes inside it) never exceeds its true
//! count and misses at most the counts held by its at most h strict ancestors.
//!
//! Walks are the cost of an update (h = 64 dependent loads for b = 4).  Two direct-mapped
//! caches of walk hints change no result: one keyed by the full key holds the node the
//! key's last walk ended at (a repeated key resumes there), one keyed by the top 64 key
//! bits the node at depth 64/k on that path.  They are allocated on a tree's first add.
//!
//! Nodes live in two parallel arrays; a node's children are a contiguous block of b
//! slots, recycled through a free list, so an update allocates nothing.

/// A node as the range report sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeView {
    /// The key prefix, right-aligned.
    pub prefix: u128,
    /// Bits of prefix (k * depth).
    pub bits: u32,
    /// The node's own count.
    pub count: u64,
    /// Sum of the counts of the node and all its descendants.
    pub subtree: u64,
    /// The paper's hot weight: own count plus the weights of non-hot children.
    pub hot_weight: u64,
    /// Whether the range is hot.
    pub hot: bool,
}

/// One RAP tree over 128-bit keys.
#[derive(Debug, Clone)]
pub struct RapTree {
    counts: Vec<u64>,
    /// First child slot, 0 for a leaf (slot 0 is the root, never a child).
    children: Vec<u32>,
    free: Vec<u32>,
    k: u32,
    b: usize,
    height: u32,
    eps: f64,
    n: u64,
    q: u64,
    merge_first: u64,
    period: u64,
    next_merge: u64,
    live: usize,
    peak: usize,
    /// Event count at the last merge (0 before the first).
    last_merge: u64,
    /// Where walks for a given top half of the key may start: the node at depth 64/k on
    /// its path (or the leaf above it).  Splits never move a node, so a hint stays valid
    /// until a merge or reset bumps `version`.
    walk_cache: Vec<WalkHint>,
    leaf_cache: Vec<LeafHint>,
    version: u32,
    /// Per node, its count at the last [`RapTree::take_point_growth`] (0 when created).
    marks: Vec<u64>,
    /// The point nodes (with their keys) whose count differs from their mark: what
    /// [`RapTree::take_point_growth`] visits instead of the whole tree.  A point joins
    /// when an add first moves its count off its mark; a merge (which may free points)
    /// rebuilds the list from the tree.
    touched: Vec<(u32, u128)>,
}

/// log2 of the walk-hint cache's slots (one per top key half).
const WALK_BITS: u32 = 16;
const WALK_CACHE: usize = 1 << WALK_BITS;
/// log2 of the leaf-hint cache's slots (one per full key).
const LEAF_BITS: u32 = 16;
const LEAF_CACHE: usize = 1 << LEAF_BITS;

/// The leaf a full key reached last time: repeated keys (the buffer's evictions of hot
/// events) skip the whole walk.  Same validity rule as [`WalkHint`].
#[derive(Clone, Copy, Debug, Default)]
struct LeafHint {
    key: u128,
    node: u32,
    depth: u32,
    version: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct WalkHint {
    top: u64,
    node: u32,
    depth: u32,
    version: u32,
}

impl RapTree {
    /// A tree with branching factor `b` (a power of two dividing 2^128's bit count into
    /// whole levels: 2, 4, 16, 256), error `eps`, merge growth `q` and first merge time.
    pub fn new(b: u32, eps: f64, q: u64, merge_first: u64) -> Self {
        assert!(b.is_power_of_two() && (2..=256).contains(&b));
        let k = b.trailing_zeros();
        let mut t = RapTree {
            counts: Vec::new(),
            children: Vec::new(),
            free: Vec::new(),
            k,
            b: b as usize,
            height: 128 / k,
            eps,
            n: 0,
            q,
            merge_first,
            period: 0,
            next_merge: 0,
            live: 0,
            peak: 0,
            last_merge: 0,
            walk_cache: Vec::new(),
            leaf_cache: Vec::new(),
            version: 0,
            marks: Vec::new(),
            touched: Vec::new(),
        };
        t.reset();
        t
    }

    /// Back to a lone root (rap_init); keeps the allocations.
    pub fn reset(&mut self) {
        self.counts.clear();
        self.children.clear();
        self.marks.clear();
        self.touched.clear();
        self.free.clear();
        self.counts.push(0);
        self.children.push(0);
        self.marks.push(0);
        self.n = 0;
        self.period = self.merge_first;
        self.next_merge = self.merge_first;
        self.live = 1;
        self.peak = 1;
        self.last_merge = 0;
        self.version += 1;
    }

    /// An explicit worst-case node count for this structure, once a merge has run with a
    /// threshold of at least one event (`None` before).  After the merge at m, every node
    /// whose children are all leaves holds, with them, at least T_m = eps*m/h events
    /// (else it was merged), so there are at most h/eps of them; every internal node lies
    /// above one of them, at most h deep, so there are at most h*h/eps internal nodes.
    /// Each later split needs a node to hold floor(T_m) events, and counts are disjoint,
    /// so at most n/floor(T_m) splits follow.  Each internal node has b children:
    /// `1 + b * (h*h/eps + n/floor(T_m))`.  The paper states the bound as
    /// O(log_b(R)/eps) (after Hershberger et al.) without constants; this is the same
    /// argument carried out for this tree, with its h*h term from chains of single heavy
    /// children that the merge rule cannot remove.
    pub fn memory_bound(&self) -> Option<usize> {
        let tm = (self.eps * self.last_merge as f64 / self.height as f64).floor();
        if tm < 1.0 {
            return None;
        }
        let h = self.height as f64;
        Some((1.0 + self.b as f64 * (h * h / self.eps + self.n as f64 / tm)).ceil() as usize)
    }

    /// Events added so far.
    pub fn events(&self) -> u64 {
        self.n
    }

    /// Tree height h = log_b(2^128).
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Bits consumed per level.
    pub fn bits_per_level(&self) -> u32 {
        self.k
    }

    /// Nodes in the tree now.
    pub fn nodes(&self) -> usize {
        self.live
    }

    /// Most nodes the tree has held since the last reset (the paper's maximum memory).
    pub fn peak_nodes(&self) -> usize {
        self.peak
    }

    /// The split (and merge) threshold `eps * n / h`.
    pub fn threshold(&self) -> f64 {
        self.eps * self.n as f64 / self.height as f64
    }

    /// Walks from `node` at `depth` down `key`'s path to the leaf, remembering the node
    /// at the anchor depth 64/k on the way; returns the leaf and its depth.  `K` is k:
    /// k divides 64, so a digit never straddles the key's halves and the walk shifts one
    /// 64-bit half by a constant per level instead of the u128 key by a variable amount.
    #[inline(always)]
    fn descend<const K: u32>(
        &mut self,
        key: u128,
        mut node: usize,
        mut depth: u32,
        slot: usize,
    ) -> (usize, u32) {
        debug_assert_eq!(K, self.k);
        let (top, low) = ((key >> 64) as u64, key as u64);
        let anchor = 64 / K;
        // The digits still to consume, left-aligned in one half.
        if depth < anchor {
            let mut rest = top << (K * depth);
            loop {
                let ch = self.children[node];
                if ch == 0 {
                    return (node, depth);
                }
                node = ch as usize + (rest >> (64 - K)) as usize;
                rest <<= K;
                depth += 1;
                if depth == anchor {
                    break;
                }
            }
            self.remember(slot, top, node, depth);
        }
        let mut rest = low.checked_shl(K * (depth - anchor)).unwrap_or(0);
        loop {
            let ch = self.children[node];
            if ch == 0 {
                return (node, depth);
            }
            node = ch as usize + (rest >> (64 - K)) as usize;
            rest <<= K;
            depth += 1;
        }
    }

    fn split(&mut self, node: usize) {
        let first = match self.free.pop() {
            Some(f) => f as usize,
            None => {
                let f = self.counts.len();
                self.counts.resize(f + self.b, 0);
                self.children.resize(f + self.b, 0);
                self.marks.resize(f + self.b, 0);
                f
            }
        };
        self.counts[first..first + self.b].fill(0);
        self.children[first..first + self.b].fill(0);
        self.marks[first..first + self.b].fill(0);
        self.children[node] = first as u32;
        self.live += self.b;
        self.peak = self.peak.max(self.live);
    }

    /// Adds `count` occurrences of `key` (rap_add_points for one profile type).  The
    /// result is identical to `count` single adds: the batch is cut at merge times and,
    /// at a leaf, takes exactly the events single adds would have put there.
    pub fn add(&mut self, key: u128, mut count: u64) {
        while count > 0 {
            let chunk = count.min(self.next_merge - self.n);
            self.add_chunk(key, chunk);
            count -= chunk;
            if self.n >= self.next_merge {
                self.merge();
                self.period = self.period.saturating_mul(self.q).max(1);
                self.next_merge = self.n.saturating_add(self.period);
            }
        }
    }

    #[inline]
    fn limit_at(&self, n: u64) -> u64 {
        // `as` truncates, which is floor for the non-negative quotient (and avoids a
        // libm call where the target lacks a rounding instruction).
        ((self.eps * n as f64 / self.height as f64) as u64).max(1)
    }

    fn add_chunk(&mut self, key: u128, mut count: u64) {
        let top = (key >> 64) as u64;
        let slot = (top.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - WALK_BITS)) as usize;
        let low = key as u64 ^ top.rotate_left(17);
        let leaf_slot = (low.wrapping_mul(0xC2B2_AE3D_27D4_EB4F) >> (64 - LEAF_BITS)) as usize;
        let anchor = 64 / self.k;
        // The walk hint is only read when the leaf hint misses: each is a likely cache
        // miss of its own.
        if self.leaf_cache.is_empty() {
            self.alloc_caches();
        }
        let leaf = self.leaf_cache[leaf_slot];
        let (mut node, mut depth) = if leaf.version == self.version && leaf.key == key {
            (leaf.node as usize, leaf.depth)
        } else {
            let hit = self.walk_cache[slot];
            if hit.version == self.version && hit.top == top {
                (hit.node as usize, hit.depth)
            } else {
                (0usize, 0u32)
            }
        };
        loop {
            (node, depth) = match self.k {
                1 => self.descend::<1>(key, node, depth, slot),
                2 => self.descend::<2>(key, node, depth, slot),
                4 => self.descend::<4>(key, node, depth, slot),
                _ => self.descend::<8>(key, node, depth, slot),
            };
            if depth < anchor {
                self.remember(slot, top, node, depth);
            }
            self.leaf_cache[leaf_slot] = LeafHint {
                key,
                node: node as u32,
                depth,
                version: self.version,
            };
            if depth == self.height {
                if self.counts[node] == self.marks[node] {
                    self.touched.push((node as u32, key));
                }
                self.counts[node] += count;
                self.n += count;
                return;
            }
            // The i-th event lands here iff c0 + i <= limit(n + i); the limit grows
            // slower than i, so the events that land form a prefix: find its length.
            let c0 = self.counts[node];
            let fits = |x: u64| c0 + x <= self.limit_at(self.n + x);
            let (mut lo, mut hi) = (0u64, count);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if fits(mid) { lo = mid } else { hi = mid - 1 }
            }
            self.counts[node] += lo;
            self.n += lo;
            count -= lo;
            if count == 0 {
                return;
            }
            self.split(node);
        }
    }

    #[cold]
    fn alloc_caches(&mut self) {
        self.walk_cache = vec![WalkHint::default(); WALK_CACHE];
        self.leaf_cache = vec![LeafHint::default(); LEAF_CACHE];
    }

    #[inline]
    fn remember(&mut self, slot: usize, top: u64, node: usize, depth: u32) {
        self.walk_cache[slot] = WalkHint {
            top,
            node: node as u32,
            depth,
            version: self.version,
        };
    }

    /// One batched merge pass.
    pub fn merge(&mut self) {
        let thr = self.threshold();
        self.merge_below(0, thr);
        self.last_merge = self.n;
        // Merged-away points are gone (their slots may be reused): list the live ones.
        self.touched.clear();
        let mut touched = std::mem::take(&mut self.touched);
        self.collect_touched(0, 0, 0, &mut touched);
        self.touched = touched;
        // Merges free child blocks that later splits reuse: every walk hint is stale.
        self.version += 1;
    }

    /// Returns the subtree sum when `node` is a leaf after the pass, `None` otherwise.
    fn merge_below(&mut self, node: usize, thr: f64) -> Option<u64> {
        let first = self.children[node] as usize;
        if first == 0 {
            return Some(self.counts[node]);
        }
        let mut all_leaves = true;
        let mut sum = 0u64;
        for c in first..first + self.b {
            match self.merge_below(c, thr) {
                Some(s) => sum += s,
                None => all_leaves = false,
            }
        }
        if all_leaves && ((self.counts[node] + sum) as f64) < thr {
            self.counts[node] += sum;
            self.children[node] = 0;
            self.free.push(first as u32);
            self.live -= self.b;
            return Some(self.counts[node]);
        }
        None
    }

    /// The estimate for the aligned range of keys with the `bits`-bit prefix `prefix`:
    /// the sum of the counts of the nodes inside it.  For an unaligned prefix length the
    /// nodes wholly inside are summed.
    pub fn estimate(&self, prefix: u128, bits: u32) -> u64 {
        let (mut node, mut depth) = (0usize, 0u32);
        while self.k * depth < bits {
            let ch = self.children[node] as usize;
            if ch == 0 {
                return 0;
            }
            // Digits of the query prefix at this depth; at the last partial level every
            // child matching the remaining bits is inside.
            let level_bits = self.k * (depth + 1);
            if level_bits > bits {
                let spare = level_bits - bits;
                let base = ((prefix << spare) as usize) & (self.b - 1);
                return (0..1usize << spare)
                    .map(|j| self.subtree(ch + (base | j)))
                    .sum();
            }
            let digit = ((prefix >> (bits - level_bits)) as usize) & (self.b - 1);
            node = ch + digit;
            depth += 1;
        }
        self.subtree(node)
    }

    fn subtree(&self, node: usize) -> u64 {
        let first = self.children[node] as usize;
        let own = self.counts[node];
        if first == 0 {
            return own;
        }
        own + (first..first + self.b)
            .map(|c| self.subtree(c))
            .sum::<u64>()
    }

    /// Every node with its prefix, subtree sum and hotness: a range is hot when its count
    /// plus the weights of its non-hot subranges reach `hot * n` (004 section 5.1).
    pub fn nodes_with_hotness(&self, hot: f64) -> Vec<NodeView> {
        let mut out = Vec::with_capacity(self.live);
        let cut = hot * self.n as f64;
        self.visit(0, 0, 0, cut, &mut out);
        out
    }

    /// Returns (subtree, hot weight, hot).
    fn visit(
        &self,
        node: usize,
        prefix: u128,
        depth: u32,
        cut: f64,
        out: &mut Vec<NodeView>,
    ) -> (u64, u64, bool) {
        let own = self.counts[node];
        let (mut subtree, mut weight) = (own, own);
        let first = self.children[node] as usize;
        if first != 0 {
            for d in 0..self.b {
                let (s, w, h) = self.visit(
                    first + d,
                    (prefix << self.k) | d as u128,
                    depth + 1,
                    cut,
                    out,
                );
                subtree += s;
                if !h {
                    weight += w;
                }
            }
        }
        let hot = weight > 0 && weight as f64 >= cut;
        out.push(NodeView {
            prefix,
            bits: self.k * depth,
            count: own,
            subtree,
            hot_weight: weight,
            hot,
        });
        (subtree, weight, hot)
    }

    /// Point nodes (full-depth, one key each) with their counts.
    pub fn points(&self) -> Vec<(u128, u64)> {
        let mut out = Vec::new();
        self.collect_points(0, 0, 0, &mut out);
        out
    }

    /// Point nodes whose count grew by at least `min` since the previous call (or since
    /// they were created), with the growth; marks every point's count as seen.
    pub fn take_point_growth(&mut self, min: u64) -> Vec<(u128, u64)> {
        // Only touched points can have grown; every other point's count equals its mark.
        let mut out = Vec::new();
        for (node, key) in self.touched.drain(..) {
            let node = node as usize;
            let grown = self.counts[node] - self.marks[node];
            if grown >= min && grown > 0 {
                out.push((key, grown));
            }
            self.marks[node] = self.counts[node];
        }
        // Descending keys: the order of the depth-first walk this replaces.
        out.sort_unstable_by_key(|x| std::cmp::Reverse(x.0));
        out
    }

    fn collect_touched(&self, node: usize, prefix: u128, depth: u32, out: &mut Vec<(u32, u128)>) {
        if depth == self.height {
            if self.counts[node] != self.marks[node] {
                out.push((node as u32, prefix));
            }
            return;
        }
        let first = self.children[node] as usize;
        if first != 0 {
            for d in 0..self.b {
                self.collect_touched(first + d, (prefix << self.k) | d as u128, depth + 1, out);
            }
        }
    }

    fn collect_points(&self, node: usize, prefix: u128, depth: u32, out: &mut Vec<(u128, u64)>) {
        if depth == self.height {
            if self.counts[node] > 0 {
                out.push((prefix, self.counts[node]));
            }
            return;
        }
        let first = self.children[node] as usize;
        if first != 0 {
            for d in 0..self.b {
                self.collect_points(first + d, (prefix << self.k) | d as u128, depth + 1, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
}
