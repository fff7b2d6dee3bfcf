//! Pictures of a matrix (`matrix` and `matrix-merge` with `--svg DIR` / `--html FILE`):
//! every pair's machine drawn by [`crate::picture`] (the same drawing as `run --svg`),
//! as one SVG per pair and as one HTML report a reviewer of a patch series reads top
//! down: the totals, the topology × kernel table with each cell linking to its pair,
//! then one section per pair, failures first (FAIL, then rig errors, then pairs that did
//! not run, then passes; plan order within each), each with its picture and, folded
//! away for passing pairs, the run's tables. A pair without a verdict (a rig error
//! before the guest's report, or a pair that did not run) is drawn as its topology
//! marked "no guest data".
//!
//! The topology comes from the file the matrix document names (`header.spec.inputs`),
//! read again when the pictures are drawn (`matrix-merge` in a CI job reads the
//! checkout's files): a file that is gone, no longer loads, or whose SHA-256 differs from
//! the one the matrix recorded is not drawn, and the pair's section says why.

use super::kernels::hex;
use super::report::{MatrixReport, PairRecord, PairResult, PairStatus};
use crate::picture::{html_escape as escape, html_tables, svg, Panel, Picture, HTML_STYLE};
use crate::text::plural;
use crate::topology::Topology;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The topology file of each input of the matrix, by topology name: loaded, or why not.
pub struct Topologies(BTreeMap<String, Result<Topology, String>>);

impl Topologies {
    /// Read every input file of `m` again and check it is the file the matrix ran.
    pub fn load(m: &MatrixReport) -> Self {
        let mut out = BTreeMap::new();
        for input in &m.header.spec.inputs {
            let loaded = match &input.error {
                Some(e) => Err(format!("the topology file did not load when the matrix ran: {e}")),
                None => load_checked(&input.path, &input.sha256),
            };
            out.insert(input.name.clone(), loaded);
        }
        Topologies(out)
    }

    fn of(&self, r: &PairRecord) -> Result<&Topology, String> {
        match self.0.get(&r.pair.topology) {
            Some(Ok(t)) => Ok(t),
            Some(Err(e)) => Err(e.clone()),
            None => Err(format!("topology {} is not among the matrix's inputs", r.pair.topology)),
        }
    }
}

/// `path` loaded, if its bytes still have the SHA-256 `sha256` (hex) the matrix recorded.
fn load_checked(path: &str, sha256: &str) -> Result<Topology, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: cannot read the topology file: {e}"))?;
    if hex(&Sha256::digest(&bytes)) != sha256 {
        return Err(format!("{path}: the file changed since the matrix ran (SHA-256 differs); not drawn"));
    }
    let text = String::from_utf8(bytes).map_err(|_| format!("{path}: not UTF-8 text"))?;
    Topology::from_toml_str(path, &text).map_err(|e| e.to_string())
}

/// What a pair's picture shows: its verdict, or "no guest data" with the reason.
fn panel<'a>(r: &'a PairRecord) -> Panel<'a> {
    match &r.result {
        Some(PairResult::Verdict(v)) => Panel::Run(v),
        Some(PairResult::RigError(e)) => Panel::NoGuestData { run: &r.pair.name, reason: &e.error },
        None => Panel::NoGuestData { run: &r.pair.name, reason: r.error.as_deref().unwrap_or("the pair did not run") },
    }
}

/// The order of the report's sections: failures first.
fn rank(s: PairStatus) -> u8 {
    match s {
        PairStatus::Fail => 0,
        PairStatus::RigError => 1,
        PairStatus::NotRun => 2,
        PairStatus::Skip => 3,
        PairStatus::Pass => 4,
    }
}

/// The pairs in report order (FAIL, ERROR, NOT RUN, SKIP, PASS; plan order within each).
pub fn report_order(m: &MatrixReport) -> Vec<&PairRecord> {
    let mut pairs: Vec<&PairRecord> = m.pairs.iter().collect();
    pairs.sort_by_key(|r| rank(r.status));
    pairs
}

/// A file name for a pair's picture: `seed-002@6.12-min.svg`, with every character but
/// ASCII letters, digits, `.`, `-`, `_` and `@` replaced by `_` (kernel labels such as
/// `image:/boot/vmlinuz:…` hold `/` and `:`).
pub fn svg_file_name(pair: &str) -> String {
    let safe: String = pair
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '@') { c } else { '_' })
        .collect();
    format!("{safe}.svg")
}

/// The pictures of a matrix's pairs.
#[derive(Debug, Default)]
pub struct PairSvgs {
    /// (file name, SVG document), in report order.
    pub drawn: Vec<(String, String)>,
    /// (pair name, why): pairs whose topology cannot be drawn.
    pub skipped: Vec<(String, String)>,
}

/// Every pair's picture, in [`report_order`].
pub fn pair_svgs(m: &MatrixReport, topologies: &Topologies) -> PairSvgs {
    let mut out = PairSvgs::default();
    for r in report_order(m) {
        match topologies.of(r) {
            Ok(t) => out.drawn.push((svg_file_name(&r.pair.name), svg(t, &Picture::One(panel(r))))),
            Err(e) => out.skipped.push((r.pair.name.clone(), e)),
        }
    }
    out
}

/// The anchor of a pair's section.
fn anchor(pair: &str) -> String {
    format!("pair-{}", svg_file_name(pair).trim_end_matches(".svg"))
}

/// Background of a status cell.
fn status_colour(s: PairStatus) -> &'static str {
    match s {
        PairStatus::Pass => "#d3f9d8",
        PairStatus::Fail => "#ffc9c9",
        PairStatus::RigError => "#ffe8cc",
        PairStatus::NotRun | PairStatus::Skip => "#e9ecef",
    }
}

/// The topology × kernel table, each cell linking to its pair's section.
fn table(out: &mut String, m: &MatrixReport) {
    let kernels: Vec<&str> = m.header.spec.kernels.iter().map(|k| k.label.as_str()).collect();
    out.push_str("<table class=\"matrix\">\n<tr><th>topology</th>");
    for k in &kernels {
        let _ = write!(out, "<th>{}</th>", escape(k));
    }
    out.push_str("</tr>\n");
    for input in &m.header.spec.inputs {
        let size = input.vcpus.map_or_else(|| "broken file".to_owned(), |v| plural(v, "vCPU"));
        let _ = write!(out, "<tr><th>{} <small>({size})</small></th>", escape(&input.name));
        for k in &kernels {
            let name = format!("{}@{k}", input.name);
            match m.pairs.iter().find(|r| r.pair.name == name) {
                Some(r) => {
                    let note = r.first_mismatch.as_deref().or(r.error.as_deref()).unwrap_or("");
                    let _ = write!(
                        out,
                        "<td style=\"background: {}\" title=\"{}\"><a href=\"#{}\">{}</a>{}</td>",
                        status_colour(r.status),
                        escape(note),
                        anchor(&name),
                        r.status.word(),
                        r.duration_s.map(|d| format!(" <small>{d:.1} s</small>")).unwrap_or_default()
                    );
                }
                None => out.push_str("<td title=\"in another shard\">—</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

/// One pair's section: heading, one line on what went wrong, the picture, the tables.
fn pair_section(out: &mut String, r: &PairRecord, topologies: &Topologies) {
    let name = &r.pair.name;
    let _ = writeln!(
        out,
        "<section id=\"{}\" class=\"pair\">\n<h2><span class=\"status\" style=\"background: {}\">{}</span> {}</h2>",
        anchor(name),
        status_colour(r.status),
        r.status.word(),
        escape(name)
    );
    let what = match r.status {
        PairStatus::Fail => r.first_mismatch.as_deref().map(|s| format!("first mismatch: {s}")),
        PairStatus::RigError => r.error.as_deref().map(|s| format!("rig error: {s}")),
        PairStatus::NotRun => r.error.as_deref().map(|s| format!("not run: {s}")),
        PairStatus::Skip => r.error.as_deref().map(|s| format!("skipped: {s}")),
        PairStatus::Pass => None,
    };
    if let Some(w) = what {
        let _ = writeln!(out, "<p>{}</p>", escape(&w));
    }
    match topologies.of(r) {
        Ok(t) => {
            let picture = Picture::One(panel(r));
            let _ = write!(out, "<figure>\n{}</figure>\n", svg(t, &picture));
            let open = if r.status == PairStatus::Pass { "" } else { " open" };
            let _ = write!(out, "<details{open}>\n<summary>tables</summary>\n{}</details>\n", html_tables(&picture, 3));
        }
        Err(e) => {
            let _ = writeln!(out, "<p>no picture: {}</p>", escape(&e));
        }
    }
    out.push_str("</section>\n");
}

/// The HTML report of a matrix (one self-contained page, no scripts): totals, the
/// topology × kernel table, then every pair's section in [`report_order`], then the
/// Markdown summary (`summary.md`) as text.
pub fn html_report(m: &MatrixReport, topologies: &Topologies) -> String {
    let (pass, fail, err, not_run) = m.counts();
    let verdict = m.overall().word();
    let incomplete = if m.header.complete { "" } else { " — INCOMPLETE" };
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>manarig matrix: {verdict}</title>\n\
         <style>\n{HTML_STYLE}table.matrix {{ border-collapse: collapse; }}\n\
         table.matrix td, table.matrix th {{ border: 1px solid #ced4da; padding: 0.3em 0.6em; text-align: left; }}\n\
         table.matrix a {{ color: #212529; font-weight: bold; }}\nsection.pair {{ border-top: 1px solid #ced4da; margin-top: 2em; }}\n\
         .status {{ padding: 0 0.4em; border-radius: 0.3em; }}\n</style>\n</head>\n<body>\n\
         <h1>manarig matrix: {verdict}{incomplete}</h1>\n"
    );
    let _ = writeln!(
        out,
        "<p>{}: {pass} passed, {fail} failed, {}{}{}. Oracle <code>{}</code>, {}; spec <code>{}</code>, run <code>{}</code>. \
         Pairs below: failures first, then rig errors, pairs that did not run, skipped pairs, passes.</p>",
        plural(m.pairs.len(), "pair"),
        plural(err, "rig error"),
        if not_run > 0 { format!(", {not_run} not run") } else { String::new() },
        m.skipped_note(),
        escape(&m.header.spec.oracle),
        escape(&m.header.mode),
        escape(&m.header.spec_digest),
        escape(&m.header.run_id)
    );
    table(&mut out, m);
    for r in report_order(m) {
        pair_section(&mut out, r, topologies);
    }
    let _ = write!(
        out,
        "<section>\n<h2>summary.md</h2>\n<details>\n<summary>the Markdown summary</summary>\n<pre>{}</pre>\n</details>\n</section>\n\
         </body>\n</html>\n",
        escape(&super::summary::render(m))
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::shard::Shard;
    use crate::matrix::shard_run::dry_report;

    fn cpus_in(svg: &str) -> Vec<roxmltree::NodeId> {
        let doc = roxmltree::Document::parse(svg).expect("an SVG document");
        doc.descendants().filter(|n| n.attribute("class") == Some("cpu")).map(|n| n.id()).collect()
    }

    /// seed-002 and r24-no-smt on two kernels (the model's answers: a dry run); one pair
    /// made a failure, one a rig error.
    fn report() -> MatrixReport {
        let mut m = dry_report(&["seed-002", "r24-no-smt"], &["6.12-min", "6.1"], Shard::WHOLE);
        m.pairs[3] =
            PairRecord::rig_error(m.pairs[3].pair.clone(), &std::io::Error::other("QEMU <exited> early"), None, None);
        if let Some(PairResult::Verdict(v)) = &mut m.pairs[1].result {
            v.status = crate::verdict::Status::Fail;
        }
        m.pairs[1].status = PairStatus::Fail;
        m.pairs[1].first_mismatch = Some("mana_q0: expected 1, got 0-1".into());
        m
    }

    #[test]
    fn the_report_puts_failures_first_and_draws_the_rig_error_without_guest_data() {
        let m = report();
        let page = html_report(&m, &Topologies::load(&m));
        let order: Vec<usize> =
            ["FAIL</span> seed-002@6.1", "ERROR</span> r24-no-smt@6.1", "PASS</span> seed-002@6.12-min"]
                .iter()
                .map(|s| page.find(s).unwrap_or_else(|| panic!("{s} in the page")))
                .collect();
        assert!(order[0] < order[1] && order[1] < order[2], "{order:?}");
        assert!(page.contains("first mismatch: mana_q0: expected 1, got 0-1"));
        assert!(page.contains("QEMU &lt;exited&gt; early") && !page.contains("QEMU <exited>"));
        assert!(page.contains("href=\"#pair-seed-002@6.1\"") && page.contains("id=\"pair-seed-002@6.1\""));
        assert_eq!(page.matches("<svg").count(), 4, "a picture per pair");
        assert_eq!(page.matches("NO GUEST DATA").count(), 1, "the rig error's picture");
    }

    #[test]
    fn every_pair_gets_an_svg_with_every_cpu_and_a_changed_file_is_not_drawn() {
        let mut m = report();
        let PairSvgs { drawn, skipped } = pair_svgs(&m, &Topologies::load(&m));
        assert!(skipped.is_empty(), "{skipped:?}");
        let names: Vec<&str> = drawn.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["seed-002@6.1.svg", "r24-no-smt@6.1.svg", "seed-002@6.12-min.svg", "r24-no-smt@6.12-min.svg"]
        );
        assert!(drawn.iter().all(|(_, s)| cpus_in(s).len() == 8));
        m.header.spec.inputs[0].sha256 = "0".repeat(64);
        let PairSvgs { drawn, skipped } = pair_svgs(&m, &Topologies::load(&m));
        assert_eq!(drawn.len(), 2);
        assert!(skipped.iter().all(|(p, e)| p.starts_with("seed-002@") && e.contains("changed since the matrix ran")));
        assert_eq!(svg_file_name("seed-002@image:/a b/bzImage"), "seed-002@image__a_b_bzImage.svg");
    }
}
