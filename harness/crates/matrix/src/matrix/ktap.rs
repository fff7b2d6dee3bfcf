//! The matrix as KTAP version 1 (Documentation/dev-tools/ktap.rst): a plan
//! `1..N` over the document's pairs, one test per pair named
//! `<topology>@<kernel>` whose subtests are its checks (as `run --format ktap`
//! prints them); a rig error is `not ok N <pair> # ERROR <message>`, a pair
//! that did not run `ok N <pair> # SKIP not run: <why>`.

use super::report::{MatrixReport, PairStatus};
use crate::verdict::render_ktap_test;

/// A KTAP description or directive text: one line, no `#`.
fn one_line(s: &str) -> String {
    s.replace('#', "").replace(['\n', '\r'], " ")
}

/// Render the matrix.
pub fn render_matrix(m: &MatrixReport) -> String {
    let mut out = format!("KTAP version 1\n1..{}\n", m.pairs.len());
    out.push_str(&format!(
        "# manarig matrix: spec {}, run {}, oracle {}\n",
        m.header.spec_digest,
        m.header.run_id,
        one_line(&m.header.spec.oracle)
    ));
    for (i, r) in m.pairs.iter().enumerate() {
        let n = i + 1;
        let name = one_line(&r.pair.name);
        match (r.status, r.verdict()) {
            (PairStatus::Pass | PairStatus::Fail, Some(v)) => out.push_str(&render_ktap_test(n, v)),
            (PairStatus::Skip, _) => {
                out.push_str(&format!("ok {n} {name} # SKIP {}\n", one_line(r.error.as_deref().unwrap_or(""))));
            }
            (PairStatus::NotRun, _) => {
                out.push_str(&format!(
                    "ok {n} {name} # SKIP not run: {}\n",
                    one_line(r.error.as_deref().unwrap_or(""))
                ));
            }
            _ => out.push_str(&format!(
                "not ok {n} {name} # ERROR {}\n",
                one_line(r.error.as_deref().unwrap_or("rig error"))
            )),
        }
    }
    out
}
