//! The `driver_survived` check of a run with fault injection (`--inject`,
//! device_model::inject): whatever the device did, the driver must not crash
//! the kernel, must not hang, and must still unload.
//!
//! With injections the run is judged by this check alone: an injected error
//! may rightly fail the probe, leave vectors unallocated or traffic
//! undelivered, so the IRQ-table and traffic checks are shown but do not
//! decide ([`Verdict::judge_by_survival`]).
//!
//! What counts (decided here, documented in README.md *Fault injection*):
//! - a crash: a kernel log line with `BUG:`, `Oops`, `general protection`,
//!   `Kernel panic`, `unable to handle`, `possible circular locking` or
//!   `blocked for more than` (the agent's `warning:` lines), or a guest that
//!   panicked or stopped answering before its report;
//! - a hang: the probe (insmod) had not returned at the agent's deadline, or
//!   the final `rmmod mana` had not;
//! - no unload: the final `rmmod mana` failed.
//!
//! A `WARNING:` (a `WARN_ON()` the driver raises on bad device input, such as
//! `mana_gd_read_cqe()`'s on bad CQE owner bits) is the driver reporting the
//! device, not a crash: it is quoted as evidence and does not fail the check.

use super::check::{Check, CheckStatus, Status};
use super::kernel_log::{unhandled_events, FATAL};
use super::outcome::Verdict;
use crate::guest_protocol::{GuestReport, Unload};

/// The check a debug kernel's run adds for its teardown ([`driver_unloaded`]).
pub const DRIVER_UNLOADED: &str = "driver_unloaded";

/// The check's name.
pub const DRIVER_SURVIVED: &str = "driver_survived";

/// The driver's last kernel log lines quoted as evidence.
const EVIDENCE_LINES: usize = 12;

/// `driver_survived` from a guest report that arrived: `specs` are the
/// injections (for the message).
pub fn driver_survived(report: &GuestReport, specs: &[String]) -> Check {
    let mut broke = Vec::new();
    let fatal: Vec<&String> = report.warnings.iter().filter(|w| FATAL.iter().any(|f| w.contains(f))).collect();
    if let Some(first) = fatal.first() {
        broke.push(format!("the kernel logged {first:?}"));
    }
    if report.probe_unfinished() {
        broke.push("the probe (insmod) had not returned at the agent's deadline: it hung".to_string());
    }
    match report.unload {
        Some(Unload::Exit(0)) => {}
        Some(Unload::Exit(rc)) => {
            let said = report.stderr.get("unload").map_or(String::new(), |l| format!(": {}", l.join(" / ")));
            broke.push(format!("`rmmod mana` failed (exit {rc}){said}"));
        }
        Some(Unload::Hung) => broke.push("`rmmod mana` had not returned at the agent's deadline: it hung".into()),
        None => broke.push("`rmmod mana` did not run (no `unload:` in the report)".into()),
    }
    let injected = specs.join(", ");
    let message = if broke.is_empty() {
        let probe = match &report.netdev {
            Some(netdev) => format!("the probe gave {netdev}"),
            None => "the probe failed cleanly".to_string(),
        };
        format!("with {injected}: {probe}, no oops, no hang, `rmmod mana` succeeded")
    } else {
        format!("with {injected}: {}", broke.join("; "))
    };
    let mut check = Check::pass_if(DRIVER_SURVIVED, broke.is_empty(), message);
    check.detail = unhandled_events(&report.kernel, specs).into_iter().chain(evidence(report)).collect();
    check
}

/// The check a debug kernel's run adds for its teardown ([`DRIVER_UNLOADED`]):
/// the agent's final `rmmod mana` returned 0 before its deadline. What the
/// teardown printed (KASAN, lockdep, WARN) is `debug_reports`'.
pub fn driver_unloaded(report: &GuestReport) -> Check {
    let said = report.stderr.get("unload").map_or(String::new(), |l| format!(": {}", l.join(" / ")));
    match report.unload {
        Some(Unload::Exit(0)) => {
            Check::new(DRIVER_UNLOADED, CheckStatus::Pass, "`rmmod mana` returned 0 after the report's snapshot")
        }
        Some(Unload::Exit(rc)) => {
            Check::new(DRIVER_UNLOADED, CheckStatus::Fail, format!("`rmmod mana` failed (exit {rc}){said}"))
        }
        Some(Unload::Hung) => Check::new(
            DRIVER_UNLOADED,
            CheckStatus::Fail,
            "`rmmod mana` had not returned at the agent's deadline: the teardown hung",
        ),
        None => {
            Check::new(DRIVER_UNLOADED, CheckStatus::Skip, "the agent ran no final `rmmod mana` (no `unload:` line)")
        }
    }
}

/// `driver_survived` failed because the guest never finished its report
/// (`why`: it panicked, or gave no report before the host's deadline), with
/// the last console lines as evidence.
pub fn driver_did_not_survive(why: &str, console_tail: &str, specs: &[String]) -> Check {
    let mut check = Check::new(DRIVER_SURVIVED, CheckStatus::Fail, format!("with {}: {why}", specs.join(", ")));
    check.detail = console_tail.lines().map(|l| format!("console: {l}")).collect();
    check
}

/// The console evidence: every kernel warning line, then the driver's last
/// kernel messages.
fn evidence(report: &GuestReport) -> Vec<String> {
    let warnings = report.warnings.iter().map(|w| format!("warning: {w}"));
    let start = report.dmesg.len().saturating_sub(EVIDENCE_LINES);
    let dmesg = report.dmesg[start..].iter().map(|l| format!("dmesg: {l}"));
    warnings.chain(dmesg).collect()
}

impl Verdict {
    /// Makes `survived` the only check that decides: the others that failed
    /// become skipped ("not judged with --inject: …"), and the status is the
    /// survival check's.
    pub fn judge_by_survival(&mut self, survived: Check) {
        for check in &mut self.checks {
            if check.status == CheckStatus::Fail {
                check.status = CheckStatus::Skip;
                check.message = format!("not judged with --inject: {}", check.message);
            }
        }
        self.status = if survived.status == CheckStatus::Fail { Status::Fail } else { Status::Pass };
        self.checks.push(survived);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean() -> GuestReport {
        GuestReport {
            settle: "probe-returned fired=yes".into(),
            unload: Some(Unload::Exit(0)),
            dmesg: vec!["mana 0000:41:00.0: HWC: Failed hw_channel req: 0xc000009a".into()],
            ..GuestReport::default()
        }
    }

    fn specs() -> Vec<String> {
        vec!["status:create_queue=0xc000009a".into()]
    }

    #[test]
    fn a_6x_kernel_gets_a_note_for_the_events_its_driver_cannot_handle_and_7x_none() {
        let specs = vec!["link-down@2".to_owned(), "reset@9".to_owned()];
        let notes = unhandled_events("6.12.117+deb13-cloud-amd64", &specs);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("no link event handling") && notes[1].contains("no reset handling"), "{notes:?}");
        assert!(unhandled_events("7.3.4+deb13-cloud-amd64", &specs).is_empty());
        assert!(unhandled_events("6.1.0", &["status:create_queue=0x1".to_owned()]).is_empty());
        let mut r = clean();
        r.kernel = "6.12.117".into();
        let check = driver_survived(&r, &specs);
        assert!(check.detail[0].starts_with("note: Linux 6.12.117's mana has no link event handling"), "{check:?}");
    }

    #[test]
    fn a_failed_probe_that_unloads_cleanly_survived_and_quotes_the_driver() {
        let check = driver_survived(&clean(), &specs());
        assert_eq!(check.status, CheckStatus::Pass, "{check:?}");
        assert!(check.message.contains("the probe failed cleanly"), "{}", check.message);
        assert_eq!(check.detail, ["dmesg: mana 0000:41:00.0: HWC: Failed hw_channel req: 0xc000009a"]);
    }

    #[test]
    fn an_oops_a_hang_or_a_failed_unload_did_not_survive() {
        let mut r = clean();
        r.warnings.push("BUG: kernel NULL pointer dereference, address: 0000000000000008".into());
        let check = driver_survived(&r, &specs());
        assert_eq!(check.status, CheckStatus::Fail);
        assert!(check.message.contains("BUG: kernel NULL pointer"), "{}", check.message);
        assert!(check.detail[0].starts_with("warning: BUG:"));

        let mut r = clean();
        r.settle = "deadline".into();
        r.unload = Some(Unload::Hung);
        let check = driver_survived(&r, &specs());
        assert!(check.message.contains("insmod) had not returned") && check.message.contains("rmmod mana` had not"));

        let mut r = clean();
        r.unload = Some(Unload::Exit(1));
        r.stderr.insert("unload".into(), vec!["rmmod: can't unload module 'mana': Device or resource busy".into()]);
        let check = driver_survived(&r, &specs());
        assert!(check.message.contains("(exit 1): rmmod: can't unload"), "{}", check.message);
    }

    #[test]
    fn a_warn_on_is_evidence_not_a_crash() {
        let mut r = clean();
        r.warnings.push("WARNING: CPU: 0 PID: 7 at drivers/net/ethernet/microsoft/mana/gdma_main.c:1193".into());
        r.warnings.push("Call Trace:".into());
        let check = driver_survived(&r, &specs());
        assert_eq!(check.status, CheckStatus::Pass);
        assert!(check.detail.iter().any(|l| l.contains("WARNING: CPU: 0")));
    }

    #[test]
    fn judging_by_survival_skips_the_other_failures() {
        // A failed probe: the model expects vectors, the guest shows none.
        let mut run = crate::verdict::fixtures::Run::new("seed-002", "6.12");
        run.observed.vectors.clear();
        run.observed.probe_ok = false;
        let mut v = run.judge();
        assert_eq!(v.status, Status::Fail);
        v.judge_by_survival(driver_survived(&clean(), &specs()));
        assert_eq!(v.status, Status::Pass);
        assert!(v.checks.iter().all(|c| c.status != CheckStatus::Fail));
        assert!(v.checks.iter().any(|c| c.message.starts_with("not judged with --inject: ")));
    }
}
