//! `--format ktap`: KTAP version 1 (Linux `Documentation/dev-tools/ktap.rst`).
//!
//! Layout: a version line and a plan `1..N` for N runs; each run is one test whose
//! subtests are its checks, indented two spaces (one KTAP nesting level), each preceded
//! by `# ` diagnostic lines (the header, the IRQ table, a rig run's stages with the link
//! and queue table of each, a traffic run's flows and per-CPU table, a failing check's
//! message). The traffic checks (`traffic_flows`, `rss_steering`, `traffic_interrupts`)
//! are subtests like the others, and so are a `[[nic]]` run's other NICs' checks
//! (`nic1:vector_count`, …). The rig's queue checks
//! (`queue_irqs`, `same_irq_table_as_first_probe`, …) are subtests like the others. A
//! skipped check is `ok n name # SKIP reason`; the run's result line closes the subtest:
//! `ok 1 seed-002@6.12` or `not ok 1 seed-002@6.12`. A rig error is
//! `not ok 1 <run> # ERROR <message>`.

use super::super::check::{CheckStatus, Status};
use super::super::outcome::Verdict;
use super::json::RigErrorReport;
use super::text;
use super::traffic_text;

const INDENT: &str = "  ";

/// A KTAP description: any words without `#` (ktap.rst), on one line.
fn description(s: &str) -> String {
    s.replace('#', "").replace(['\n', '\r'], " ")
}

/// `# text` lines for possibly multi-line text.
fn diagnostics(out: &mut Vec<String>, indent: &str, text: &str) {
    for line in text.lines() {
        out.push(format!("{indent}# {line}").trim_end().to_owned());
    }
}

fn run(out: &mut Vec<String>, number: usize, v: &Verdict) {
    out.push(format!("{INDENT}KTAP version 1"));
    let traffic = traffic_text::traffic(v);
    let nics = super::nics_text::nics(v);
    let selftests = super::selftests_text::selftests(v);
    for line in text::header(v)
        .iter()
        .chain(text::table(v).iter())
        .chain(text::stages(v).iter())
        .chain(traffic.iter())
        .chain(nics.iter())
        .chain(selftests.iter())
    {
        diagnostics(out, INDENT, line);
    }
    let checks = v.checks_of_every_nic();
    out.push(format!("{INDENT}1..{}", checks.len()));
    for (i, (name, c)) in checks.into_iter().enumerate() {
        let n = i + 1;
        let name = description(&name);
        match c.status {
            CheckStatus::Pass => out.push(format!("{INDENT}ok {n} {name}")),
            CheckStatus::Skip => {
                out.push(format!("{INDENT}ok {n} {name} # SKIP {}", c.message.replace(['\n', '\r'], " ")))
            }
            CheckStatus::Fail => {
                diagnostics(out, INDENT, &c.message);
                for d in &c.detail {
                    diagnostics(out, INDENT, d);
                }
                out.push(format!("{INDENT}not ok {n} {name}"));
            }
        }
    }
    for line in text::summary(&v.summary) {
        diagnostics(out, "", &line);
    }
    if v.status == Status::Fail {
        for line in &v.dmesg_mana {
            diagnostics(out, "", &format!("dmesg: {line}"));
        }
    }
    diagnostics(out, "", &text::verdict_line(v));
    let result = if v.status == Status::Pass { "ok" } else { "not ok" };
    out.push(format!("{result} {number} {}", description(&v.run.name)));
}

/// KTAP for one or more runs (a matrix run prints them all under one plan).
pub(super) fn render(verdicts: &[Verdict]) -> String {
    let mut out = vec!["KTAP version 1".to_owned(), format!("1..{}", verdicts.len())];
    for (i, v) in verdicts.iter().enumerate() {
        run(&mut out, i + 1, v);
    }
    out.join("\n") + "\n"
}

/// One run as test `number` of a larger KTAP document: its subtests and its
/// result line, without the document's version line and plan.
pub(super) fn render_test(number: usize, v: &Verdict) -> String {
    let mut out = Vec::new();
    run(&mut out, number, v);
    out.join("\n") + "\n"
}

pub(super) fn render_rig_error(r: &RigErrorReport) -> String {
    let mut out = vec!["KTAP version 1".to_owned(), "1..1".to_owned()];
    for c in &r.causes {
        diagnostics(&mut out, "", &format!("rig error: {c}"));
    }
    out.push(format!("not ok 1 {} # ERROR {}", description(&r.run), r.error.replace(['\n', '\r'], " ")));
    out.join("\n") + "\n"
}
