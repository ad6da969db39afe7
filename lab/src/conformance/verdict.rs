//! The verdict: per criterion, the intervals it applied to, those that
//! conformed, and the worst violations, as text or JSON.

use super::*;

/// The outcome of one criterion.
#[derive(Clone, Debug, Serialize)]
pub struct Criterion {
    /// What is checked, as the verdict prints it (`hot entries found`,
    /// `counts within tolerance`, ...; see the module doc's list).
    pub name: &'static str,
    /// Whether at least the quorum of the checked intervals conformed
    /// (vacuously true when none had anything to check).
    pub passed: bool,
    /// Intervals that had something to check.
    pub checked: u64,
    /// Of those, the intervals that conformed.
    pub conforming: u64,
    /// The worst violations, as readable lines.
    pub evidence: Vec<String>,
}

/// The format version of the verdict as JSON (`toyvm verify --json`).
pub const VERDICT_JSON_FORMAT: u32 = 1;

/// The verdict of pass 2.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// The canonical spec of the model under test (followed by `(JIT on)`
    /// for [`check_jit`]).
    pub spec: String,
    /// Intervals judged: the reference's (pass 2), or those of the JIT run
    /// ([`check_jit`]).
    pub intervals: u64,
    /// The tolerances the criteria were judged with.
    pub tolerances: Tolerances,
    /// Remarks on how the check was set up (e.g. tolerances given on the
    /// command line in place of the reference's).
    pub notes: Vec<String>,
    /// The criteria in the module doc's order (hot ranges only for RAP;
    /// output and reports-were-hot for [`check_jit`]).
    pub criteria: Vec<Criterion>,
}

impl Verdict {
    /// Whether the model passes: every criterion passed.
    pub fn passed(&self) -> bool {
        self.criteria.iter().all(|c| c.passed)
    }

    /// The verdict as `toyvm verify` prints it: the setup, one `PASS` or
    /// `FAIL` line per criterion followed by its evidence (at most five
    /// violations), then the overall `PASS` or `FAIL`.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "verify {} over {} intervals", self.spec, self.intervals);
        let t = &self.tolerances;
        let _ = writeln!(
            s,
            "  margin {}, tolerance {}, quorum {}",
            t.margin, t.tolerance, t.quorum
        );
        for n in &self.notes {
            let _ = writeln!(s, "  note: {n}");
        }
        for c in &self.criteria {
            let _ = writeln!(
                s,
                "  {} {:<28} {}/{} intervals conform",
                if c.passed { "PASS" } else { "FAIL" },
                c.name,
                c.conforming,
                c.checked
            );
            for e in &c.evidence {
                let _ = writeln!(s, "       {e}");
            }
        }
        let _ = writeln!(s, "{}", if self.passed() { "PASS" } else { "FAIL" });
        s
    }
}
