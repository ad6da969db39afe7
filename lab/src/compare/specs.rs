//! Which configurations a comparison runs: `--profile` lists and
//! `--sweep` grids, both expanded to canonical spec strings.

pub use toyvm_profiler::Choice;
use toyvm_profiler::spec::MODEL_NAMES;

use super::error::{Error, Result};

/// Splits `--profile` values with the one spec-list grammar of
/// [`toyvm_profiler::spec::split_spec_list`] (`none` included).
pub fn split_specs(values: &[String]) -> Result<Vec<String>, toyvm_profiler::Error> {
    toyvm_profiler::spec::split_spec_list(values)
}

/// Every model at its paper defaults, after the interpreter.
pub fn defaults() -> Vec<Choice> {
    std::iter::once(Choice::None)
        .chain(MODEL_NAMES.iter().map(|m| {
            Choice::Model(toyvm_profiler::parse_spec(m).expect("every model parses bare"))
        }))
        .collect()
}

/// The most configurations a comparison runs (every `--profile` spec and
/// every sweep combination together): each one is run on every program.
pub const MAX_CONFIGS: usize = 4096;

/// A sweep key and its `|` alternatives.
pub type Axis = (String, Vec<String>);

/// Expands a sweep grid: `model:key=a|b,key2=x|y` is the cartesian product
/// of every key's `|` alternatives, the last key varying fastest. Several
/// grids may be listed as `--profile` specs are (`;`, or a comma before a
/// model name). The size of the product is checked before it is expanded:
/// a grid of more than [`MAX_CONFIGS`] combinations is refused.
pub fn expand_sweep(grid: &str) -> Result<Vec<String>> {
    let mut grids: Vec<(String, Vec<Axis>)> = Vec::new();
    let mut total: usize = 0;
    let split = toyvm_profiler::spec::split_spec_list(&[grid]).map_err(|source| Error::Sweep {
        grid: grid.to_owned(),
        source,
    })?;
    for g in split {
        let (model, opts) = match g.split_once(':') {
            Some((m, o)) => (m.trim().to_owned(), o.to_owned()),
            None => (g.clone(), String::new()),
        };
        let axes = parse_axes(&opts, &format!("sweep `{g}`"))?;
        total = total.saturating_add(combinations(&axes));
        if total > MAX_CONFIGS {
            return Err(too_many(format!("sweep `{grid}`"), total, "configurations"));
        }
        grids.push((model, axes));
    }
    let mut out = Vec::with_capacity(total);
    for (model, axes) in &grids {
        for point in odometer(axes) {
            let opts: Vec<String> = point.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push(if opts.is_empty() {
                model.clone()
            } else {
                format!("{model}:{}", opts.join(","))
            });
        }
    }
    Ok(out)
}

/// The axes of a grid `key=a|b|c,key2=x|y` (`what` names it in errors).
pub fn parse_axes(opts: &str, what: &str) -> Result<Vec<Axis>> {
    let mut axes: Vec<Axis> = Vec::new();
    for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        let (key, values) = opt.split_once('=').ok_or_else(|| Error::GridOption {
            grid: what.to_owned(),
            option: opt.to_owned(),
        })?;
        let values: Vec<String> = values
            .split('|')
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .collect();
        if values.is_empty() {
            return Err(Error::GridKey {
                grid: what.to_owned(),
                key: key.to_owned(),
            });
        }
        axes.push((key.trim().to_owned(), values));
    }
    Ok(axes)
}

/// How many points a grid has (saturating: a product past `usize` is
/// `usize::MAX`), known before any is expanded.
pub fn combinations(axes: &[Axis]) -> usize {
    axes.iter()
        .fold(1usize, |n, (_, vs)| n.saturating_mul(vs.len()))
}

/// The refusal of a grid with `total` points, more than [`MAX_CONFIGS`]
/// (`what` names the grid, `points` what its points are).
pub fn too_many(what: String, total: usize, points: &'static str) -> Error {
    Error::TooManyPoints {
        grid: what,
        total,
        points,
        limit: MAX_CONFIGS,
    }
}

/// Every point of a grid as its `(key, value)` pairs, in axis order, the
/// last key fastest. Check [`combinations`] first: this expands them all.
pub fn odometer(axes: &[Axis]) -> Vec<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut at = vec![0usize; axes.len()];
    loop {
        out.push(
            axes.iter()
                .zip(&at)
                .map(|((k, vs), &i)| (k.clone(), vs[i].clone()))
                .collect(),
        );
        let Some(pos) = (0..axes.len()).rev().find(|&p| at[p] + 1 < axes[p].1.len()) else {
            break;
        };
        at[pos] += 1;
        at[pos + 1..].iter_mut().for_each(|i| *i = 0);
    }
    out
}

/// The configurations of a comparison, in column order and without
/// duplicates (two spellings of one canonical spec are one column). The
/// interpreter always comes first; with a sweep and no `--profile`, the
/// perfect profiler is added as the reference of "speedup over perfect".
pub fn plan(profiles: &[String], sweeps: &[String]) -> Result<Vec<Choice>> {
    let mut configs = if profiles.is_empty() && sweeps.is_empty() {
        defaults()
    } else {
        let mut v = vec![Choice::None];
        if profiles.is_empty() {
            v.push(Choice::parse("perfect")?);
        }
        if !profiles.is_empty() {
            for s in split_specs(profiles)? {
                v.push(Choice::parse(&s)?);
            }
        }
        for grid in sweeps {
            for s in expand_sweep(grid)? {
                v.push(Choice::parse(&s).map_err(|source| Error::Sweep {
                    grid: grid.clone(),
                    source,
                })?);
            }
        }
        if v.len() > MAX_CONFIGS {
            return Err(Error::TooManyConfigs {
                count: v.len(),
                limit: MAX_CONFIGS,
            });
        }
        v
    };
    let mut seen = std::collections::HashSet::new();
    configs.retain(|c| seen.insert(c.spec_string()));
    Ok(configs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_lists_split_at_model_names() {
        let v = vec![
            "multihash:tables=4,entries=2048,perfect".to_owned(),
            "rap:eps=1%;conte,perfect:interval=1000,threshold=5%".to_owned(),
        ];
        assert_eq!(
            split_specs(&v).unwrap(),
            [
                "multihash:tables=4,entries=2048",
                "perfect",
                "rap:eps=1%",
                "conte",
                "perfect:interval=1000,threshold=5%"
            ]
        );
    }

    #[test]
    fn sweeps_expand_to_the_cartesian_product() {
        let g = expand_sweep("multihash:tables=1|2|4|8,entries=512|2048").unwrap();
        assert_eq!(g.len(), 8);
        assert_eq!(g[0], "multihash:tables=1,entries=512");
        assert_eq!(g[1], "multihash:tables=1,entries=2048");
        assert_eq!(g[7], "multihash:tables=8,entries=2048");
        let g = expand_sweep("rap:eps=1%|5%; conte").unwrap();
        assert_eq!(g, ["rap:eps=1%", "rap:eps=5%", "conte"]);
        assert!(matches!(
            expand_sweep("multihash:tables"),
            Err(Error::GridOption { .. })
        ));
        assert!(matches!(
            expand_sweep("multihash:tables="),
            Err(Error::GridKey { .. })
        ));
        assert_eq!(
            expand_sweep("perfect,multihash:tables=1|2").unwrap(),
            ["perfect", "multihash:tables=1", "multihash:tables=2"]
        );
    }

    #[test]
    fn huge_sweeps_are_refused_before_they_are_expanded() {
        // 10^8 combinations (and 10^80): refused at once, nothing expanded.
        let ten = "1|2|3|4|5|6|7|8|9|10";
        let grid = format!("multihash:{}", vec![format!("seed={ten}"); 8].join(","));
        let e = expand_sweep(&grid).unwrap_err();
        assert!(
            matches!(
                e,
                Error::TooManyPoints {
                    total: 100_000_000,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.contains("100000000 configurations") && e.contains("at most"),
            "{e}"
        );
        let grid = format!("multihash:{}", vec![format!("seed={ten}"); 80].join(","));
        let e = expand_sweep(&grid).unwrap_err().to_string();
        assert!(e.contains("more than 2^64"), "{e}");
        let ok = format!("multihash:{}", vec![format!("seed={ten}"); 3].join(","));
        assert_eq!(expand_sweep(&ok).unwrap().len(), 1000);
    }

    #[test]
    fn plans_start_with_the_interpreter_and_drop_duplicates() {
        let p = plan(&[], &[]).unwrap();
        assert_eq!(p.len(), 1 + MODEL_NAMES.len());
        assert_eq!(p[0], Choice::None);
        let p = plan(&["perfect,perfect:interval=10000,none".into()], &[]).unwrap();
        assert_eq!(p.len(), 2);
        let p = plan(&[], &["singlehash:entries=512|1024".into()]).unwrap();
        let names: Vec<&str> = p.iter().map(Choice::model_name).collect();
        assert_eq!(names, ["none", "perfect", "singlehash", "singlehash"]);
        assert!(matches!(plan(&["nosuch".into()], &[]), Err(Error::Spec(_))));
    }
}
