//! The batched merge (004 sections 2.2.2, 3.1, 3.3, Fig 1) and the memory bound it keeps.

use super::{DEAD, RapTree};

impl RapTree {
    /// One batched merge pass: bottom-up, every node with at most one child whose count
    /// plus its parent's is below the threshold is merged into the parent (see the module
    /// doc).
    pub fn merge(&mut self) {
        let thr = self.threshold();
        if thr >= 1.0 {
            let (merges, largest, sum) = self.before_merges;
            if self.live > largest {
                self.largest_at = self.n;
            }
            self.before_merges = (merges + 1, largest.max(self.live), sum + self.live as u64);
        }
        self.merge_below(0, thr);
        self.last_merge = self.n;
        self.revalidate_touched();
    }

    /// Merges, below `node`, every node that qualifies (children before their parents).
    fn merge_below(&mut self, node: usize, thr: f64) {
        let first = self.nodes[node].first as usize;
        if first == 0 {
            return;
        }
        let mut left = 0;
        for c in first..first + self.b {
            if self.nodes[c].depth == DEAD {
                continue;
            }
            self.merge_below(c, thr);
            let (kids, only) = self.children_of(c);
            if kids <= 1 && ((self.nodes[node].count + self.nodes[c].count) as f64) < thr {
                self.nodes[node].count += self.nodes[c].count;
                let block = self.nodes[c].first as usize;
                if kids == 1 {
                    // The only child takes the merged node's place.
                    self.nodes[c] = self.nodes[only];
                    self.nodes[only].depth = DEAD;
                } else {
                    self.nodes[c].depth = DEAD;
                }
                if block != 0 {
                    self.free.push(block as u32);
                }
                self.live -= 1;
            }
            if self.nodes[c].depth != DEAD {
                left += 1;
            }
        }
        if left == 0 {
            self.nodes[node].first = 0;
            self.free.push(first as u32);
        }
    }

    /// How many children `node` has, and the slot of the last one.
    fn children_of(&self, node: usize) -> (usize, usize) {
        let first = self.nodes[node].first as usize;
        if first == 0 {
            return (0, 0);
        }
        let mut kids = (0, 0);
        for c in first..first + self.b {
            if self.nodes[c].depth != DEAD {
                kids = (kids.0 + 1, c);
            }
        }
        kids
    }

    /// Points the touched list names by slot may have moved (a merge moves a node's only
    /// child into its slot, a split moves a deeper child into a new block) or been merged
    /// away: find each by its key, and drop those that are gone.
    pub(super) fn revalidate_touched(&mut self) {
        let mut touched = std::mem::take(&mut self.touched);
        touched.retain_mut(
            |(slot, key, _)| match self.find_point(*slot as usize, *key) {
                Some(s) => {
                    *slot = s as u32;
                    true
                }
                None => false,
            },
        );
        self.touched = touched;
    }

    /// The point node of `key`, looked for at `slot` first.
    fn find_point(&self, slot: usize, key: u128) -> Option<usize> {
        let is_point = |s: usize| u32::from(self.nodes[s].depth) == self.height;
        if self.on_path(slot, key) && is_point(slot) {
            return Some(slot);
        }
        let (node, _, _) = match self.k {
            1 => self.descend::<1>(key, 0, 0),
            2 => self.descend::<2>(key, 0, 0),
            4 => self.descend::<4>(key, 0, 0),
            _ => self.descend::<8>(key, 0, 0),
        };
        is_point(node).then_some(node)
    }

    /// The most nodes the tree can hold just after a merge whose threshold eps*m/h is
    /// positive: `1 + 4(b+1) h / eps` (the module doc's argument; the paper's
    /// O(log_b(R)/eps) with our constant, no h*h term).
    pub fn merged_bound(&self) -> usize {
        (1.0 + 4.0 * (self.b as f64 + 1.0) * self.height as f64 / self.eps).floor() as usize
    }

    /// An explicit worst-case node count for this structure now, once a merge has run
    /// (`None` before).  After the merge at m the tree holds at most N =
    /// [`RapTree::merged_bound`] nodes.  Until the next merge a node splits at most once
    /// (then its b immediate children cover its range and it takes no more events), and a
    /// node made since m splits only after taking max(1, floor(eps m / h)) events of the
    /// n - m since, each split adding at most b nodes:
    /// `(b+1) N + b (n - m) / max(1, floor(eps m / h))`.  With merges q times further
    /// apart each time, (n - m) / (eps m / h) stays below q h / eps, so the bound is
    /// O(log_b(R)/eps) at every moment, not only just after a merge.
    pub fn memory_bound(&self) -> Option<usize> {
        if self.last_merge == 0 {
            return None;
        }
        let tm = (self.eps * self.last_merge as f64 / self.height as f64)
            .floor()
            .max(1.0);
        let (b, after) = (self.b as f64, self.merged_bound() as f64);
        let since = (self.n - self.last_merge) as f64;
        Some(((b + 1.0) * after + b * since / tm).ceil() as usize)
    }
}

/// The most nodes a tree of branching `b`, error `eps` and height `height` can hold just
/// before a merge whose predecessor ran at m events (any merge but the first), with
/// merges `q` times further apart each time: [`RapTree::memory_bound`] with
/// (n - m) / max(1, floor(eps m / h)) at most 2 q h / eps (the period after the merge at
/// m is at most q m, and the floor at most halves a threshold of one event or more).
pub fn worst_case_before_merge(b: u32, eps: f64, height: u32, q: u64) -> f64 {
    let (b, h) = (f64::from(b), f64::from(height));
    let after = (1.0 + 4.0 * (b + 1.0) * h / eps).floor();
    (b + 1.0) * after + b * 2.0 * q as f64 * h / eps
}
