//! Reading a RAP tree: range estimates, every node with its hotness (004 section 5.1),
//! and the point nodes.

use super::{DEAD, Node, NodeView, RapTree};

impl RapTree {
    /// The estimate for the aligned range of keys with the `bits`-bit prefix `prefix`:
    /// the sum of the counts of the nodes inside it.  For an unaligned prefix length the
    /// nodes wholly inside are summed.
    pub fn estimate(&self, prefix: u128, bits: u32) -> u64 {
        let mut node = 0usize;
        loop {
            let here = self.k * u32::from(self.nodes[node].depth);
            if here >= bits {
                return self.subtree(node);
            }
            let ch = self.nodes[node].first as usize;
            if ch == 0 {
                return 0;
            }
            // Digits of the query prefix at this depth; at the last partial level every
            // child in a slot matching the remaining bits is inside.
            let level_bits = here + self.k;
            if level_bits > bits {
                let spare = level_bits - bits;
                let base = ((prefix << spare) as usize) & (self.b - 1);
                return (0..1usize << spare)
                    .map(|j| ch + (base | j))
                    .filter(|&c| self.nodes[c].depth != DEAD)
                    .map(|c| self.subtree(c))
                    .sum();
            }
            let c = ch + (((prefix >> (bits - level_bits)) as usize) & (self.b - 1));
            let child = &self.nodes[c];
            if child.depth == DEAD {
                return 0;
            }
            // A child left deeper by an interior merge: inside the range, holding it, or
            // beside it.
            let cb = self.k * u32::from(child.depth);
            let child_prefix = self.prefix_of(c);
            if cb >= bits {
                return if child_prefix >> (cb - bits) == prefix {
                    self.subtree(c)
                } else {
                    0
                };
            }
            if prefix >> (bits - cb) != child_prefix {
                return 0;
            }
            node = c;
        }
    }

    fn subtree(&self, node: usize) -> u64 {
        let first = self.nodes[node].first as usize;
        let own = self.nodes[node].count;
        if first == 0 {
            return own;
        }
        own + (first..first + self.b)
            .filter(|&c| self.nodes[c].depth != DEAD)
            .map(|c| self.subtree(c))
            .sum::<u64>()
    }

    /// Every node with its prefix, subtree sum and hotness: a range is hot when its count
    /// plus the weights of its non-hot subranges reach `hot * n` (004 section 5.1).
    pub fn nodes_with_hotness(&self, hot: f64) -> Vec<NodeView> {
        let mut out = Vec::with_capacity(self.live);
        let cut = hot * self.n as f64;
        self.visit(0, cut, &mut out);
        out
    }

    /// Returns (subtree, hot weight, hot).
    fn visit(&self, node: usize, cut: f64, out: &mut Vec<NodeView>) -> (u64, u64, bool) {
        let Node {
            count: own,
            first,
            depth,
            ..
        } = self.nodes[node];
        let (mut subtree, mut weight) = (own, own);
        if first != 0 {
            for c in first as usize..first as usize + self.b {
                if self.nodes[c].depth == DEAD {
                    continue;
                }
                let (s, w, h) = self.visit(c, cut, out);
                subtree += s;
                if !h {
                    weight += w;
                }
            }
        }
        let hot = weight > 0 && weight as f64 >= cut;
        out.push(NodeView {
            prefix: self.prefix_of(node),
            bits: self.k * u32::from(depth),
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
        self.collect_points(0, &mut out);
        out
    }

    /// Point nodes whose count grew since the previous call (or since they were
    /// created), with the growth; marks every point's count as seen.
    pub fn take_point_growth(&mut self) -> Vec<(u128, u64)> {
        // Only touched points can have grown; every other point's count equals its mark.
        // (A split since the last merge may have moved some.)
        self.revalidate_touched();
        let mut out = Vec::new();
        for (node, key, mark) in self.touched.drain(..) {
            let n = &mut self.nodes[node as usize];
            let grown = n.count - mark;
            if grown > 0 {
                out.push((key, grown));
            }
            n.touched = false;
        }
        // Descending keys: the order of the depth-first walk this replaces.
        out.sort_unstable_by_key(|x| std::cmp::Reverse(x.0));
        out
    }

    fn collect_points(&self, node: usize, out: &mut Vec<(u128, u64)>) {
        let n = &self.nodes[node];
        if u32::from(n.depth) == self.height {
            if n.count > 0 {
                out.push((self.prefix_of(node), n.count));
            }
            return;
        }
        let first = n.first as usize;
        if first != 0 {
            for c in first..first + self.b {
                if self.nodes[c].depth != DEAD {
                    self.collect_points(c, out);
                }
            }
        }
    }
}
