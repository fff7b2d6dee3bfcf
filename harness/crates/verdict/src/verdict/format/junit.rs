//! `--format junit`: JUnit XML written by quick-junit (nextest's writer). One
//! `<testsuite>` per run (named `<topology>@<kernel>`), one `<testcase>` per check
//! (`<failure type="mismatch">` with the check's message, `<skipped>` for a skip); the
//! run's facts are `<properties>`, the human report is the suite's `<system-out>` (with a
//! rig run's stages: the link and the queue table of each; the rig's queue checks are
//! test cases like the other checks).
//! A rig error is one `<testcase name="rig">` with an `<error type="rig-error">`.

use super::super::check::CheckStatus;
use super::super::outcome::Verdict;
use super::json::RigErrorReport;
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

/// Report name of every manarig JUnit document.
const REPORT: &str = "manarig";

/// One report, one `<testsuite>` per run.
pub(super) fn render(verdicts: &[Verdict]) -> Result<String, quick_junit::SerializeError> {
    let mut report = Report::new(REPORT);
    report.add_test_suites(verdicts.iter().map(suite));
    report.to_string()
}

fn suite(v: &Verdict) -> TestSuite {
    let r = &v.run;
    let mut suite = TestSuite::new(r.name.as_str());
    let opt = |o: Option<String>| o.unwrap_or_else(|| "none".to_owned());
    suite.add_properties(
        [
            ("topology", r.topology.clone()),
            ("source", r.source.clone()),
            ("kernel", r.kernel.to_string()),
            ("kernel_release", r.kernel_release.clone()),
            ("model_version", r.model_version.clone()),
            ("model", r.model.clone()),
            ("model_basis", r.model_basis.clone()),
            ("accel", r.accel.clone()),
            ("nic_bdf", opt(r.nic_bdf.clone())),
            ("nic_node", opt(r.nic_node.map(|n| n.to_string()))),
            ("schema_version", v.schema_version.to_string()),
        ]
        .map(|(k, v)| Property::new(k, v)),
    );
    // One property a package: `package.qemu` = `qemu-system-x86 1:11.1.3+ds-2~bpo13+1`,
    // with `(lock: …)` after a fallback.
    suite.add_properties(r.packages.iter().map(|p| Property::new(format!("package.{}", p.part), p.describe())));
    for (name, c) in v.checks_of_every_nic() {
        let status = match c.status {
            CheckStatus::Pass => TestCaseStatus::success(),
            CheckStatus::Skip => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(c.message.as_str());
                s
            }
            CheckStatus::Fail => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(c.message.as_str()).set_type("mismatch");
                let mut text = vec![c.message.clone()];
                text.extend(c.detail.iter().cloned());
                s.set_description(text.join("\n"));
                s
            }
        };
        let mut case = TestCase::new(name.as_str(), status);
        case.set_classname(r.name.as_str());
        if c.status == CheckStatus::Pass {
            case.set_system_out(c.message.as_str());
        }
        suite.add_test_case(case);
    }
    suite.set_system_out(super::human::render(v));
    suite
}

pub(super) fn render_rig_error(r: &RigErrorReport) -> Result<String, quick_junit::SerializeError> {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status.set_message(r.error.as_str()).set_type("rig-error").set_description(r.causes.join("\n"));
    let mut case = TestCase::new("rig", status);
    case.set_classname(r.run.as_str());
    let mut suite = TestSuite::new(r.run.as_str());
    suite.add_test_case(case);
    let mut report = Report::new(REPORT);
    report.add_test_suite(suite);
    report.to_string()
}
