//! The kernel's drivers/net selftests as checks (`cargo xtask selftests`,
//! `run --selftests`): every case a check `selftests.<case>` (its name as the
//! test's KTAP prints it, `selftests.queues.get_queues`), every test program a
//! check `selftests.<program>` (it ran to its end, its plan complete), and
//! the remote end's setup `selftests.setup`; the [`SelftestsReport`] keeps
//! the per-program counts and each case's result for every format.
//!
//! A case passes when it passes. A case that skips, fails or fails as
//! expected (XFAIL) passes only when the series' baseline
//! ([`crate::selftests::baseline`]) names that result with the driver fact
//! that explains it: the check is then a SKIP whose message quotes the
//! baseline. Anything else fails: an unexplained skip too, since every case
//! that did not pass needs its reason. A case the baseline calls `flaky`
//! (it fails or passes on a condition the reason names) passes when it
//! passes and is expected when it fails; neither makes its entry stale.
//! When the entry says its failure needs no drops (`needs = "no drops"`),
//! the failure is expected only if the counters of the case's own program
//! ([`ProgramRx`], between the marks before and after it) show that nothing
//! between the MANA and the remote end was lost; otherwise it fails, naming
//! the counter. The run's other programs' drops do not count against it.

use super::check::{Check, CheckStatus};
use super::selftest_missed::MissedCheck;
pub use super::selftest_rx::{DeviceMark, DeviceRx, ProgramRx, RxAccount};
use crate::guest_protocol::{GuestSelftests, SelftestExit};
use crate::selftests::baseline::{Baseline, Condition, Expected};
use crate::selftests::catalog::glob;
use crate::selftests::ktap::{self, Outcome};
use crate::text::plural;
use mana_device_api::traffic::Totals;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a selftest run judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelftestsReport {
    /// Where the tests came from (`linux-source-7.3 7.3.4-1~bpo13+1`, a tree's path).
    pub source: String,
    /// The baseline that judged them (`guest-images/selftests/baseline-7.3.toml`), or `none`.
    pub baseline: String,
    /// The remote end's setup status in the guest (0: ready), None if it did not run.
    pub setup: Option<i32>,
    /// The test programs' timer slack, microseconds (0: the kernel's own, 50 µs).
    #[serde(default)]
    pub timer_slack_us: u32,
    /// One entry per test program, in the order they ran.
    pub programs: Vec<ProgramResult>,
    /// Baseline entries of programs that ran whose case gave another result
    /// or did not appear: `case: expected <result>, got <result>|absent`.
    pub stale_baseline: Vec<String>,
    /// Where the MANA netdev's received frames went by the end of the run.
    #[serde(default)]
    pub rx: RxAccount,
}

/// Counts of a program's cases, as ksft's `# Totals` counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counts {
    /// `ok` without a directive.
    pub ok: u32,
    /// `# SKIP`.
    pub skip: u32,
    /// `# XFAIL` (and `# TODO`).
    pub xfail: u32,
    /// `not ok`.
    pub fail: u32,
}

/// One test program's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramResult {
    /// Relative to drivers/net (`hw/csum.py`).
    pub file: String,
    /// Exit status, `timeout`, or `none` (no exit line).
    pub exit: String,
    /// Guest seconds it took.
    pub seconds: Option<f64>,
    /// Whether its KTAP plan was complete (one result per planned case).
    pub complete: bool,
    /// Its cases' results as the test printed them.
    pub counts: Counts,
    /// Each case.
    pub cases: Vec<CaseVerdict>,
    /// Output lines that are not KTAP (a traceback), at most the last 40.
    pub other_output: Vec<String>,
    /// Its frames: the difference of the marks before and after it.
    #[serde(default)]
    pub rx: ProgramRx,
}

/// One case's result and its judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseVerdict {
    /// The name as printed (`queues.get_queues`).
    pub name: String,
    /// Its result.
    pub outcome: Outcome,
    /// The directive's reason (`SKIP <reason>`).
    pub reason: String,
    /// What the baseline expects of it, if it names it.
    pub expected: Option<Expected>,
    /// The baseline's reason.
    pub baseline_reason: Option<String>,
    /// The check's status.
    pub status: CheckStatus,
    /// The case's diagnostic lines (kept for cases that did not pass).
    pub diagnostics: Vec<String>,
    /// For a failure the baseline calls flaky on conditions (`needs`,
    /// `shows`) the run did not meet: the counters and the missing lines that
    /// broke them (empty otherwise).
    #[serde(default)]
    pub unmet: Vec<String>,
}

/// Everything the judgement reads.
pub struct SelftestsInput<'a> {
    /// The report's selftest items.
    pub guest: &'a GuestSelftests,
    /// The programs the run asked for, in order.
    pub asked: &'a [String],
    /// The series' baseline.
    pub baseline: &'a Baseline,
    /// The tests' source label.
    pub source: &'a str,
    /// The test programs' timer slack, microseconds (0: the kernel's own).
    pub timer_slack_us: u32,
    /// The setup's error lines (`stderr selftest-setup`).
    pub setup_errors: &'a [String],
    /// The device's traffic totals when the report began, if read.
    pub device_totals: Option<&'a Totals>,
    /// The device at each `MANARIG-SELFTEST` mark whose status was read.
    pub device_marks: &'a BTreeMap<u32, DeviceMark>,
    /// The guest's kernel reports the device's no-WQE drops
    /// (MANA_QUERY_GF_STAT) as eth0's `rx_missed_errors` (7.x: 7.3.4's
    /// `mana_get_stats64()`; 6.12 never sets it): each mark's reading is
    /// then checked against the device ([`super::selftest_missed`]).
    pub missed_is_no_wqe: bool,
}

fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "ok",
        Outcome::Skip => "skip",
        Outcome::Xfail => "xfail",
        Outcome::Fail => "fail",
    }
}

fn expected_word(e: Expected) -> &'static str {
    e.word()
}

/// A program's name in check names: its file without `.py` and folder
/// (`hw/csum.py` → `csum`), as ksft names its cases.
pub fn program_name(file: &str) -> &str {
    let base = file.rsplit('/').next().unwrap_or(file);
    base.strip_suffix(".py").unwrap_or(base)
}

fn judge_case(r: &ktap::CaseResult, baseline: &Baseline, rx: &ProgramRx) -> CaseVerdict {
    let outcome = r.outcome();
    let entry = baseline.entry(&r.name);
    // A flaky failure's conditions, when its entry names them: what broke them.
    let mut unmet = Vec::new();
    if let (Some(e), Outcome::Fail) = (entry, outcome) {
        if e.needs == Some(Condition::NoDrops) {
            unmet.extend(rx.losses());
        }
        for pattern in &e.shows {
            if !r.diagnostics.iter().any(|l| glob(pattern, l.trim())) {
                unmet.push(format!("its output has no line like `{pattern}`"));
            }
        }
    }
    let status = match (outcome, entry) {
        (Outcome::Pass, _) => CheckStatus::Pass,
        (o, Some(e)) if e.result.matches(o) && unmet.is_empty() => CheckStatus::Skip,
        _ => CheckStatus::Fail,
    };
    CaseVerdict {
        name: r.name.clone(),
        outcome,
        reason: r.reason.clone(),
        expected: entry.map(|e| e.result),
        baseline_reason: entry.map(|e| e.reason.clone()),
        status,
        diagnostics: if outcome == Outcome::Pass { Vec::new() } else { r.diagnostics.clone() },
        unmet,
    }
}

fn case_check(c: &CaseVerdict) -> Check {
    let got = outcome_word(c.outcome);
    let with_reason = if c.reason.is_empty() { got.to_owned() } else { format!("{got}: {}", c.reason) };
    let message = match (c.status, &c.baseline_reason, c.expected) {
        (CheckStatus::Pass, Some(why), Some(Expected::Flaky)) => format!("ok (baseline: flaky: {why})"),
        (CheckStatus::Pass, _, _) => "ok".to_owned(),
        (CheckStatus::Skip, Some(why), _) => format!("expected {with_reason} (baseline: {why})"),
        (_, Some(_), Some(Expected::Flaky)) if !c.unmet.is_empty() => {
            format!("{with_reason}; the baseline's flaky entry does not hold: {}", c.unmet.join(", "))
        }
        (_, Some(_), Some(e)) => format!("{with_reason}; the baseline expects {}", expected_word(e)),
        _ => format!("{with_reason}; not in the baseline"),
    };
    let mut check = Check::new(format!("selftests.{}", c.name), c.status, message);
    if c.status == CheckStatus::Fail {
        check.detail = c.diagnostics.iter().rev().take(30).rev().map(|l| clip(l)).collect();
    }
    check
}

/// Longest diagnostic line a check keeps (ping.py echoes a 64 KB payload in
/// its failed command line).
const LINE_MAX: usize = 300;

fn clip(line: &str) -> String {
    if line.len() <= LINE_MAX {
        return line.to_owned();
    }
    let mut end = LINE_MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &line[..end], line.len())
}

/// The report and the checks of a selftest run.
pub fn judge_selftests(input: &SelftestsInput<'_>) -> (SelftestsReport, Vec<Check>) {
    let mut checks = Vec::new();
    let g = input.guest;
    match g.setup {
        Some(0) => checks.push(Check::new(
            "selftests.setup",
            CheckStatus::Pass,
            "the remote end is ready: the second NIC in netns remote, both ends addressed",
        )),
        Some(rc) => {
            let mut c = Check::new(
                "selftests.setup",
                CheckStatus::Fail,
                format!("setting up the remote end failed (status {rc}): the endpoint tests cannot reach it"),
            );
            c.detail = input.setup_errors.to_vec();
            checks.push(c);
        }
        None => checks.push(Check::new(
            "selftests.setup",
            CheckStatus::Fail,
            "the guest did not run the selftests (no MANA netdev, or an agent without manarig.selftests)",
        )),
    }
    let rx =
        RxAccount { device: input.device_totals.map(DeviceRx::of), guest: g.netdev.clone(), remote: g.remote.clone() };
    let mut programs = Vec::new();
    let mut stale = Vec::new();
    for (to, file) in (1u32..).zip(input.asked) {
        let run = g.runs.iter().find(|r| &r.file == file);
        let text = run.map(|r| r.output.join("\n")).unwrap_or_default();
        let k = ktap::parse(&text);
        // The agent marks before the first program and after each one.
        let from = to - 1;
        let program_rx = ProgramRx::between(
            (from, to),
            (g.mark(from), g.mark(to)),
            (input.device_marks.get(&from), input.device_marks.get(&to)),
            input.missed_is_no_wqe,
        );
        let cases: Vec<CaseVerdict> = k.results.iter().map(|r| judge_case(r, input.baseline, &program_rx)).collect();
        let mut counts = Counts::default();
        for c in &cases {
            match c.outcome {
                Outcome::Pass => counts.ok += 1,
                Outcome::Skip => counts.skip += 1,
                Outcome::Xfail => counts.xfail += 1,
                Outcome::Fail => counts.fail += 1,
            }
        }
        let exit = run.and_then(|r| r.exit);
        let seconds = run.and_then(|r| r.seconds);
        let complete = k.complete();
        let name = program_name(file);
        // The program ran to its end: a complete plan and ksft's exit status
        // (0 all passed or skipped, 1 some case failed).
        let (status, message) = match exit {
            None => (CheckStatus::Fail, format!("{file}: the guest reported no end of it")),
            Some(SelftestExit::Timeout) => {
                (CheckStatus::Fail, format!("{file}: stopped at the timeout after {} s", seconds.unwrap_or(0.0)))
            }
            Some(SelftestExit::Status(rc)) if !complete => (
                CheckStatus::Fail,
                format!(
                    "{file}: exited with status {rc} after {} of {} planned cases{}",
                    k.results.len(),
                    k.plan.map_or("no".to_owned(), |n| n.to_string()),
                    if rc == 4 { " (status 4: the tests' Python library could not be imported)" } else { "" }
                ),
            ),
            Some(SelftestExit::Status(rc)) if rc != 0 && rc != 1 => {
                (CheckStatus::Fail, format!("{file}: exited with status {rc}"))
            }
            Some(SelftestExit::Status(_)) => (
                CheckStatus::Pass,
                format!(
                    "{file}: {} cases, {} ok, {} skip, {} xfail, {} fail in {:.0} s",
                    k.results.len(),
                    counts.ok,
                    counts.skip,
                    counts.xfail,
                    counts.fail,
                    seconds.unwrap_or(0.0)
                ),
            ),
        };
        let mut check = Check::new(format!("selftests.{name}"), status, message);
        if status == CheckStatus::Fail {
            check.detail = k.other.iter().rev().take(20).rev().map(|l| clip(l)).collect();
        }
        checks.push(check);
        checks.extend(cases.iter().map(case_check));
        for e in input.baseline.entries.iter().filter(|e| e.case.split('.').next() == Some(name)) {
            // The cases this entry judges (a pattern's cases without an exact entry of their own).
            let judged: Vec<&CaseVerdict> = cases
                .iter()
                .filter(|c| input.baseline.entry(&c.name).is_some_and(|owner| std::ptr::eq(owner, e)))
                .collect();
            if judged.is_empty() {
                stale.push(format!("{}: expected {}, absent", e.case, expected_word(e.result)));
            }
            // A pass of a case the baseline expects to fail is stale; a
            // flaky case's pass is one of its two expected results.
            for c in judged.into_iter().filter(|c| !e.result.matches(c.outcome) && c.outcome == Outcome::Pass) {
                stale.push(format!("{}: expected {}, got ok", c.name, expected_word(e.result)));
            }
        }
        programs.push(ProgramResult {
            file: file.clone(),
            exit: match exit {
                Some(SelftestExit::Status(rc)) => rc.to_string(),
                Some(SelftestExit::Timeout) => "timeout".into(),
                None => "none".into(),
            },
            seconds,
            complete,
            counts,
            cases,
            other_output: k.other.iter().rev().take(40).rev().map(|l| clip(l)).collect(),
            rx: program_rx,
        });
    }
    checks.extend(missed_check(&programs));
    let baseline = if input.baseline.series.is_empty() {
        "none".to_owned()
    } else {
        format!("guest-images/selftests/baseline-{}.toml", input.baseline.series)
    };
    let report = SelftestsReport {
        source: input.source.to_owned(),
        baseline,
        setup: g.setup,
        timer_slack_us: input.timer_slack_us,
        programs,
        stale_baseline: stale,
        rx,
    };
    (report, checks)
}

/// `selftests.rx_missed_errors`: eth0's `rx_missed_errors` after each
/// program is a count the device gave ([`MissedCheck::holds`]); None when no
/// mark had both readings (6.12, or the device's status not read).
fn missed_check(programs: &[ProgramResult]) -> Option<Check> {
    let compared: Vec<(&str, &MissedCheck)> =
        programs.iter().filter_map(|p| Some((p.file.as_str(), p.rx.missed.as_ref()?))).collect();
    let (last_file, last) = compared.last()?;
    let wrong: Vec<String> =
        compared.iter().filter(|(_, m)| !m.holds()).map(|(file, m)| format!("after {file}: {}", m.text())).collect();
    let both_ways = compared.iter().filter(|(_, m)| m.refreshed).count();
    let mut check = match wrong.is_empty() {
        true => Check::new(
            "selftests.rx_missed_errors",
            CheckStatus::Pass,
            format!(
                "eth0's rx_missed_errors is the device's no-WQE count after {} ({both_ways} bounded both ways); after {last_file}: {}",
                plural(compared.len(), "program"),
                last.text()
            ),
        ),
        false => Check::new(
            "selftests.rx_missed_errors",
            CheckStatus::Fail,
            format!(
                "eth0's rx_missed_errors is not a count the device gave after {} of {}",
                wrong.len(),
                plural(compared.len(), "program")
            ),
        ),
    };
    check.detail = wrong;
    Some(check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest_protocol::{GuestSelftestRun, NetdevRxCounters, RemoteCounters};

    fn guest(file: &str, out: &str, exit: SelftestExit) -> GuestSelftests {
        GuestSelftests {
            setup: Some(0),
            runs: vec![GuestSelftestRun {
                file: file.into(),
                output: out.lines().map(str::to_owned).collect(),
                exit: Some(exit),
                seconds: Some(12.0),
            }],
            netdev: None,
            remote: None,
            marks: Vec::new(),
        }
    }

    /// The verdict of a run of `asked` (tests' source `s`), without the
    /// device's status at the marks.
    fn judge(
        g: &GuestSelftests,
        asked: &[String],
        baseline: &Baseline,
        setup_errors: &[String],
        device_totals: Option<&Totals>,
    ) -> (SelftestsReport, Vec<Check>) {
        let device_marks = BTreeMap::new();
        let input = SelftestsInput {
            guest: g,
            asked,
            baseline,
            source: "s",
            timer_slack_us: 0,
            setup_errors,
            device_totals,
            device_marks: &device_marks,
            missed_is_no_wqe: false,
        };
        judge_selftests(&input)
    }

    /// The verdict of a run of `asked` with the device's status at `device_marks`
    /// (`missed_is_no_wqe`: a 7.x kernel).
    fn judge_marked(
        g: &GuestSelftests,
        asked: &[String],
        baseline: &Baseline,
        device_marks: &BTreeMap<u32, DeviceMark>,
        missed_is_no_wqe: bool,
    ) -> (SelftestsReport, Vec<Check>) {
        let input = SelftestsInput {
            guest: g,
            asked,
            baseline,
            source: "s",
            timer_slack_us: 0,
            setup_errors: &[],
            device_totals: None,
            device_marks,
            missed_is_no_wqe,
        };
        judge_selftests(&input)
    }

    fn baseline(text: &str) -> Baseline {
        Baseline::parse("7.3", text, "b.toml").expect("baseline")
    }

    fn status_of<'a>(checks: &'a [Check], name: &str) -> &'a Check {
        checks.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("{name} in {checks:?}"))
    }

    const STATS: &str = "TAP version 13\n1..3\nok 1 stats.check_pause # SKIP pause not supported by the device\n\
        ok 2 stats.pkt_byte_sum\nnot ok 3 stats.qstat_by_ifindex\n# Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0";

    #[test]
    fn a_baseline_explains_non_passing_cases_and_anything_unexplained_fails() {
        let g = guest("stats.py", STATS, SelftestExit::Status(1));
        let b = baseline(
            "[[expect]]\ncase = \"stats.check_pause\"\nresult = \"skip\"\nreason = \"mana_ethtool_ops has no get_pauseparam (drivers/net/ethernet/microsoft/mana/mana_ethtool.c, 7.3.4)\"\n",
        );
        let asked = vec!["stats.py".to_owned()];
        let (report, checks) = judge(&g, &asked, &b, &[], None);
        assert_eq!(status_of(&checks, "selftests.setup").status, CheckStatus::Pass);
        assert_eq!(status_of(&checks, "selftests.stats").status, CheckStatus::Pass, "it ran to its end");
        let pause = status_of(&checks, "selftests.stats.check_pause");
        assert_eq!(pause.status, CheckStatus::Skip);
        assert!(pause.message.starts_with("expected skip: pause not supported"), "{}", pause.message);
        assert!(pause.message.contains("get_pauseparam"), "{}", pause.message);
        assert_eq!(status_of(&checks, "selftests.stats.pkt_byte_sum").status, CheckStatus::Pass);
        let q = status_of(&checks, "selftests.stats.qstat_by_ifindex");
        assert_eq!((q.status, q.message.as_str()), (CheckStatus::Fail, "fail; not in the baseline"));
        assert_eq!(report.programs[0].counts, Counts { ok: 1, skip: 1, xfail: 0, fail: 1 });
        assert!(report.stale_baseline.is_empty());
    }

    #[test]
    fn an_unexplained_skip_fails_and_a_baseline_entry_with_another_result_is_stale() {
        let g = guest("stats.py", STATS, SelftestExit::Status(1));
        let b =
            baseline("[[expect]]\ncase = \"stats.pkt_byte_sum\"\nresult = \"fail\"\nreason = \"r (mana, 7.3.4)\"\n");
        let asked = vec!["stats.py".to_owned()];
        let (report, checks) = judge(&g, &asked, &b, &[], None);
        let pause = status_of(&checks, "selftests.stats.check_pause");
        assert_eq!(pause.status, CheckStatus::Fail);
        assert!(pause.message.contains("not in the baseline"), "{}", pause.message);
        assert_eq!(report.stale_baseline, ["stats.pkt_byte_sum: expected fail, got ok"]);
    }

    #[test]
    fn a_flaky_case_is_expected_when_it_fails_and_passes_without_a_stale_entry_when_it_passes() {
        let b = baseline(
            "[[expect]]\ncase = \"stats.procfs_downup_hammer\"\nresult = \"flaky\"\nreason = \"fails once a packet was counted (mana, 7.3.4)\"\n",
        );
        let asked = vec!["stats.py".to_owned()];
        for (line, outcome, status) in [
            ("not ok 1 stats.procfs_downup_hammer", Outcome::Fail, CheckStatus::Skip),
            ("ok 1 stats.procfs_downup_hammer", Outcome::Pass, CheckStatus::Pass),
        ] {
            let g = guest("stats.py", &format!("TAP version 13\n1..1\n{line}\n"), SelftestExit::Status(0));
            let (report, checks) = judge(&g, &asked, &b, &[], None);
            let c = status_of(&checks, "selftests.stats.procfs_downup_hammer");
            assert_eq!((report.programs[0].cases[0].outcome, c.status), (outcome, status), "{line}");
            assert!(c.message.contains("packet was counted"), "{}", c.message);
            assert!(report.stale_baseline.is_empty(), "{line}: {:?}", report.stale_baseline);
        }
        let g = guest(
            "stats.py",
            "TAP version 13\n1..1\nok 1 stats.procfs_downup_hammer # SKIP x\n",
            SelftestExit::Status(0),
        );
        let (_, checks) = judge(&g, &asked, &b, &[], None);
        let c = status_of(&checks, "selftests.stats.procfs_downup_hammer");
        assert_eq!(c.status, CheckStatus::Fail, "a skip is not one of a flaky case's results");
        assert!(c.message.contains("the baseline expects flaky"), "{}", c.message);
    }

    #[test]
    fn a_program_that_died_or_timed_out_fails_with_its_traceback() {
        let g = guest(
            "ping.py",
            "TAP version 13\n1..2\nok 1 ping.test_default_v4\nTraceback (most recent call last):\nOSError: x",
            SelftestExit::Status(1),
        );
        let asked = vec!["ping.py".to_owned()];
        let b = Baseline::default();
        let (_, checks) = judge(&g, &asked, &b, &[], None);
        let p = status_of(&checks, "selftests.ping");
        assert_eq!(p.status, CheckStatus::Fail);
        assert!(p.message.contains("after 1 of 2 planned cases"), "{}", p.message);
        assert!(p.detail.iter().any(|l| l.contains("OSError")));
        let g = guest("ping.py", "TAP version 13\n1..1\nok 1 ping.a\n", SelftestExit::Timeout);
        let (report, checks) = judge(&g, &asked, &b, &[], None);
        assert!(status_of(&checks, "selftests.ping").message.contains("stopped at the timeout"));
        assert_eq!(report.programs[0].exit, "timeout");
    }

    #[test]
    fn a_program_the_guest_never_ran_fails() {
        let g = GuestSelftests { setup: Some(2), runs: vec![], ..GuestSelftests::default() };
        let asked = vec!["hw/csum.py".to_owned()];
        let b = Baseline::default();
        let errs = vec!["no virtio_net netdev".to_owned()];
        let (_, checks) = judge(&g, &asked, &b, &errs, None);
        let s = status_of(&checks, "selftests.setup");
        assert_eq!((s.status, s.detail.clone()), (CheckStatus::Fail, errs));
        assert_eq!(status_of(&checks, "selftests.csum").status, CheckStatus::Fail);
    }

    #[test]
    fn the_report_accounts_for_received_frames_on_both_sides() {
        let mut g = guest("hw/csum.py", "1..1\nok 1 csum.ipv4_rx_tcp\n", SelftestExit::Status(0));
        g.netdev = Some(NetdevRxCounters {
            netdev: "eth0".into(),
            packets: Some(95),
            dropped: Some(0),
            missed: Some(0),
            tx_packets: None,
        });
        let totals = Totals {
            rx: mana_device_api::traffic::Traffic { packets: 100, bytes: 0, drops: 9, errors: 1 },
            rx_no_wqe: 7,
            rx_unsteered: 4,
            ..Totals::default()
        };
        let (asked, b) = (vec!["hw/csum.py".to_owned()], baseline(""));
        let (report, _) = judge(&g, &asked, &b, &[], Some(&totals));
        let device = report.rx.device.expect("the device's counters");
        assert_eq!((device.delivered, device.no_wqe, device.unusable_buffer, device.unsteered), (100, 7, 2, 4));
        assert_eq!(device.dropped(), 13);
        assert_eq!(report.rx.guest.as_ref().and_then(|c| c.dropped), Some(0));
        let json = serde_json::to_value(&report).expect("the report as JSON");
        assert_eq!(json["rx"]["device"]["no_wqe"], 7, "{json}");
        assert_eq!(json["rx"]["guest"]["missed"], 0, "{json}");
    }

    /// Both ends' counters as the agent reads them at a mark.
    fn mark_counters(mark: u32, eth0_rx: u64, eth1_rx: u64) -> crate::guest_protocol::SelftestMarkCounters {
        crate::guest_protocol::SelftestMarkCounters {
            mark,
            netdev: Some(NetdevRxCounters {
                netdev: "eth0".into(),
                packets: Some(eth0_rx),
                dropped: Some(0),
                missed: Some(0),
                tx_packets: Some(eth1_rx),
            }),
            remote: Some(RemoteCounters {
                nic: NetdevRxCounters {
                    netdev: "eth1".into(),
                    packets: Some(eth1_rx),
                    dropped: Some(0),
                    missed: Some(0),
                    tx_packets: Some(eth0_rx + 2),
                },
                udp_in: Some(eth1_rx / 2),
                udp_no_ports: Some(100),
                udp_in_errors: Some(0),
            }),
        }
    }

    /// The device at a mark: `delivered` frames received, as many sent.
    fn device_mark(delivered: u64) -> DeviceMark {
        let traffic = Totals {
            rx: mana_device_api::traffic::Traffic { packets: delivered, ..Default::default() },
            tx: mana_device_api::traffic::Traffic { packets: delivered, ..Default::default() },
            rx_unsteered: 2,
            rx_port_off: 2,
            ..Totals::default()
        };
        DeviceMark { rx: DeviceRx::of(&traffic), queues_created: 16, gf_stat_queries: 0 }
    }

    /// A run of ping.py, then csum.py whose transmit case failed, with both
    /// ends' counters at marks 0, 1 and 2: nothing lost in csum.py (two
    /// frames came while the port's RX was off, before the run), ping.py
    /// lost 40 frames for want of a posted WQE; `lose` changes the last
    /// mark (the device's and the guest's).
    fn csum_tx_failure(lose: impl FnOnce(&mut DeviceMark, &mut GuestSelftests)) -> (CaseVerdict, Check) {
        let mut g = guest(
            "hw/csum.py",
            "TAP version 13\n1..1\nnot ok 1 csum.ipv4_tx_udp_csum_offload\n",
            SelftestExit::Status(1),
        );
        g.runs.insert(
            0,
            GuestSelftestRun {
                file: "ping.py".into(),
                output: vec!["1..1".into(), "ok 1 ping.test_v4".into()],
                exit: Some(SelftestExit::Status(0)),
                seconds: Some(9.0),
            },
        );
        g.marks = vec![mark_counters(0, 100, 90), mark_counters(1, 300, 280), mark_counters(2, 816, 700)];
        let mut ping_dropped = device_mark(300);
        ping_dropped.rx.no_wqe = 40;
        let mut last = device_mark(816);
        last.rx.no_wqe = 40;
        lose(&mut last, &mut g);
        let device_marks = BTreeMap::from([(0, device_mark(100)), (1, ping_dropped), (2, last)]);
        let b = baseline(
            "[[expect]]\ncase = \"csum.ipv*_tx_udp_*\"\nresult = \"flaky\"\nneeds = \"no drops\"\nreason = \"late (csum.c, 7.3.4)\"\n",
        );
        let asked = vec!["ping.py".to_owned(), "hw/csum.py".to_owned()];
        let (report, checks) = judge_marked(&g, &asked, &b, &device_marks, true);
        assert_eq!(report.programs[0].rx.device.map(|d| d.no_wqe), Some(40), "ping.py's own drops");
        let check = status_of(&checks, "selftests.csum.ipv4_tx_udp_csum_offload").clone();
        (report.programs[1].cases[0].clone(), check)
    }

    #[test]
    fn a_flaky_failure_that_needs_no_drops_is_expected_when_its_own_program_dropped_nothing() {
        // ping.py, before it, lost 40 frames: they do not count against csum.py.
        let (case, check) = csum_tx_failure(|_, _| {});
        assert_eq!((case.status, check.status), (CheckStatus::Skip, CheckStatus::Skip), "{}", check.message);
        assert!(case.unmet.is_empty(), "{:?}", case.unmet);
        assert!(check.message.starts_with("expected fail (baseline: late"), "{}", check.message);
    }

    /// The remote end's counters at the last mark.
    fn last_remote(g: &mut GuestSelftests) -> &mut RemoteCounters {
        g.marks.last_mut().and_then(|m| m.remote.as_mut()).expect("the remote end at the last mark")
    }

    #[test]
    fn a_flaky_failure_that_needs_no_drops_fails_and_names_the_counter_that_dropped() {
        let (case, check) = csum_tx_failure(|_, g| last_remote(g).nic.dropped = Some(3));
        assert_eq!(check.status, CheckStatus::Fail);
        assert_eq!(case.unmet, ["remote eth1: rx_dropped 3"]);
        assert!(check.message.contains("flaky entry does not hold: remote eth1: rx_dropped 3"), "{}", check.message);
        // Each side's losses in the program are named, the device's by
        // reason; eth0's rx_missed_errors (the device's no-WQE count, late)
        // only through the device's.
        let (case, _) = csum_tx_failure(|d, g| {
            d.rx.no_wqe += 4;
            d.rx.unsteered += 3;
            d.rx.cqe_lost = 1;
            if let Some(n) = g.marks.last_mut().and_then(|m| m.netdev.as_mut()) {
                n.missed = Some(7);
            }
        });
        assert_eq!(
            case.unmet,
            ["device: no WQE posted 4", "device: no RQ chosen on a receiving port 3", "device: RX completions lost 1",]
        );
        // Counters the run did not read cannot show that nothing was dropped.
        let (case, check) = csum_tx_failure(|_, g| g.marks[2].remote = None);
        assert_eq!(
            (check.status, case.unmet),
            (CheckStatus::Fail, vec!["remote: no counters at marks 1 and 2".to_owned()])
        );
        let (case, _) = csum_tx_failure(|_, g| last_remote(g).udp_in_errors = None);
        assert_eq!(case.unmet, ["remote eth1: UDP InErrors unknown"]);
    }

    #[test]
    fn a_flaky_failure_that_needs_no_drops_fails_when_a_drop_counter_restarted_in_its_program() {
        // The remote NIC's rx_dropped went from 0 to … nothing left: it went back.
        let (case, check) = csum_tx_failure(|_, g| {
            g.marks[1].remote.as_mut().expect("remote").nic.dropped = Some(5);
            last_remote(g).nic.dropped = Some(0);
        });
        assert_eq!(check.status, CheckStatus::Fail);
        assert_eq!(case.unmet, ["remote eth1: rx_dropped restarted, 0 since: not a known zero"]);
    }

    #[test]
    fn a_flaky_entry_without_a_condition_and_a_pass_ignore_the_counters() {
        let mut g =
            guest("stats.py", "TAP version 13\n1..1\nnot ok 1 stats.procfs_downup_hammer\n", SelftestExit::Status(1));
        g.netdev = Some(NetdevRxCounters { netdev: "eth0".into(), dropped: Some(9), ..NetdevRxCounters::default() });
        let b = baseline(
            "[[expect]]\ncase = \"stats.procfs_downup_hammer\"\nresult = \"flaky\"\nreason = \"r (mana, 7.3.4)\"\n",
        );
        let asked = vec!["stats.py".to_owned()];
        let (_, checks) = judge(&g, &asked, &b, &[], None);
        assert_eq!(status_of(&checks, "selftests.stats.procfs_downup_hammer").status, CheckStatus::Skip);
        let (case, check) = csum_tx_failure(|_, g| {
            g.runs[1].output = vec!["1..1".into(), "ok 1 csum.ipv4_tx_udp_csum_offload".into()];
            g.marks[2].remote = None;
        });
        assert_eq!((case.status, check.status, case.unmet.len()), (CheckStatus::Pass, CheckStatus::Pass, 0));
    }

    /// gro.py's last attempt at `sw_ipv6_large_max` in a whole-set run on
    /// 7.3 (the KTAP diagnostics as the report keeps them), its train
    /// received in `parts`.
    fn gro_large_max(parts: &str) -> String {
        format!(
            "TAP version 13\n1..1\n# Exception|   STDERR: Expected {{65475 899 }}, Total 2 packets\n\
             # Exception|           Received {{{parts}}}, Total 3 packets.\n\
             # Exception|           /ksrc/tools/testing/selftests/net/lib/gro: incorrect number of packets\n\
             not ok 1 gro.test.sw_ipv6_large_max\n"
        )
    }

    #[test]
    fn the_shipped_gro_large_max_entry_expects_a_train_split_in_parts_with_nothing_dropped() {
        let b = Baseline::shipped("7.3").expect("the shipped 7.3 baseline");
        let asked = vec!["gro.py".to_owned()];
        let judged = |parts: &str, no_wqe: u64| {
            let mut g = guest("gro.py", &gro_large_max(parts), SelftestExit::Status(1));
            g.marks = vec![mark_counters(0, 10, 10), mark_counters(1, 20, 20)];
            let mut after = device_mark(20);
            after.rx.no_wqe = no_wqe;
            let device_marks = BTreeMap::from([(0, device_mark(10)), (1, after)]);
            let (report, _) = judge_marked(&g, &asked, &b, &device_marks, true);
            report.programs[0].cases[0].clone()
        };
        let split = judged("16144 [!=65475]49331 [!=899]899 [!=0]", 0);
        assert_eq!((split.status, split.unmet.len()), (CheckStatus::Skip, 0), "{split:?}");
        // The remainder missing: not the train flushed in parts.
        let short = judged("16144 [!=65475]49331 [!=899]", 0);
        assert_eq!(short.status, CheckStatus::Fail);
        // A frame dropped in gro.py: not timing.
        let dropped = judged("16144 [!=65475]49331 [!=899]899 [!=0]", 2);
        assert_eq!(
            (dropped.status, dropped.unmet.as_slice()),
            (CheckStatus::Fail, &["device: no WQE posted 2".to_owned()][..])
        );
    }

    #[test]
    fn eth0s_rx_missed_errors_is_checked_against_the_devices_no_wqe_count_on_7x() {
        let b = baseline("");
        let asked = vec!["ping.py".to_owned()];
        let judged = |missed: u64, missed_is_no_wqe: bool| {
            let mut g = guest("ping.py", "TAP version 13\n1..1\nok 1 ping.test_v4\n", SelftestExit::Status(0));
            g.marks = vec![mark_counters(0, 10, 10), mark_counters(1, 300, 300)];
            if let Some(eth0) = g.marks[1].netdev.as_mut() {
                eth0.missed = Some(missed);
            }
            // 30 no-WQE drops in ping.py; 5 GF_STAT queries (10 s) between the marks.
            let (mut before, mut after) = (device_mark(10), device_mark(300));
            (before.rx.no_wqe, after.rx.no_wqe) = (10, 40);
            (before.gf_stat_queries, after.gf_stat_queries) = (3, 8);
            let device_marks = BTreeMap::from([(0, before), (1, after)]);
            let (_, checks) = judge_marked(&g, &asked, &b, &device_marks, missed_is_no_wqe);
            checks.into_iter().find(|c| c.name == "selftests.rx_missed_errors")
        };
        let agrees = judged(25, true).expect("a 7.x run with both readings");
        assert_eq!(agrees.status, CheckStatus::Pass, "{}", agrees.message);
        assert!(
            agrees.message.ends_with(
                "after ping.py: rx_missed_errors 25 in the device's no-WQE drops 10..=40 (at the two marks)"
            ),
            "{}",
            agrees.message
        );
        // A device that answers zeros, or a reading beyond its count.
        for wrong in [0, 41] {
            let check = judged(wrong, true).expect("7.x");
            assert_eq!(check.status, CheckStatus::Fail, "{}", check.message);
            assert_eq!(check.detail.len(), 1, "{:?}", check.detail);
        }
        assert_eq!(judged(0, false), None, "6.12 never sets rx_missed_errors");
    }

    #[test]
    fn a_flaky_failure_must_show_the_lines_its_entry_names() {
        let b = baseline(
            "[[expect]]\ncase = \"toeplitz.test.udp_*\"\nresult = \"flaky\"\nshows = [\"*too few frames*\", \"*count: pass=* nohash=0 fail=0\"]\nreason = \"r (toeplitz.c, 7.3.4)\"\n",
        );
        let asked = vec!["hw/toeplitz.py".to_owned()];
        let run = |count: &str| {
            let out = format!(
                "TAP version 13\n1..1\n# Exception|           {count}\n# Exception|           toeplitz: too few frames for verification\nnot ok 1 toeplitz.test.udp_ipv4\n"
            );
            let g = guest("hw/toeplitz.py", &out, SelftestExit::Status(1));
            let (report, checks) = judge(&g, &asked, &b, &[], None);
            (report.programs[0].cases[0].unmet.clone(), status_of(&checks, "selftests.toeplitz.test.udp_ipv4").clone())
        };
        let (unmet, check) = run("count: pass=8 nohash=0 fail=0");
        assert_eq!((check.status, unmet.len()), (CheckStatus::Skip, 0), "{}", check.message);
        // A frame with a wrong hash among the few: not the flaky case.
        let (unmet, check) = run("count: pass=7 nohash=0 fail=1");
        assert_eq!(check.status, CheckStatus::Fail);
        assert_eq!(unmet, ["its output has no line like `*count: pass=* nohash=0 fail=0`"]);
        assert!(check.message.contains("flaky entry does not hold: its output has no line like"), "{}", check.message);
    }
}
