//! The tagged compressor (001 section 4, Figure 6).
//!
//! A set-associative table (default 2-way, 2048 entries) indexed by the paper's hash;
//! each entry holds a partial tag (`xor_fold(pc ^ value, tag_bits)`, default 2 bits), an
//! 8-bit hit counter, a 3-bit miss counter and a valid bit (the Evict state is "valid with
//! a non-zero miss counter", as section 4.2 encodes it).  Per entry, exactly Figure 6:
//!
//! | from  | event                       | to    | action |
//! |-------|-----------------------------|-------|--------|
//! | Empty | access (E1)                 | Valid | allocate to T_new |
//! | Valid | hit, hit counter saturates (E2) | Empty | message (T, hits) to software; hits = misses = 0 |
//! | Valid | hit (E3)                    | Valid | hits += 1 |
//! | Valid | miss (E4)                   | Evict | misses += 1 |
//! | Evict | miss && ShouldReplace (E5)  | Valid | allocate to T_new; hits = hits + misses; misses = 0 |
//! | Evict | miss && !ShouldReplace (E5a)| Evict | misses += 1 |
//! | Evict | hit && ShouldEvict (E6)     | Empty | eviction message (T, hits) to software; hits = old misses, misses = 0 |
//! | Evict | hit && !ShouldEvict (E6a)   | Evict | hits += 1 |
//!
//! `ShouldEvict = hits >= trigger/4 && misses >= trigger/hits` and
//! `ShouldReplace = misses saturated || hits == 1 || (hits > 1 && hits < 2*misses)`, with
//! trigger = 2^hit_bits (256).  A message carries the incoming tuple: the entry only has a
//! tag, so the tuple whose signature matched is what software learns (aliasing included).
//!
//! Choices the paper leaves open, made here: the access that triggers a message is counted
//! in it (E2 sends 256, E6 sends hits + 1), and E1 counts its access (hits = carry + 1,
//! where carry is what E6 left); a hit counter that would overflow in the Evict state
//! sends a message like E2; E5's inherited count that reaches the trigger is sent at
//! once.  On a miss in a full set the miss transitions apply to the least recently used
//! way, and the miss does not refresh its recency (hits and allocation do); an Empty way
//! is allocated first.  Messages go through the same software side as
//! the stratified sampler (optional A_k, 30 cycles per message).

use crate::contract::{Candidate, Overhead, Profiler};
use crate::hash::{BLOCK, PaperHash, xor_fold};
use crate::spec::{ProfilerSpec, TaggedOptions};
use crate::stratified::Software;
use crate::tuple::{KindSet, Tuple};

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    valid: bool,
    tag: u16,
    hits: u32,
    misses: u32,
    last_use: u32,
}

/// The tagged compressor.
#[derive(Debug)]
pub struct Tagged {
    spec: ProfilerSpec,
    opts: TaggedOptions,
    threshold: u64,
    hash: PaperHash,
    sets: usize,
    ways: usize,
    entries: Vec<Entry>,
    clock: u32,
    trigger: u32,
    miss_max: u32,
    software: Software,
}

impl Tagged {
    /// A model from its spec and options.
    pub fn new(spec: ProfilerSpec, opts: TaggedOptions) -> Self {
        let sets = opts.entries / opts.ways;
        let bits = sets.trailing_zeros().max(1);
        Tagged {
            threshold: spec.threshold_count(),
            hash: PaperHash::new(1, bits, spec.seed),
            sets,
            ways: opts.ways,
            entries: vec![Entry::default(); opts.entries],
            clock: 0,
            trigger: 1 << opts.hit_bits,
            miss_max: (1 << opts.miss_bits) - 1,
            software: Software::new(opts.second, false),
            spec,
            opts,
        }
    }

    /// One tuple, whose set is `set` (E1-E6 of the module doc).
    fn observe_in(&mut self, t: Tuple, set: usize) {
        let tag = self.tag(&t);
        self.clock = self.clock.wrapping_add(1);
        let base = set * self.ways;
        let ways = base..base + self.ways;
        if let Some(w) = ways
            .clone()
            .find(|&w| self.entries[w].valid && self.entries[w].tag == tag)
        {
            let mut e = self.entries[w];
            e.last_use = self.clock;
            if e.misses > 0 && self.should_evict(&e) {
                // E6
                self.software.message(t, e.hits as u64 + 1, 0);
                e = Entry {
                    valid: false,
                    tag: 0,
                    hits: e.misses,
                    misses: 0,
                    last_use: self.clock,
                };
            } else if e.hits + 1 >= self.trigger {
                // E2 (or a saturating E6a)
                self.software.message(t, self.trigger as u64, 0);
                e = Entry {
                    last_use: self.clock,
                    ..Entry::default()
                };
            } else {
                // E3 / E6a
                e.hits += 1;
            }
            self.entries[w] = e;
            return;
        }
        if let Some(w) = ways.clone().find(|&w| !self.entries[w].valid) {
            // E1
            let e = &mut self.entries[w];
            *e = Entry {
                valid: true,
                tag,
                hits: e.hits + 1,
                misses: 0,
                last_use: self.clock,
            };
            if e.hits >= self.trigger {
                let n = e.hits as u64;
                *e = Entry::default();
                self.software.message(t, n, 0);
            }
            return;
        }
        let w = ways
            .min_by_key(|&w| self.entries[w].last_use)
            .expect("ways >= 1");
        // A miss does not make the way recently used: only hits and (re)allocation do,
        // so the misses of a full set keep landing on its least recently used entry
        // until E5 replaces it.
        let mut e = self.entries[w];
        if e.misses == 0 {
            // E4
            e.misses = 1;
        } else if self.should_replace(&e) {
            // E5
            e = Entry {
                valid: true,
                tag,
                hits: e.hits + e.misses,
                misses: 0,
                last_use: self.clock,
            };
            if e.hits >= self.trigger {
                self.software.message(t, e.hits as u64, 0);
                e = Entry {
                    last_use: self.clock,
                    ..Entry::default()
                };
            }
        } else {
            // E5a
            e.misses = (e.misses + 1).min(self.miss_max);
        }
        self.entries[w] = e;
    }

    fn tag(&self, t: &Tuple) -> u16 {
        xor_fold(t.a ^ t.b ^ ((t.kind as u64) << 32), self.opts.tag_bits) as u16
    }

    fn should_evict(&self, e: &Entry) -> bool {
        e.hits >= self.trigger / 4 && e.hits > 0 && e.misses >= self.trigger / e.hits
    }

    fn should_replace(&self, e: &Entry) -> bool {
        e.misses >= self.miss_max || e.hits == 1 || (e.hits > 1 && e.hits < 2 * e.misses)
    }
}

impl Profiler for Tagged {
    fn spec(&self) -> &ProfilerSpec {
        &self.spec
    }

    fn supported_kinds(&self) -> KindSet {
        KindSet::ALL
    }

    fn observe(&mut self, t: Tuple) {
        let set = (self.hash.word(&t, 0) & 0xffff) as usize & (self.sets - 1);
        self.observe_in(t, set);
    }

    /// The set indices of a block at a time ([`PaperHash::for_each_single`]: the
    /// same index as [`PaperHash::word`], with the byte lookups a block needs).
    fn observe_batch(&mut self, batch: &[Tuple]) {
        let mut sets = [0u16; BLOCK];
        for block in batch.chunks(BLOCK) {
            self.hash.for_each_single(block, |i, _, h| sets[i] = h);
            for (t, &h) in block.iter().zip(&sets) {
                self.observe_in(*t, h as usize & (self.sets - 1));
            }
        }
    }

    fn end_interval_into(
        &mut self,
        estimates: &mut dyn FnMut(Tuple, u64),
        out: &mut Vec<Candidate>,
    ) {
        self.software.end_interval(self.threshold, estimates, out)
    }

    fn state_bytes(&self) -> usize {
        let o = &self.opts;
        let per_entry = (o.tag_bits + o.hit_bits + o.miss_bits + 1) as usize;
        let lru = self.sets * (usize::BITS - (self.ways - 1).leading_zeros()) as usize;
        (o.entries * per_entry + lru).div_ceil(8) + self.software.state_bytes()
    }

    fn overhead(&self) -> Overhead {
        self.software.overhead()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_spec;

    fn model(extra: &str) -> Tagged {
        let spec = parse_spec(&format!("tagged:second=none,{extra}")).unwrap();
        let crate::spec::Model::Tagged(o) = spec.model.clone() else {
            unreachable!()
        };
        Tagged::new(spec, o)
    }

    #[test]
    fn a_lone_tuple_sends_one_message_per_256() {
        let mut m = model("interval=1000,threshold=10%");
        m.observe_batch(&vec![Tuple::value(3, 4); 600]);
        // E1 then E3 until E2 at 256: two messages of 256, 88 left in the entry.
        assert_eq!(m.overhead().messages, 2);
        assert_eq!(
            m.end_interval(),
            vec![Candidate {
                tuple: Tuple::value(3, 4),
                count: 512
            }]
        );
    }

    #[test]
    fn misses_stay_on_the_least_recently_used_way() {
        // One set, two ways, tags wide enough that these tuples differ.
        let mut m = model("entries=2,ways=2,tag_bits=8,interval=100000,threshold=0.001%");
        let (a, b, c, d) = (
            Tuple::value(0, 1),
            Tuple::value(0, 2),
            Tuple::value(0, 3),
            Tuple::value(0, 4),
        );
        m.observe_batch(&[a, a, a, b, b, b]);
        // c misses on a's way (the LRU): E4.
        m.observe(c);
        let way_of = |m: &Tagged, t: Tuple| {
            let tag = m.tag(&t);
            (0..2).find(|&w| m.entries[w].valid && m.entries[w].tag == tag)
        };
        let wa = way_of(&m, a).expect("a kept");
        assert_eq!(m.entries[wa].misses, 1);
        // d misses too: the miss did not make a's way recent, so d lands on it again
        // (E5a: hits 3 >= 2 * misses 2), and b's way stays untouched.
        m.observe(d);
        assert_eq!(
            m.entries[wa].misses, 2,
            "the second miss went to the LRU way"
        );
        let wb = way_of(&m, b).expect("b kept");
        assert_eq!(m.entries[wb].misses, 0);
    }

    #[test]
    fn eviction_keeps_the_stream_length() {
        // One set, one way: every tuple shares the entry.
        let mut m = model("entries=1,ways=1,tag_bits=8,interval=100000,threshold=0.001%");
        let (a, b) = (Tuple::value(0, 1), Tuple::value(0, 2));
        m.observe_batch(&vec![a; 100]);
        // b misses: E4 then E5a while ShouldReplace is false (hits=100 >= 2*misses).
        m.observe_batch(&[b; 3]);
        assert_eq!(m.entries[0].misses, 3);
        // a hits with hits >= 64 and misses >= 256/100 = 2: E6 sends a's 100 (+1).
        m.observe(a);
        assert_eq!(m.overhead().messages, 1);
        assert!(!m.entries[0].valid);
        assert_eq!(m.entries[0].hits, 3, "b's misses carried");
        m.observe(b);
        assert_eq!(m.entries[0].hits, 4);
        let c = m.end_interval();
        assert_eq!(
            c,
            vec![Candidate {
                tuple: a,
                count: 101
            }]
        );
    }

    #[test]
    fn replacement_hands_over_the_counts() {
        let mut m = model("entries=1,ways=1,tag_bits=8,interval=100000,threshold=0.001%");
        let (a, b) = (Tuple::value(0, 1), Tuple::value(0, 2));
        m.observe(a); // E1: hits 1
        m.observe(b); // E4: misses 1
        m.observe(b); // E5 (hits == 1): b takes hits 1 + 1
        assert!(m.entries[0].valid && m.entries[0].misses == 0);
        assert_eq!(m.entries[0].hits, 2);
        assert_eq!(m.entries[0].tag, m.tag(&b));
    }
}
