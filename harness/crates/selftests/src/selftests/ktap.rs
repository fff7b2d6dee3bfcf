//! A small typed reader of the KTAP a kselftest prints
//! (Documentation/dev-tools/ktap.rst; the Python tests' `ksft_run()` in
//! tools/testing/selftests/net/lib/py/ksft.py prints version 13 TAP with the
//! same result lines): the version line, the plan `1..N`, one result per case
//! (`ok N name`, `not ok N name`, each with an optional `# SKIP|XFAIL|TODO
//! reason` directive), the `# …` diagnostic lines before each result, and
//! anything else the program printed (a traceback on its way out).
//!
//! Results keep their names exactly as printed: a case that is renamed is
//! another case, never a pass of the old one. Nested (indented) KTAP is kept as
//! diagnostics of the result that closes it.

use serde::{Deserialize, Serialize};

/// A result's directive (`# SKIP reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Directive {
    /// `SKIP`: the case did not run its checks.
    Skip,
    /// `XFAIL`: the case failed as its test expects (ksft's `KsftXfailEx`).
    Xfail,
    /// `TODO`.
    Todo,
}

/// The outcome of one case, as ksft counts it in its `# Totals` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// `ok` without a directive.
    Pass,
    /// `ok … # SKIP` (or a `not ok … # SKIP`).
    Skip,
    /// `ok … # XFAIL` (or `# TODO`).
    Xfail,
    /// `not ok` without a directive.
    Fail,
}

/// One result line and the diagnostics before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseResult {
    /// The number on the line.
    pub number: u32,
    /// `ok` (true) or `not ok`.
    pub ok: bool,
    /// The description as printed (`queues.get_queues`, `toeplitz.test.tcp_ipv4`).
    pub name: String,
    /// The directive, if any.
    pub directive: Option<Directive>,
    /// The directive's reason (`SKIP <reason>`), empty without one.
    pub reason: String,
    /// The `# ` lines printed since the previous result, without the `# `.
    pub diagnostics: Vec<String>,
}

impl CaseResult {
    /// How ksft counts this result.
    pub fn outcome(&self) -> Outcome {
        match (self.ok, &self.directive) {
            (_, Some(Directive::Skip)) => Outcome::Skip,
            (_, Some(Directive::Xfail | Directive::Todo)) => Outcome::Xfail,
            (true, None) => Outcome::Pass,
            (false, None) => Outcome::Fail,
        }
    }
}

/// One program's KTAP output, read.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Ktap {
    /// `TAP version 13` / `KTAP version 1`, as printed, if there was one.
    pub version: Option<String>,
    /// The plan's count (`1..N`), if there was a plan.
    pub plan: Option<u32>,
    /// The results, in order.
    pub results: Vec<CaseResult>,
    /// `# ` lines after the last result (ksft's `# Totals: …`).
    pub trailing: Vec<String>,
    /// Lines that are not KTAP (a Python traceback on stderr, a shell's message).
    pub other: Vec<String>,
}

impl Ktap {
    /// Whether the results match the plan: one per planned number, in order.
    pub fn complete(&self) -> bool {
        self.plan.is_some_and(|n| {
            self.results.len() == n as usize && self.results.iter().enumerate().all(|(i, r)| r.number as usize == i + 1)
        })
    }
}

/// A result line's parts, or None for another line.
fn result_line(line: &str) -> Option<(bool, u32, String, Option<Directive>, String)> {
    let (ok, rest) = if let Some(r) = line.strip_prefix("not ok ") {
        (false, r)
    } else if let Some(r) = line.strip_prefix("ok ") {
        (true, r)
    } else {
        return None;
    };
    let (number, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let number: u32 = number.parse().ok()?;
    let (name, directive) = match rest.split_once(" # ") {
        Some((n, d)) => (n, Some(d)),
        None => match rest.strip_prefix("# ") {
            Some(d) => ("", Some(d)),
            None => (rest, None),
        },
    };
    let (directive, reason) = match directive {
        None => (None, String::new()),
        Some(d) => {
            let (word, reason) = d.split_once(' ').unwrap_or((d, ""));
            let kind = match word.to_ascii_uppercase().as_str() {
                "SKIP" => Some(Directive::Skip),
                "XFAIL" => Some(Directive::Xfail),
                "TODO" => Some(Directive::Todo),
                _ => None,
            };
            // An unknown word after `#` is part of the description's comment, not a directive.
            (kind, if kind.is_some() { reason.trim().to_owned() } else { d.trim().to_owned() })
        }
    };
    Some((ok, number, name.trim().to_owned(), directive, reason))
}

/// Read `text` (one program's output).
pub fn parse(text: &str) -> Ktap {
    let mut k = Ktap::default();
    let mut pending: Vec<String> = Vec::new();
    for raw in text.lines() {
        let line = raw.trim_end_matches('\r');
        if line.starts_with(' ') || line.starts_with('\t') {
            // Nested KTAP (a subtest's lines): diagnostics of the result that closes it.
            pending.push(line.trim().to_owned());
            continue;
        }
        if line.starts_with("TAP version ") || line.starts_with("KTAP version ") {
            k.version.get_or_insert_with(|| line.to_owned());
            continue;
        }
        if let Some(n) = line.strip_prefix("1..").and_then(|n| n.trim().parse().ok()) {
            k.plan.get_or_insert(n);
            continue;
        }
        if let Some(d) = line.strip_prefix('#') {
            pending.push(d.strip_prefix(' ').unwrap_or(d).to_owned());
            continue;
        }
        if let Some((ok, number, name, directive, reason)) = result_line(line) {
            k.results.push(CaseResult {
                number,
                ok,
                name,
                directive,
                reason,
                diagnostics: std::mem::take(&mut pending),
            });
            continue;
        }
        if !line.trim().is_empty() {
            k.other.push(line.to_owned());
        }
    }
    k.trailing = pending;
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape ksft_run() prints (tools/testing/selftests/net/lib/py/ksft.py, Linux 7.3).
    const QUEUES: &str = "TAP version 13\n1..4\n# Interface: eth0, driver: mana\nok 1 queues.get_queues\n\
        # Check| At /ksrc/queues.py, line 90, in addremove_queues:\n# Check failed 3 != 4\n\
        not ok 2 queues.addremove_queues\nok 3 queues.check_down\nok 4 queues.check_xsk # SKIP xdp_helper not built\n\
        # Totals: pass:2 fail:1 xfail:0 xpass:0 skip:1 error:0\n";

    #[test]
    fn ksft_output_reads_as_results_with_their_diagnostics() {
        let k = parse(QUEUES);
        assert_eq!(k.version.as_deref(), Some("TAP version 13"));
        assert_eq!(k.plan, Some(4));
        assert!(k.complete());
        let outcomes: Vec<Outcome> = k.results.iter().map(CaseResult::outcome).collect();
        assert_eq!(outcomes, [Outcome::Pass, Outcome::Fail, Outcome::Pass, Outcome::Skip]);
        assert_eq!(k.results[0].diagnostics, ["Interface: eth0, driver: mana"]);
        assert_eq!(k.results[1].name, "queues.addremove_queues");
        assert_eq!(k.results[1].diagnostics.len(), 2);
        assert_eq!(k.results[3].reason, "xdp_helper not built");
        assert_eq!(k.trailing, ["Totals: pass:2 fail:1 xfail:0 xpass:0 skip:1 error:0"]);
    }

    #[test]
    fn xfail_and_todo_count_as_expected_failures_and_a_hash_without_a_directive_stays_in_the_name() {
        let k = parse("1..3\nok 1 gro.test.hw_ipv4 # XFAIL no HW GRO\nnot ok 2 a # TODO later\nok 3 b # c\n");
        assert_eq!(k.results[0].outcome(), Outcome::Xfail);
        assert_eq!(k.results[0].reason, "no HW GRO");
        assert_eq!(k.results[1].outcome(), Outcome::Xfail);
        assert_eq!((k.results[2].outcome(), k.results[2].reason.as_str()), (Outcome::Pass, "c"));
    }

    #[test]
    fn a_program_that_died_is_incomplete_and_keeps_its_traceback() {
        let k = parse(
            "TAP version 13\n1..3\nok 1 x.a\nTraceback (most recent call last):\n  File \"x.py\"\nOSError: boom\n",
        );
        assert!(!k.complete());
        assert_eq!(k.results.len(), 1);
        assert_eq!(k.other, ["Traceback (most recent call last):", "OSError: boom"]);
        assert!(!parse("Failed importing `net` library\n").complete(), "no plan at all");
    }

    #[test]
    fn a_renamed_case_is_another_case() {
        let before = parse("1..1\nok 1 queues.get_queues\n");
        let after = parse("1..1\nok 1 queues.get_queue_count\n");
        assert_ne!(before.results[0].name, after.results[0].name);
    }

    #[test]
    fn the_whole_file_skip_of_a_missing_library_has_an_empty_case() {
        // net/lib/py/ynl.py: ktap_result(True, comment="SKIP") after a failed YNL import.
        let k = parse("# Failed importing `ynl` library from kernel sources\nok 1 stats # SKIP\n");
        assert_eq!((k.results[0].name.as_str(), k.results[0].outcome()), ("stats", Outcome::Skip));
    }
}
