//! The RAP tree as a multibit trie (004 sections 2.2, 3.1, 3.2.2, 3.3).
//!
//! A node covers an aligned power-of-two range of 128-bit keys: the keys sharing its
//! `k * depth`-bit prefix, where `b = 2^k` is the branching factor.  The tree height is
//! `h = 128 / k`, so the split threshold is `eps * n / h` (the paper's log_b(R) with
//! R = 2^128).  Operations, exactly as the paper:
//!
//! - **update**: an event goes to the smallest range holding it: walk from the root
//!   choosing the child by the next k key bits while that child holds the key; increment
//!   the counter of the node where the walk ends.
//! - **split**: a node whose count would grow over the split threshold gets `b` children
//!   covering its range with zero counts; the node keeps its count.  A weighted add (the
//!   event buffer hands over `(key, count)` pairs) fills the leaf up to the threshold and
//!   passes the rest down, which is what `count` single updates with a check after each
//!   would do, so buffering does not change precision (3.2.1).  Point nodes (depth h)
//!   never split.
//! - **merge**, batched (2.2.2, 3.1, 3.3 and Fig 1): when the event count reaches the
//!   next merge time the whole tree is walked bottom-up and a node is merged into its
//!   parent when the two together hold fewer events than the threshold (Fig 1's "cumulative
//!   weight"): the parent takes its count, and the node's child, if it has one, takes its
//!   place under the parent.  Interior nodes merge too, so after a merge a node's children
//!   need not be its immediate subranges nor cover its range (Fig 1: a key matches [0,255],
//!   [0,63] and [12,13]); an event in a part no child covers is counted at the node.
//!   Merges cascade upward within the pass.  The period between merges then grows by `q`
//!   (3.1).
//! - **split** of a node that already has children (3.3.1, "its children do not cover the
//!   entire range of the parent ... identifying the new parent of the existing children"):
//!   the node gets all b immediate subranges, and a deeper child becomes the child of the
//!   new subrange holding it.
//!
//! A choice the paper leaves open: a node with two or more children is not merged into
//! its parent (they would share one of the parent's b subranges).  This keeps every node's
//! children in distinct subranges, at most b of them, which the memory bound below needs.
//! With it, just after a merge at m events (threshold T = eps m / h), every non-root node
//! with at most one child holds, with its parent, at least T events: at most 2h/eps nodes
//! hold T/2 or more (the counts sum to m), every other such node is one of their at most b
//! children each, and nodes with two or more children are fewer than the leaves, so the
//! tree has at most `1 + 4(b+1) h / eps` nodes ([`RapTree::merged_bound`]): the paper's
//! O(log_b(R)/eps) (after Hershberger et al.), with our constant.
//!
//! When a split happens differs by one event from the paper's wording ("any node that
//! grows larger than this threshold should sprout children", 2.2.1): the paper counts the
//! event at the node and then splits it; here the event that would take a leaf over the
//! threshold goes to the new child, so a node never holds more than the threshold.  The
//! node's count differs by at most one event, the error bound is the paper's, and the
//! invariant below holds without a "+1".
//!
//! A further deviation: the split threshold is floored at one event.  With h = 64 the paper's
//! `eps * n / h` is below one for the first h/eps events, so every new key would split
//! its way down all h levels at once (4h nodes a key); with the floor a leaf first takes
//! one event, so the tree grows by at most one level per event until n reaches h/eps.
//! The error bound becomes max(eps * n, h) events, the same as the paper's from then on.
//!
//! Invariants relied on by the error bound: every non-point node's count is at most
//! max(1, the current threshold) (splits happen before it would be exceeded; a merge only
//! makes a node whose total is below it); counts only ever move to an ancestor; the nodes
//! holding a key are a chain from the root, at most one per depth.  Hence a range's
//! estimate (the sum of the counts of the nodes inside it) never exceeds its true count and
//! misses at most the counts held by its at most h strict ancestors.
//!
//! Implementation strategies that change no result.  Walks are the cost of an update
//! (h = 64 dependent loads for b = 4), so an update starts from a hint: two
//! two-way tables of node slots (u32), one keyed by a hash of the full key (the leaf the
//! key's last walk reached), one by a hash of the top 64 key bits (the deepest node at
//! most 64/k deep on that path).  Every node stores its depth and prefix, so a hint is
//! used only if its node is live and on the key's path (a colliding or stale hint costs
//! a walk from the root); every arena slot not marked dead holds a node of the tree, and
//! the walk from the root passes through every node holding the key, so the walk from a
//! valid hint ends where one from the root does.  The
//! tables are allocated on a tree's first add.  [`RapTree::add_batch`] takes the adds
//! the buffer lets through in order, reading the hints and hinted nodes of adds a few
//! places ahead so their cache misses overlap, and updates a hinted leaf that takes the
//! whole add without a split directly.  The split limit `max(1, floor(eps * n / h))`
//! is cached over the run of n sharing its value.
//!
//! Nodes live in one arena (a `Vec` indexed by u32 slots); a node's children are a
//! contiguous block of b slots, child d in slot d (d the child's first digit below the
//! node), an empty slot marked dead; blocks are recycled through a free list, so an update
//! allocates nothing.  A merge moves a node's only child into the node's slot, and a split
//! moves a deeper child into a new block: nodes change slots only there, and the list of
//! touched points is revalidated by key after each merge and read.

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
    /// The node arena (slot 0 is the root, never a child).
    nodes: Vec<Node>,
    free: Vec<u32>,
    k: u32,
    b: usize,
    height: u32,
    /// eps/h is small enough that the split limit grows by at most one per event, so
    /// the events of a weighted add that fit at a leaf form a prefix.
    prefix_fill: bool,
    eps: f64,
    n: u64,
    q: u64,
    merge_first: u64,
    period: u64,
    next_merge: u64,
    live: usize,
    peak: usize,
    /// Over the merges since the last reset: how many, the largest tree size just
    /// before one, and the sum of those sizes (the paper's maximum and average memory,
    /// 004 section 5.2).
    before_merges: (u64, usize, u64),
    /// The event count at the merge before which the tree was largest.
    largest_at: u64,
    /// Event count at the last merge (0 before the first).
    last_merge: u64,
    /// Walk hints: node slots keyed by a hash of the full key (the leaf its last walk
    /// reached) and of the top 64 key bits (the deepest node at most 64/k deep on that
    /// path).  A hint is used only when the node is live and its stored prefix is a prefix
    /// of the key, i.e. it lies on the key's path, so a stale or colliding hint merely
    /// costs a walk from the root.
    /// Both tables start small and grow (emptied, a hint being only a hint) as the tree
    /// does, up to [`KEY_BITS`] and [`TOP_BITS`]: their full size (1.25 MiB a tree) costs
    /// a short run more than its whole stream does.
    /// Each table is two-way: a pair of slots per hash, the most recent first, read and
    /// bounds-checked together.
    key_hints: Vec<[u32; 2]>,
    top_hints: Vec<[u32; 2]>,
    /// log2 of `key_hints`' slots (0 before the first add), and the
    /// [`RapTree::hint_demand`] above which the tables grow.
    hint_bits: u32,
    hint_limit: usize,
    /// Every add walks from the root and the hint tables are never made or read (the
    /// paper's plain tree walk, [`RapTree::set_plain_walk`]).
    plain: bool,
    /// The point nodes (with their keys and their counts at the last
    /// [`RapTree::take_point_growth`], their marks) whose count grew since then: what
    /// [`RapTree::take_point_growth`] visits instead of the whole tree.  A point joins
    /// (and sets its `touched` flag) when an add first moves its count off its mark, so
    /// every other point's count is its mark; a merge drops the points it frees.
    touched: Vec<(u32, u128, u64)>,
    /// Per depth d (up to the height), the mask of a key's top `k * d` bits.
    masks: Box<[u128; 256]>,
    /// The split limit `max(1, floor(eps * n / h))` for every n in `lim_lo..=lim_hi`.
    lim: u64,
    lim_lo: u64,
    lim_hi: u64,
}

/// One node: its count, first child slot (0 for a leaf), depth and key prefix (the
/// latter two validate walk hints), and for a point whether it is in the touched list
/// (32 bytes: a point's update reads and writes one cache line).  The prefix is kept
/// left-aligned, as the top `k * depth` bits of the node's keys with the rest zero, so
/// that whether a key lies in the node's range is one masked compare
/// ([`RapTree::on_path`]) rather than a variable 128-bit shift; [`RapTree::prefix_of`]
/// gives it right-aligned, as [`NodeView`] reports it.
#[derive(Clone, Copy, Debug, Default)]
struct Node {
    lead: u128,
    count: u64,
    first: u32,
    depth: u16,
    touched: bool,
}

/// The depth of a freed node: no hint validates against it.
const DEAD: u16 = u16::MAX;
/// No node (an empty hint slot, or no anchor node seen).
const NONE: usize = u32::MAX as usize;

/// log2 of the slots of the hint table keyed by the top key half.
const TOP_BITS: u32 = 16;
/// log2 of the slots of the hint table keyed by the full key (1 MiB a tree: 2^17 slots
/// missed about 6% of the adds of a 100,000-key Zipf(0.8) stream, each then a walk
/// from the top half's hint at several cache misses).
const KEY_BITS: u32 = 18;
/// log2 of the hint tables' first size (4 KiB for the full keys' table): they grow
/// whenever the events added or the live nodes outnumber the full keys' table's slots.
const MIN_KEY_BITS: u32 = 10;

impl RapTree {
    /// A tree with branching factor `b` (a power of two dividing 2^128's bit count into
    /// whole levels: 2, 4, 16, 256), error `eps`, merge growth `q` and first merge time.
    pub fn new(b: u32, eps: f64, q: u64, merge_first: u64) -> Self {
        Self::with_key_bits(b, eps, q, merge_first, super::KEY_BITS)
    }

    /// [`RapTree::new`] over the range R = 2^`bits` of the keys' top `bits` bits: the
    /// height is `bits / log2 b`, and keys differing only below their top `bits` bits
    /// share one point.  The paper's code profiles range over 32-bit PCs (R = 2^32, 16
    /// levels for b = 4, 004 Fig 2); a tuple key is 128 bits (64 levels), which raises
    /// both the split threshold's divisor and the nodes a hot key needs.  `bits` must be
    /// a multiple of log2 b between log2 b and 128.
    pub fn with_key_bits(b: u32, eps: f64, q: u64, merge_first: u64, bits: u32) -> Self {
        assert!(b.is_power_of_two() && (2..=256).contains(&b));
        let k = b.trailing_zeros();
        assert!(
            (k..=128).contains(&bits) && bits.is_multiple_of(k),
            "key bits {bits}"
        );
        let mut t = RapTree {
            nodes: Vec::new(),
            free: Vec::new(),
            k,
            b: b as usize,
            height: bits / k,
            prefix_fill: eps / (bits / k) as f64 <= 0.5,
            eps,
            n: 0,
            q,
            merge_first,
            period: 0,
            next_merge: 0,
            live: 0,
            peak: 0,
            before_merges: (0, 0, 0),
            largest_at: 0,
            last_merge: 0,
            key_hints: Vec::new(),
            top_hints: Vec::new(),
            hint_bits: 0,
            hint_limit: 0,
            plain: false,
            touched: Vec::new(),
            masks: Box::new(std::array::from_fn(|d| {
                let top = (k * d as u32).min(128);
                u128::MAX.checked_shl(128 - top).unwrap_or(0)
            })),
            lim: 1,
            lim_lo: 0,
            lim_hi: 0,
        };
        t.reset();
        t
    }

    /// Back to a lone root (rap_init); keeps the allocations.
    pub fn reset(&mut self) {
        self.nodes.clear();
        self.touched.clear();
        self.free.clear();
        self.nodes.push(Node::default());
        self.n = 0;
        self.period = self.merge_first;
        self.next_merge = self.merge_first;
        self.live = 1;
        self.peak = 1;
        self.before_merges = (0, 0, 0);
        self.largest_at = 0;
        self.last_merge = 0;
        (self.lim, self.lim_lo, self.lim_hi) = (1, 1, 0);
    }

    /// Events added so far.
    pub fn events(&self) -> u64 {
        self.n
    }

    /// Tree height h = log_b(R): 128 / log2 b unless built [`RapTree::with_key_bits`].
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

    /// The event count at which the next scheduled merge runs (the add that brings
    /// [`RapTree::events`] to it merges after adding).
    pub fn next_merge_at(&self) -> u64 {
        self.next_merge
    }

    /// Memory as 004 section 5.2 measures it: "the maximum memory is the largest of the
    /// tree sizes just before the merge operations", and their average, over the merges
    /// since the last reset at which the split threshold eps n / h is at least one event
    /// (`None` before the first).  Below one event the paper's threshold would refine
    /// every new key to a point and ours (floored at one, see the module doc) nearly so:
    /// the memory bound, like the error bound, holds from n = h / eps on.
    pub fn nodes_before_merges(&self) -> Option<(usize, f64)> {
        let (merges, largest, sum) = self.before_merges;
        (merges > 0).then(|| (largest, sum as f64 / merges as f64))
    }

    /// The event count at the merge before which [`RapTree::nodes_before_merges`]'
    /// maximum was reached (`None` before the first counted merge).
    pub fn largest_before_merge_at(&self) -> Option<u64> {
        (self.before_merges.0 > 0).then_some(self.largest_at)
    }

    /// Most nodes the tree has held at any moment since the last reset (at least
    /// [`RapTree::nodes_before_merges`]'s maximum: splits before the first merge
    /// count too).
    pub fn peak_nodes(&self) -> usize {
        self.peak
    }

    /// The split (and merge) threshold `eps * n / h`.
    pub fn threshold(&self) -> f64 {
        self.eps * self.n as f64 / self.height as f64
    }

    /// Walks from `node` at `depth` down `key`'s path to the node where its update lands
    /// (the smallest range holding it); returns that node, its depth and the deepest node
    /// at most 64/k deep visited (`NONE` when the walk started below that depth).  `K` is
    /// k: k divides 64, so a digit never straddles the key's halves and the walk shifts
    /// one 64-bit half instead of the u128 key.  A child one level down holds the key by
    /// construction; a deeper one (left by an interior merge) only if its prefix matches.
    #[inline(always)]
    fn descend<const K: u32>(
        &self,
        key: u128,
        mut node: usize,
        mut depth: u32,
    ) -> (usize, u32, usize) {
        debug_assert_eq!(K, self.k);
        let (top, low) = ((key >> 64) as u64, key as u64);
        let anchor = 64 / K;
        let mut at_anchor = if depth <= anchor { node } else { NONE };
        loop {
            let ch = self.nodes[node].first;
            if ch == 0 {
                return (node, depth, at_anchor);
            }
            let digit = if depth < anchor {
                (top << (K * depth)) >> (64 - K)
            } else {
                (low << (K * (depth - anchor))) >> (64 - K)
            };
            let c = ch as usize + digit as usize;
            let cd = u32::from(self.nodes[c].depth);
            if cd != depth + 1 && !self.on_path(c, key) {
                return (node, depth, at_anchor);
            }
            node = c;
            depth = cd;
            if depth <= anchor {
                at_anchor = node;
            }
        }
    }

    /// The digit of `key` choosing the child of a node at `depth` (< h).  k divides 64,
    /// so the digit lies within one half of the key: one 64-bit shift.
    #[inline]
    fn digit(&self, key: u128, depth: u32) -> usize {
        let below = 128 - self.k * (depth + 1);
        let half = if below >= 64 {
            (key >> 64) as u64
        } else {
            key as u64
        };
        (half >> (below % 64)) as usize & (self.b - 1)
    }

    /// `node`'s prefix, right-aligned (its top `k * depth` bits).
    pub(super) fn prefix_of(&self, node: usize) -> u128 {
        let n = &self.nodes[node];
        let bits = self.k * u32::from(n.depth);
        n.lead.checked_shr(128 - bits).unwrap_or(0)
    }

    /// Whether `key`'s update lands at `n`, a node on its path: no child holds it.
    #[inline]
    fn ends_here(&self, n: &Node, key: u128) -> bool {
        n.first == 0 || !self.on_path(n.first as usize + self.digit(key, u32::from(n.depth)), key)
    }

    /// A block of b empty (dead) slots.
    fn alloc_block(&mut self) -> usize {
        let first = match self.free.pop() {
            Some(f) => f as usize,
            None => {
                let f = self.nodes.len();
                self.nodes.resize(f + self.b, Node::default());
                f
            }
        };
        for c in &mut self.nodes[first..first + self.b] {
            c.depth = DEAD;
        }
        first
    }

    /// Gives `node` all b immediate subranges as children with zero counts.  A node that
    /// already has children (some slots empty or holding deeper nodes after an interior
    /// merge) keeps its block: an empty slot gets its subrange, and a deeper child moves
    /// into a new block under the subrange holding it (3.3.1).
    fn split(&mut self, node: usize) {
        let Node {
            lead, depth, first, ..
        } = self.nodes[node];
        let block = if first == 0 {
            self.alloc_block()
        } else {
            first as usize
        };
        let depth = u32::from(depth);
        for d in 0..self.b {
            let slot = block + d;
            let old = self.nodes[slot];
            let mut child = Node {
                lead: lead | ((d as u128) << (128 - self.k * (depth + 1))),
                count: 0,
                first: 0,
                depth: (depth + 1) as u16,
                touched: false,
            };
            if old.depth != DEAD {
                if u32::from(old.depth) == depth + 1 {
                    continue;
                }
                // A deeper child: the new subrange becomes its parent.
                let sub = self.alloc_block();
                // Its digit below the new subrange (at depth + 1).
                let digit = (old.lead >> (128 - self.k * (depth + 2))) as usize & (self.b - 1);
                self.nodes[sub + digit] = old;
                child.first = sub as u32;
            }
            self.nodes[slot] = child;
            self.live += 1;
        }
        self.nodes[node].first = block as u32;
        self.peak = self.peak.max(self.live);
    }

    /// With `plain`, every add walks from the root, with no key-to-leaf hint tables
    /// (their 1.25 MiB at full size are never made): the paper's tree walk, for timing
    /// what the hints or a buffer save.  The tree and its counts are the same either way
    /// (a hint only chooses where a walk starts).
    pub fn set_plain_walk(&mut self, plain: bool) {
        self.plain = plain;
        self.key_hints = Vec::new();
        self.top_hints = Vec::new();
        self.hint_bits = 0;
        self.hint_limit = 0;
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
                self.scheduled_merge();
            }
        }
    }

    #[cold]
    fn scheduled_merge(&mut self) {
        self.merge();
        self.period = self.period.saturating_mul(self.q).max(1);
        self.next_merge = self.n.saturating_add(self.period);
    }

    /// [`RapTree::add`] when the key's own hint is the node its walk ends at and takes the
    /// whole `count` without splitting before the next merge time: the same update
    /// without the walk.  Returns false, having changed no count, in every other case.
    /// The hinted node is read once, for the path check and the update alike.  `pair` is
    /// the key's hint pair (slot pair `ks`) as read a few adds before.
    #[inline]
    fn add_to_hinted_leaf(&mut self, key: u128, count: u64, ks: usize, pair: [u32; 2]) -> bool {
        if count == 0 || count > self.next_merge - self.n {
            return false;
        }
        let [h0, h1] = pair;
        let (h, n) = match self.node_on_path(h0 as usize, key) {
            Some(n) => (h0 as usize, n),
            None => {
                // The second way: promote it, as `add_chunk` would.
                let Some(n) = self.node_on_path(h1 as usize, key) else {
                    return false;
                };
                self.key_hints[ks] = [h1, h0];
                (h1 as usize, n)
            }
        };
        if !self.ends_here(&n, key) {
            return false;
        }
        let Node {
            count: c0, depth, ..
        } = n;
        if u32::from(depth) == self.height {
            if !self.nodes[h].touched {
                self.nodes[h].touched = true;
                self.touched.push((h as u32, key, c0));
            }
        } else if !(count == 1 || self.prefix_fill) || c0 + count > self.limit_at(self.n + count) {
            // (The binary search of `add_chunk` lands all `count` events exactly when the
            // last one fits, since the events that fit form a prefix.)
            return false;
        }
        self.nodes[h].count += count;
        self.n += count;
        if self.n >= self.next_merge {
            self.scheduled_merge();
        }
        true
    }

    #[inline]
    fn raw_limit(&self, n: u64) -> u64 {
        // `as` truncates, which is floor for the non-negative quotient (and avoids a
        // libm call where the target lacks a rounding instruction).
        ((self.eps * n as f64 / self.height as f64) as u64).max(1)
    }

    /// `max(1, floor(eps * n / h))`, from a cached run of n with the same value.  The
    /// float expression is monotone in n, so the run is found by probing it directly.
    #[inline]
    fn limit_at(&mut self, n: u64) -> u64 {
        if n >= self.lim_lo && n <= self.lim_hi {
            return self.lim;
        }
        self.refill_limit(n)
    }

    #[cold]
    fn refill_limit(&mut self, n: u64) -> u64 {
        let lim = self.raw_limit(n);
        // The last n with this limit: start from the real-valued estimate, then step to
        // the exact boundary.
        let est = ((lim + 1) as f64 * self.height as f64 / self.eps) as u64;
        let mut hi = est.max(n);
        while hi > n && self.raw_limit(hi) > lim {
            hi -= 1;
        }
        while hi < u64::MAX && self.raw_limit(hi + 1) == lim {
            hi += 1;
        }
        (self.lim, self.lim_lo, self.lim_hi) = (lim, n, hi);
        lim
    }

    /// Live node `node` when it lies on `key`'s path.
    #[inline(always)]
    fn node_on_path(&self, node: usize, key: u128) -> Option<Node> {
        self.nodes
            .get(node)
            .filter(|n| n.depth != DEAD && (key ^ n.lead) & self.masks[n.depth as u8 as usize] == 0)
            .copied()
    }

    /// Whether live node `node` lies on `key`'s path (its prefix is a prefix of `key`).
    #[inline]
    fn on_path(&self, node: usize, key: u128) -> bool {
        match self.nodes.get(node) {
            Some(n) if n.depth != DEAD => (key ^ n.lead) & self.masks[n.depth as u8 as usize] == 0,
            _ => false,
        }
    }

    /// The hint slot pairs of `key`: (top half's, full key's), the top bits but one of
    /// a hash over `log2` of each table's slots.
    #[inline]
    fn hint_slots(&self, key: u128) -> (usize, usize) {
        let top = (key >> 64) as u64;
        let low = key as u64 ^ top.rotate_left(17);
        let (kb, tb) = (self.hint_bits, self.hint_bits.min(TOP_BITS + 2) - 2);
        let ts = (top.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (65 - tb)) as usize;
        let ks = (low.wrapping_mul(0xC2B2_AE3D_27D4_EB4F) >> (65 - kb)) as usize;
        (ts, ks)
    }

    /// Adds a sequence of weighted keys in order, exactly as repeated [`RapTree::add`]
    /// calls would.  While one add runs, the key hint of an add a few places ahead and
    /// the node hinted for a nearer one are read (plain loads whose values are unused),
    /// so their cache misses overlap the current add instead of following it.
    pub fn add_batch(&mut self, items: &[(u128, u64)]) {
        const FAR: usize = 8;
        const NEAR: usize = 4;
        // Key-hint slots of the adds in flight, by position mod 16.
        let mut slots = [0usize; 16];
        if self.plain {
            for &(key, count) in items {
                self.add(key, count);
            }
            return;
        }
        if self.hint_demand() > self.hint_limit {
            self.alloc_hints();
        }
        // The key-hint pairs of the adds in flight, as read FAR adds ahead: the adds
        // between may have rewritten a pair since (a walk's end, a promoted second way,
        // tables remade), which leaves a stale hint, and a hint is checked before it is
        // used, so the adds are the same; at most one of them then walks from further up.
        let mut pairs = [[u32::MAX; 2]; 16];
        for (j, &(key, _)) in items.iter().enumerate().take(FAR) {
            slots[j] = self.hint_slots(key).1;
            pairs[j] = self.key_hints[slots[j]];
        }
        let mut sink = 0u64;
        for (i, &(key, count)) in items.iter().enumerate() {
            if let Some(&(k, _)) = items.get(i + FAR) {
                let ks = self.hint_slots(k).1;
                slots[(i + FAR) % 16] = ks;
                pairs[(i + FAR) % 16] = self.key_hints[ks];
            }
            if i + NEAR < items.len()
                && let Some(n) = self.nodes.get(pairs[(i + NEAR) % 16][0] as usize)
            {
                sink = sink.wrapping_add(n.count);
            }
            if !self.add_to_hinted_leaf(key, count, slots[i % 16], pairs[i % 16]) {
                self.add(key, count);
            }
        }
        std::hint::black_box(sink);
    }

    fn add_chunk(&mut self, key: u128, mut count: u64) {
        let plain = self.plain;
        if !plain && self.hint_demand() > self.hint_limit {
            self.alloc_hints();
        }
        let (ts, ks) = if plain { (0, 0) } else { self.hint_slots(key) };
        // Where the walk starts: the key's own hint, else its top half's (read only when
        // the key's misses), else the root.
        let (start, way) = if plain {
            (0, 5)
        } else if self.on_path(self.key_hints[ks][0] as usize, key) {
            (self.key_hints[ks][0] as usize, 0)
        } else if self.on_path(self.key_hints[ks][1] as usize, key) {
            (self.key_hints[ks][1] as usize, 1)
        } else if self.on_path(self.top_hints[ts][0] as usize, key) {
            (self.top_hints[ts][0] as usize, 2)
        } else if self.on_path(self.top_hints[ts][1] as usize, key) {
            (self.top_hints[ts][1] as usize, 3)
        } else {
            (0, 4)
        };
        let (mut node, mut depth) = (start, u32::from(self.nodes[start].depth));
        // The deepest node at most `anchor` deep seen on the path (known once a walk
        // starts at or above the anchor).
        let mut at_anchor = NONE;
        loop {
            let crossed;
            (node, depth, crossed) = match self.k {
                1 => self.descend::<1>(key, node, depth),
                2 => self.descend::<2>(key, node, depth),
                4 => self.descend::<4>(key, node, depth),
                _ => self.descend::<8>(key, node, depth),
            };
            if crossed != NONE {
                at_anchor = crossed;
            }
            if depth == self.height {
                if !self.nodes[node].touched {
                    self.nodes[node].touched = true;
                    self.touched
                        .push((node as u32, key, self.nodes[node].count));
                }
                self.nodes[node].count += count;
                self.n += count;
                break;
            }
            // The i-th event lands here iff c0 + i <= limit(n + i); the limit grows
            // slower than i, so the events that land form a prefix: find its length.
            let c0 = self.nodes[node].count;
            let (mut lo, mut hi) = (0u64, count);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if c0 + mid <= self.limit_at(self.n + mid) {
                    lo = mid
                } else {
                    hi = mid - 1
                }
            }
            self.nodes[node].count += lo;
            self.n += lo;
            count -= lo;
            if count == 0 {
                break;
            }
            self.split(node);
        }
        // Remember where the walk ended (and, after a walk from above the anchor, the
        // anchor node).
        if plain {
            return;
        }
        if way != 0 || node != start {
            if way != 0 {
                self.key_hints[ks][1] = self.key_hints[ks][0];
            }
            self.key_hints[ks][0] = node as u32;
        }
        if way >= 2 && at_anchor != NONE && self.top_hints[ts][0] as usize != at_anchor {
            if way != 2 {
                self.top_hints[ts][1] = self.top_hints[ts][0];
            }
            self.top_hints[ts][0] = at_anchor as u32;
        }
    }

    /// What the hint tables are sized to: a slot per event added (the distinct keys
    /// seen, which a stream of many cold keys has far more of than the tree has
    /// nodes, are at most that) or per live node, whichever is more.
    #[inline]
    fn hint_demand(&self) -> usize {
        usize::try_from(self.n).unwrap_or(usize::MAX).max(self.live)
    }

    /// (Re)makes the hint tables, empty, at the size [`RapTree::hint_demand`] calls for.
    #[cold]
    fn alloc_hints(&mut self) {
        let want = self.hint_demand().next_power_of_two().trailing_zeros();
        self.hint_bits = want.clamp(MIN_KEY_BITS.max(self.hint_bits), KEY_BITS);
        self.hint_limit = if self.hint_bits == KEY_BITS {
            usize::MAX
        } else {
            1 << self.hint_bits
        };
        let top_bits = self.hint_bits.min(TOP_BITS + 2) - 2;
        self.key_hints.clear();
        self.key_hints
            .resize(1 << (self.hint_bits - 1), [u32::MAX; 2]);
        self.top_hints.clear();
        self.top_hints.resize(1 << (top_bits - 1), [u32::MAX; 2]);
    }
}

mod merge;
pub use merge::worst_case_before_merge;
mod read;
#[cfg(test)]
mod tests;
