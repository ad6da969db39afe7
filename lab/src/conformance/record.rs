//! Pass 1: the perfect model's run recorded as a [`Reference`]: per
//! interval, the entries a correct model must report, the events per kind,
//! and for RAP the exact counts of the ranges a tree can report.

use super::*;

/// The key range of a `bits`-bit prefix.
fn prefix_range(p: u128, bits: u32) -> (u128, u128) {
    if bits == 0 {
        return (0, u128::MAX);
    }
    let lo = p << (128 - bits);
    (lo, lo | u128::MAX.checked_shr(bits).unwrap_or(0))
}

/// The prefix chains of `table` (sorted by key, with prefix sums `sums`)
/// whose count reaches `cut`, at bit granularity.
fn heavy_prefixes(kind: Kind, table: &[(u128, u64)], sums: &[u64], cut: f64) -> Vec<RangeCount> {
    let sum = |p: u128, bits: u32| {
        let (lo, hi) = prefix_range(p, bits);
        let i = table.partition_point(|e| e.0 < lo);
        let j = table.partition_point(|e| e.0 <= hi);
        sums[j] - sums[i]
    };
    let heavy = |c: u64| c > 0 && c as f64 >= cut;
    let mut out = Vec::new();
    let total = sums.last().copied().unwrap_or(0);
    let mut stack = if heavy(total) {
        vec![(0u128, 0u32, total)]
    } else {
        Vec::new()
    };
    while let Some((mut p, mut bits, count)) = stack.pop() {
        let top = bits;
        loop {
            let mut next = Vec::new();
            if bits < 128 {
                let c0 = sum(p << 1, bits + 1);
                for (child, c) in [(p << 1, c0), ((p << 1) | 1, count - c0)] {
                    if heavy(c) {
                        next.push((child, bits + 1, c));
                    }
                }
            }
            if next.len() == 1 && next[0].2 == count {
                (p, bits) = (next[0].0, next[0].1);
                continue;
            }
            out.push(RangeCount {
                kind,
                hi: (p >> 64) as u64,
                lo: p as u64,
                bits,
                top,
                count,
            });
            stack.extend(next);
            break;
        }
    }
    out
}

/// Merges the sorted `add` into the sorted `acc`, summing equal keys.
fn merge_into(acc: &mut Vec<(u128, u64)>, add: &[(u128, u64)]) {
    let old = std::mem::take(acc);
    acc.reserve(old.len() + add.len());
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < add.len() {
        if j == add.len() || (i < old.len() && old[i].0 < add[j].0) {
            acc.push(old[i]);
            i += 1;
        } else if i == old.len() || add[j].0 < old[i].0 {
            acc.push(add[j]);
            j += 1;
        } else {
            acc.push((old[i].0, old[i].1 + add[j].1));
            i += 1;
            j += 1;
        }
    }
}

/// Pass 1: runs `program` under the perfect profiler with `spec`'s interval,
/// threshold and kinds (and, for RAP, its key layout, hot fraction and tree
/// lifetime for the range counts).
pub fn record_reference(
    program: &Program,
    name: &str,
    args: &[i64],
    input: &[u8],
    spec: &ProfilerSpec,
    tolerances: Tolerances,
) -> crate::Result<Reference> {
    tolerances.validate()?;
    let oracle = spec.oracle();
    let threshold = oracle.threshold_count();
    let low = (threshold as f64 * (1.0 - tolerances.margin))
        .floor()
        .max(1.0) as u64;
    // Ask the oracle for every tuple: the low-bound entries are kept, the
    // rest counts towards the events per kind and the range counts.
    let mut all_spec = oracle.clone();
    all_spec.threshold = 1.0 / oracle.interval as f64;
    let guarantee = spec.guarantee();
    let ranges = guarantee.range_bound().map(|o| RangeSetup {
        dims: o.dims,
        hot: o.hot,
        reset: o.reset,
    });
    // Per kind: the cumulative table (key-sorted) and its events.
    let mut cumulative: [Vec<(u128, u64)>; 3] = Default::default();
    let mut cumulative_events = [0u64; 3];
    let mut intervals = Vec::new();
    drive(program, args, input, &all_spec, |end| {
        let mut events = [0u64; 3];
        for c in end.candidates {
            events[c.tuple.kind as usize] += c.count;
        }
        let mut range_counts = Vec::new();
        if let Some(setup) = ranges {
            for kind in Kind::ALL {
                let k = kind as usize;
                let mut table: Vec<(u128, u64)> = end
                    .candidates
                    .iter()
                    .filter(|c| c.tuple.kind == kind)
                    .map(|c| (toyvm_profiler::rap::key_of(&c.tuple, setup.dims), c.count))
                    .collect();
                table.sort_unstable_by_key(|e| e.0);
                let n = if setup.reset {
                    events[k]
                } else {
                    merge_into(&mut cumulative[k], &table);
                    table = std::mem::take(&mut cumulative[k]);
                    cumulative_events[k] += events[k];
                    cumulative_events[k]
                };
                let mut sums = Vec::with_capacity(table.len() + 1);
                sums.push(0u64);
                for e in &table {
                    sums.push(sums.last().unwrap() + e.1);
                }
                range_counts.extend(heavy_prefixes(kind, &table, &sums, setup.hot * n as f64));
                if !setup.reset {
                    cumulative[k] = table;
                }
            }
        }
        intervals.push(RefInterval {
            index: end.index,
            entries: end
                .candidates
                .iter()
                .filter(|c| c.count >= low)
                .map(|c| Entry {
                    kind: c.tuple.kind,
                    a: c.tuple.a,
                    b: c.tuple.b,
                    count: c.count,
                })
                .collect(),
            events,
            ranges: range_counts,
        });
    })?;
    Ok(Reference {
        format: FORMAT,
        toyvm_version: env!("CARGO_PKG_VERSION").to_owned(),
        program: name.to_owned(),
        program_hash: Fingerprint::of(&program.to_bytes()),
        args: args.to_vec(),
        input_hash: (!input.is_empty()).then(|| Fingerprint::of(input)),
        oracle: oracle.to_string(),
        interval: oracle.interval,
        threshold,
        tolerances,
        ranges,
        intervals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heavy_prefixes_form_chains_with_exact_counts() {
        // Keys 0 (x6), 1 (x2), 2^127 (x2): total 10, cut 5.
        let table = [(0u128, 6u64), (1, 2), (1u128 << 127, 2)];
        let sums = [0, 6, 8, 10];
        let r = heavy_prefixes(Kind::Value, &table, &sums, 5.0);
        // Root (10), then the chain of prefixes of 0/1 holding 8 down to 127
        // bits, then the point 0 (6).
        assert_eq!(r.len(), 3, "{r:?}");
        let count = |p: u128, bits: u32| r.iter().find_map(|c| c.count_of(Kind::Value, p, bits));
        assert_eq!(count(0, 0), Some(10));
        assert_eq!(count(0, 1), Some(8));
        assert_eq!(count(0, 127), Some(8));
        assert_eq!(count(0, 128), Some(6));
        assert_eq!(count(1, 128), None);
        assert_eq!(count(1, 1), None);
    }
}
