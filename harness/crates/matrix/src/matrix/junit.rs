//! The matrix as JUnit XML (quick-junit): one `<testsuite>` per kernel (named
//! by its label), one `<testcase>` per topology (classname `manarig.<kernel>`):
//! a failure (`type="mismatch"`, the first mismatching vector as message, every
//! failed check in the text), an error (`type="rig-error"`), or skipped for a
//! pair that did not run; the pair's human report is its `<system-out>`. The
//! suite's properties name the kernel's release, build and model.

use super::report::{MatrixReport, PairRecord, PairStatus};
use crate::verdict::{render, Format};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

/// Render the matrix.
///
/// # Errors
/// quick-junit's serialisation error (not expected).
pub fn render_matrix(m: &MatrixReport) -> Result<String, quick_junit::SerializeError> {
    let mut report = Report::new("manarig-matrix");
    for k in &m.header.spec.kernels {
        let mut suite = TestSuite::new(k.label.as_str());
        let facts = m.header.kernels.iter().find(|f| f.label == k.label);
        let mut props = vec![
            ("identity", k.identity.clone()),
            ("spec", m.header.spec_digest.clone()),
            ("run", m.header.run_id.clone()),
        ];
        if let Some(f) = facts {
            props.extend(f.release.clone().map(|r| ("release", r)));
            props.extend(f.model.clone().map(|r| ("model", r)));
            props.extend(f.build_key.clone().map(|r| ("build", r)));
        }
        suite.add_properties(props.into_iter().map(|(n, v)| Property::new(n, v)));
        let mut total = Duration::ZERO;
        for r in m.pairs.iter().filter(|r| r.pair.kernel == k.label) {
            let case = case(r, &k.label);
            total += r.duration_s.map(Duration::from_secs_f64).unwrap_or_default();
            suite.add_test_case(case);
        }
        suite.set_time(total);
        report.add_test_suite(suite);
    }
    report.to_string()
}

fn case(r: &PairRecord, kernel: &str) -> TestCase {
    let status = match r.status {
        PairStatus::Pass => TestCaseStatus::success(),
        PairStatus::Fail => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_type("mismatch").set_message(r.first_mismatch.clone().unwrap_or_default());
            let lines: Vec<String> = r
                .verdict()
                .map(|v| v.failures().map(|c| format!("{}: {}", c.name, c.message)).collect())
                .unwrap_or_default();
            s.set_description(lines.join("\n"));
            s
        }
        PairStatus::RigError => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_type("rig-error").set_message(r.error.clone().unwrap_or_default());
            s
        }
        PairStatus::Skip | PairStatus::NotRun => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(r.error.clone().unwrap_or_else(|| "not run".into()));
            s
        }
    };
    let mut case = TestCase::new(r.pair.topology.as_str(), status);
    case.set_classname(format!("manarig.{kernel}"));
    if let Some(d) = r.duration_s {
        case.set_time(Duration::from_secs_f64(d));
    }
    if let Some(v) = r.verdict() {
        if let Ok(text) = render(v, Format::Human) {
            case.set_system_out(text);
        }
    }
    case
}
