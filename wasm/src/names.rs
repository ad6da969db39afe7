//! Names for toyvm functions and imports that its assembler accepts.

use std::collections::HashSet;

/// Longest name kept (longer names, such as some mangled Rust or C++
/// symbols, are cut and made unique).
const MAX_NAME: usize = 120;

/// `raw` made into an identifier toyvm's assembler accepts
/// (`[A-Za-z_.][A-Za-z0-9_.]*`, not a register name such as `r12`), or
/// `fallback` when nothing usable is left.
pub fn sanitize(raw: &str, fallback: &str) -> String {
    let mut s: String = raw
        .chars()
        .take(MAX_NAME)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '_') {
        s = fallback.to_owned();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if is_register_name(&s) {
        s.push('_');
    }
    s
}

fn is_register_name(s: &str) -> bool {
    s.strip_prefix('r')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Hands out names unique within one program.
#[derive(Debug, Default)]
pub struct Unique(HashSet<String>);

impl Unique {
    /// `name`, or `name.2`, `name.3`, ... when taken.
    pub fn take(&mut self, name: String) -> String {
        if self.0.insert(name.clone()) {
            return name;
        }
        let mut n = 2u64;
        loop {
            let candidate = format!("{name}.{n}");
            if self.0.insert(candidate.clone()) {
                return candidate;
            }
            n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_identifiers_and_stay_unique() {
        assert_eq!(sanitize("main", "f0"), "main");
        assert_eq!(sanitize("foo::bar<T>", "f0"), "foo__bar_T_");
        assert_eq!(sanitize("", "f3"), "f3");
        assert_eq!(sanitize("$$", "f3"), "f3");
        assert_eq!(sanitize("9lives", "f3"), "_9lives");
        assert_eq!(sanitize("r12", "f3"), "r12_");
        assert_eq!(sanitize(&"x".repeat(500), "f").len(), MAX_NAME);
        let mut u = Unique::default();
        assert_eq!(u.take("a".into()), "a");
        assert_eq!(u.take("a".into()), "a.2");
        assert_eq!(u.take("a.2".into()), "a.2.2");
    }
}
