//! The checked-in baselines: for each kernel series, the selftest cases the
//! `mana` driver cannot pass because it lacks a feature, each with the result
//! it gives instead and the driver fact that explains it
//! (`guest-images/selftests/baseline-<series>.toml`).
//!
//! A case not in the baseline must pass: its skip, expected failure or
//! failure fails the run. A case in the baseline that gives the result the
//! baseline names is an expected one; any other result of it is judged as if
//! it were not there (a pass is a pass, and the entry is reported as stale).
//!
//! `result = "flaky"` is for a case whose result depends on something the
//! run does not control, and whose reason names it (stats.py's
//! `procfs_downup_hammer` fails only once a packet was counted before its
//! first read): it may fail or pass, and neither is stale. It never covers a
//! skip or an expected failure. A flaky entry may say what its failure
//! needs to be the expected one (`needs = "no drops"`: the frames between
//! the MANA and the remote end were late, not lost; the verdict reads the
//! counters of the case's own test program), and what lines its output must show (`shows`: the
//! test's own count that every frame it checked was right); a failure that
//! does not meet them counts as a real one.

use super::ktap::Outcome;
use serde::Deserialize;

/// The baselines shipped with the source tree, compiled in: (series, text).
pub const SHIPPED: &[(&str, &str)] = &[
    ("7.3", include_str!("../../../../../guest-images/selftests/baseline-7.3.toml")),
    ("6.12", include_str!("../../../../../guest-images/selftests/baseline-6.12.toml")),
];

/// What a baseline entry expects of its case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Expected {
    /// The case skips (`ok … # SKIP`).
    Skip,
    /// The case reports an expected failure (`ok … # XFAIL`).
    Xfail,
    /// The case fails (`not ok`) because of the driver's limit.
    Fail,
    /// The case fails or passes, depending on a condition its reason names
    /// (both are expected; a pass is not stale).
    Flaky,
}

impl Expected {
    /// Whether `outcome` is this expectation.
    pub fn matches(self, outcome: Outcome) -> bool {
        matches!(
            (self, outcome),
            (Expected::Skip, Outcome::Skip)
                | (Expected::Xfail, Outcome::Xfail)
                | (Expected::Fail | Expected::Flaky, Outcome::Fail)
                | (Expected::Flaky, Outcome::Pass)
        )
    }

    /// The word the baseline files use (`skip`, `xfail`, `fail`, `flaky`).
    pub fn word(self) -> &'static str {
        match self {
            Expected::Skip => "skip",
            Expected::Xfail => "xfail",
            Expected::Fail => "fail",
            Expected::Flaky => "flaky",
        }
    }
}

/// One expected case, or a family of cases one fact explains.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The case's name as its KTAP line prints it (`stats.check_pause`), or a
    /// shell pattern over names (`gro.test.lro_*`: every LRO variant).
    pub case: String,
    /// Its result on the driver.
    pub result: Expected,
    /// The driver fact, quoted with the file and kernel version it comes from.
    pub reason: String,
    /// What a flaky case's failure needs to be the expected one (only with
    /// `result = "flaky"`).
    #[serde(default)]
    pub needs: Option<Condition>,
    /// Lines a flaky case's failure must show among its diagnostics to be
    /// the expected one: shell patterns over whole lines (`*count: pass=*
    /// nohash=0 fail=0`: every frame the test checked was right, there were
    /// only too few); each must match a line. Only with `result = "flaky"`.
    #[serde(default)]
    pub shows: Vec<String>,
}

/// A condition a flaky entry's failure needs, read from the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
pub enum Condition {
    /// `"no drops"`: no frame between the MANA netdev and the remote end was
    /// lost on the way while the case's test program ran: the device dropped
    /// none on a receiving port and lost no completion, the guest netdev
    /// counted no `rx_dropped` or `rx_missed_errors`, the remote NIC no
    /// `rx_dropped` (a counter that restarted with nothing since is no
    /// zero). The case then failed because its frames came late.
    #[serde(rename = "no drops")]
    NoDrops,
}

impl Condition {
    /// The words the baseline files use.
    pub fn word(self) -> &'static str {
        match self {
            Condition::NoDrops => "no drops",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    expect: Vec<Entry>,
}

/// A series' baseline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Baseline {
    /// The series (`7.3`), empty for none.
    pub series: String,
    /// The entries.
    pub entries: Vec<Entry>,
}

/// Errors reading a baseline.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BaselineError {
    /// The TOML does not parse or has unknown fields.
    #[error("{origin}: {why}")]
    Parse {
        /// Where the text comes from.
        origin: String,
        /// The parser's message (with line and column).
        why: String,
    },
    /// An entry is out of shape.
    #[error("{origin}: {why}")]
    Invalid {
        /// Where the text comes from.
        origin: String,
        /// What is wrong.
        why: String,
    },
}

impl Baseline {
    /// Parse a baseline's text; `origin` names it in errors.
    ///
    /// # Errors
    /// [`BaselineError`] for bad TOML, a case named twice, an entry without a
    /// reason, or `needs` or `shows` on an entry that is not flaky.
    pub fn parse(series: &str, text: &str, origin: &str) -> Result<Baseline, BaselineError> {
        let file: File =
            toml::from_str(text).map_err(|e| BaselineError::Parse { origin: origin.to_owned(), why: e.to_string() })?;
        let mut seen = std::collections::BTreeSet::new();
        for e in &file.expect {
            let invalid = |why: String| BaselineError::Invalid { origin: origin.to_owned(), why };
            if !seen.insert(e.case.as_str()) {
                return Err(invalid(format!("case {} is listed twice", e.case)));
            }
            if e.reason.trim().is_empty() {
                return Err(invalid(format!("case {}: no reason", e.case)));
            }
            if !e.shows.is_empty() && e.result != Expected::Flaky {
                return Err(invalid(format!(
                    "case {}: shows is for a flaky entry, not a {} one",
                    e.case,
                    e.result.word()
                )));
            }
            if let (Some(c), false) = (e.needs, e.result == Expected::Flaky) {
                return Err(invalid(format!(
                    "case {}: needs = \"{}\" is for a flaky entry, not a {} one",
                    e.case,
                    c.word(),
                    e.result.word()
                )));
            }
        }
        Ok(Baseline { series: series.to_owned(), entries: file.expect })
    }

    /// The shipped baseline of `series` (`7.3`, `6.12`), or an empty one for
    /// a series without one (every non-pass then fails).
    ///
    /// # Errors
    /// A shipped file that does not parse (a build-time mistake).
    pub fn shipped(series: &str) -> Result<Baseline, BaselineError> {
        match SHIPPED.iter().find(|(s, _)| *s == series) {
            Some((s, text)) => Baseline::parse(s, text, &format!("guest-images/selftests/baseline-{s}.toml")),
            None => Ok(Baseline::default()),
        }
    }

    /// The entry of `case`, if any: the one that names it exactly, else the
    /// first pattern that matches it.
    pub fn entry(&self, case: &str) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.case == case)
            .or_else(|| self.entries.iter().find(|e| super::catalog::glob(&e.case, case)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_baselines_parse_and_every_entry_names_its_driver_source() {
        for (series, _) in SHIPPED {
            let b = Baseline::shipped(series).expect("parses");
            for e in &b.entries {
                assert!(
                    ["drivers/", "tools/", "net/", "CONFIG_"].iter().any(|f| e.reason.contains(f)),
                    "{}: the reason names no file of the kernel tree: {}",
                    e.case,
                    e.reason
                );
                assert!(e.reason.contains(series), "{}: the reason names no kernel version: {}", e.case, e.reason);
            }
        }
        assert!(Baseline::shipped("6.1").expect("none").entries.is_empty());
    }

    #[test]
    fn a_case_listed_twice_or_without_a_reason_is_refused() {
        let twice = "[[expect]]\ncase = \"a.b\"\nresult = \"skip\"\nreason = \"r\"\n[[expect]]\ncase = \"a.b\"\nresult = \"fail\"\nreason = \"r\"\n";
        let e = Baseline::parse("x", twice, "b.toml").expect_err("twice").to_string();
        assert!(e.contains("b.toml: case a.b is listed twice"), "{e}");
        let bare = "[[expect]]\ncase = \"a.b\"\nresult = \"skip\"\nreason = \" \"\n";
        assert!(Baseline::parse("x", bare, "b.toml").expect_err("no reason").to_string().contains("no reason"));
        let bad = "[[expect]]\ncase = \"a.b\"\nresult = \"maybe\"\nreason = \"r\"\n";
        assert!(Baseline::parse("x", bad, "b.toml").is_err());
    }

    #[test]
    fn an_exact_entry_wins_over_a_pattern_and_a_pattern_covers_its_family() {
        let text = "[[expect]]\ncase = \"gro.test.hw_*\"\nresult = \"xfail\"\nreason = \"r\"\n\
                    [[expect]]\ncase = \"gro.test.hw_ipv4_large_max\"\nresult = \"fail\"\nreason = \"s\"\n";
        let b = Baseline::parse("x", text, "b.toml").expect("parses");
        assert_eq!(b.entry("gro.test.hw_ipv6_ack").map(|e| e.result), Some(Expected::Xfail));
        assert_eq!(b.entry("gro.test.hw_ipv4_large_max").map(|e| e.result), Some(Expected::Fail));
        assert!(b.entry("gro.test.sw_ipv4_ack").is_none());
    }

    #[test]
    fn an_expectation_matches_only_its_own_outcome() {
        assert!(Expected::Skip.matches(Outcome::Skip));
        assert!(!Expected::Skip.matches(Outcome::Fail));
        assert!(Expected::Fail.matches(Outcome::Fail));
        assert!(!Expected::Xfail.matches(Outcome::Pass));
    }

    #[test]
    fn a_flaky_case_may_fail_or_pass_but_not_skip() {
        let text = "[[expect]]\ncase = \"stats.procfs_downup_hammer\"\nresult = \"flaky\"\nreason = \"r\"\n";
        let b = Baseline::parse("x", text, "b.toml").expect("parses");
        let e = b.entry("stats.procfs_downup_hammer").expect("entry");
        assert_eq!(e.result, Expected::Flaky);
        assert!(e.result.matches(Outcome::Fail));
        assert!(e.result.matches(Outcome::Pass));
        assert!(!e.result.matches(Outcome::Skip));
        assert!(!e.result.matches(Outcome::Xfail));
        assert_eq!(e.result.word(), "flaky");
        assert_eq!(e.needs, None, "no condition unless the entry names one");
    }

    #[test]
    fn a_flaky_entry_may_need_no_drops_and_only_a_flaky_one() {
        let text = "[[expect]]\ncase = \"csum.ipv*_rx_*\"\nresult = \"flaky\"\nneeds = \"no drops\"\nreason = \"r\"\n";
        let b = Baseline::parse("x", text, "b.toml").expect("parses");
        assert_eq!(b.entry("csum.ipv4_rx_udp").and_then(|e| e.needs), Some(Condition::NoDrops));
        let fail = "[[expect]]\ncase = \"a.b\"\nresult = \"fail\"\nneeds = \"no drops\"\nreason = \"r\"\n";
        let e = Baseline::parse("x", fail, "b.toml").expect_err("needs on a fail entry").to_string();
        assert!(e.contains("case a.b: needs = \"no drops\" is for a flaky entry, not a fail one"), "{e}");
        let shows = "[[expect]]\ncase = \"a.b\"\nresult = \"skip\"\nshows = [\"x\"]\nreason = \"r\"\n";
        let e = Baseline::parse("x", shows, "b.toml").expect_err("shows on a skip entry").to_string();
        assert!(e.contains("case a.b: shows is for a flaky entry, not a skip one"), "{e}");
        let unknown = "[[expect]]\ncase = \"a.b\"\nresult = \"flaky\"\nneeds = \"luck\"\nreason = \"r\"\n";
        let e = Baseline::parse("x", unknown, "b.toml").expect_err("an unknown condition").to_string();
        assert!(e.contains("luck"), "{e}");
    }
}
