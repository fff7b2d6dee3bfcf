//! The Markdown summary: one line of totals, the topology × kernel table
//! (PASS / FAIL / ERROR with the time and, for a failure, the first
//! mismatching vector), each shard's planned cost and wall time, then every
//! failure and rig error in full. An interrupted or partial matrix says
//! INCOMPLETE in its title.

use super::progress::short_duration;
use super::report::{MatrixReport, PairRecord, PairStatus};
use crate::text::{plural, plural_as};
use std::fmt::Write;
use std::time::Duration;

/// Text for a Markdown table cell: pipes escaped, one line.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn secs(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.1} s")
    } else {
        short_duration(Duration::from_secs_f64(s))
    }
}

fn pair_cell(r: &PairRecord) -> String {
    let time = r.duration_s.map(|d| format!(" {}", secs(d))).unwrap_or_default();
    let word = r.status.word();
    match r.status {
        PairStatus::Pass => format!("{word}{time}"),
        PairStatus::Fail => format!("**{word}**{time}: {}", cell(r.first_mismatch.as_deref().unwrap_or("see below"))),
        PairStatus::RigError => {
            format!("**{word}**{time}: {}", cell(&first_words(r.error.as_deref().unwrap_or(""), 120)))
        }
        PairStatus::Skip => format!("{word}: {}", cell(&first_words(r.error.as_deref().unwrap_or(""), 120))),
        PairStatus::NotRun => word.to_owned(),
    }
}

/// At most `n` characters of the first line, with `…` when cut.
fn first_words(s: &str, n: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() <= n {
        line.to_owned()
    } else {
        line.chars().take(n).collect::<String>() + "…"
    }
}

/// Render the summary.
pub fn render(m: &MatrixReport) -> String {
    let h = &m.header;
    let (pass, fail, err, not_run) = m.counts();
    let verdict = m.overall().word();
    let mut out = String::new();
    let incomplete = if h.complete { "" } else { " — INCOMPLETE" };
    let _ = writeln!(out, "# manarig matrix: {verdict}{incomplete}\n");
    let _ = writeln!(
        out,
        "{}: {pass} passed, {fail} failed, {}{}{}.",
        plural(m.pairs.len(), "pair"),
        plural(err, "rig error"),
        if not_run > 0 { format!(", {not_run} not run") } else { String::new() },
        m.skipped_note()
    );
    let held: Vec<String> = h.shards.iter().map(|s| s.shard.to_string()).collect();
    let scope = if h.spec.shards > 1 && held.len() < h.spec.shards as usize {
        format!(
            " This document holds shard {} of the matrix ({} in all).",
            held.join(", "),
            plural(h.plan.len(), "pair")
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "{} × {}, oracle `{}`, {}; spec `{}`, run `{}`.{scope}",
        plural(h.spec.inputs.len(), "topology file"),
        plural(h.spec.kernels.len(), "kernel"),
        h.spec.oracle,
        h.mode,
        h.spec_digest,
        h.run_id
    );
    if !h.spec.inject.is_empty() {
        let _ = writeln!(
            out,
            "Fault injection in every pair: `{}`; each pair is judged by `driver_survived` alone.",
            h.spec.inject.join("`, `")
        );
    }
    if !h.complete {
        let _ = writeln!(
            out,
            "\n**Incomplete:** the matrix was interrupted or a shard is missing; pairs marked NOT RUN have no result."
        );
    }
    table(&mut out, m);
    shards(&mut out, m);
    problems(&mut out, m);
    baselines(&mut out, m);
    found(&mut out, m);
    out
}

/// `--oracle baseline`: each pair's comparison with K0 (moved vectors, numbers).
fn baselines(out: &mut String, m: &MatrixReport) {
    let with: Vec<&PairRecord> = m.pairs.iter().filter(|r| r.baseline.is_some()).collect();
    if with.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Against the baseline\n");
    for r in with {
        if let Some(b) = &r.baseline {
            let _ = writeln!(out, "### `{}`\n\n```\n{}\n```", r.pair.name, b.to_text().trim_end());
        }
    }
}

/// `--random`: the shrunk topologies whose guest disagrees with the oracle.
fn found(out: &mut String, m: &MatrixReport) {
    let all: Vec<_> = m.header.shards.iter().flat_map(|s| &s.found).collect();
    if all.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Found topologies (shrunk, ready for topologies/)\n");
    for f in all {
        let _ = writeln!(
            out,
            "- `{}` from `{}` on {}: {}, {}, {} in {}; {}",
            f.file,
            f.pair,
            f.kernel,
            plural(f.cpus, "CPU"),
            plural(f.nodes, "node"),
            plural(f.steps.len(), "step"),
            plural_as(f.tries, "try", "tries"),
            cell(f.first_mismatch.as_deref().unwrap_or("disagrees with the oracle"))
        );
    }
}

fn table(out: &mut String, m: &MatrixReport) {
    let h = &m.header;
    // A column per kernel, per kernel and architecture on the arch axis.
    let archs: Vec<Option<crate::topology::Arch>> =
        if h.spec.archs.is_empty() { vec![None] } else { h.spec.archs.iter().copied().map(Some).collect() };
    let columns: Vec<(&str, Option<crate::topology::Arch>)> =
        h.spec.kernels.iter().flat_map(|k| archs.iter().map(move |&a| (k.label.as_str(), a))).collect();
    let heads: Vec<String> =
        columns.iter().map(|(k, a)| cell(&a.map_or_else(|| (*k).to_owned(), |a| format!("{k} ({a})")))).collect();
    let _ = writeln!(out, "\n| topology | {} |", heads.join(" | "));
    let _ = writeln!(out, "| --- |{}", " --- |".repeat(columns.len()));
    let mut elsewhere = false;
    for input in &h.spec.inputs {
        let size = input.vcpus.map_or_else(|| "broken file".to_owned(), |v| plural(v, "vCPU"));
        let cells: Vec<String> = columns
            .iter()
            .map(|&(k, a)| {
                let name = crate::matrix::spec::pair_name(&input.name, k, a);
                m.pairs.iter().find(|r| r.pair.name == name).map_or_else(
                    || {
                        elsewhere = true;
                        "—".to_owned()
                    },
                    pair_cell,
                )
            })
            .collect();
        let _ = writeln!(out, "| {} ({size}) | {} |", cell(&input.name), cells.join(" | "));
    }
    if elsewhere {
        let _ = writeln!(out, "\n— : the pair is in another shard.");
    }
}

fn shards(out: &mut String, m: &MatrixReport) {
    let _ = writeln!(out, "\n## Shards\n\n| shard | pairs | planned cost | wall time | jobs | status |\n| --- | --- | --- | --- | --- | --- |");
    for s in &m.header.shards {
        let status = if s.complete { "complete".to_owned() } else { "interrupted".to_owned() };
        let notes = if s.notes.is_empty() { String::new() } else { format!(" ({})", cell(&s.notes.join("; "))) };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} on {} | {status}{notes} |",
            s.shard,
            s.pairs,
            secs(s.planned_cost_s),
            secs(s.wall_s),
            s.jobs,
            plural(s.host_cores, "core")
        );
    }
    let held: Vec<u32> = m.header.shards.iter().map(|s| s.shard.index).collect();
    for k in (1..=m.header.spec.shards).filter(|k| !held.contains(k)) {
        let cost: f64 = m.header.plan.iter().filter(|p| p.shard == k).map(|p| p.cost_s).sum();
        let n = m.header.plan.iter().filter(|p| p.shard == k).count();
        let _ = writeln!(out, "| {k}/{} | {n} | {} | — | — | not in this document |", m.header.spec.shards, secs(cost));
    }
    let _ = writeln!(
        out,
        "\nPlanned cost: estimated seconds on the 2-core reference host (harness/crates/matrix/src/matrix/cost.rs)."
    );
}

fn problems(out: &mut String, m: &MatrixReport) {
    let bad: Vec<&PairRecord> =
        m.pairs.iter().filter(|r| matches!(r.status, PairStatus::Fail | PairStatus::RigError)).collect();
    if bad.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Failures and rig errors\n");
    for r in bad {
        match r.status {
            PairStatus::Fail => {
                let _ = writeln!(out, "- `{}` FAIL:", r.pair.name);
                for c in r.verdict().map(|v| v.failures().collect::<Vec<_>>()).unwrap_or_default() {
                    let _ = writeln!(out, "  - `{}`: {}", c.name, cell(&c.message));
                }
            }
            _ => {
                let _ = writeln!(out, "- `{}` rig error: {}", r.pair.name, cell(r.error.as_deref().unwrap_or("")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::shard::Shard;
    use crate::matrix::shard_run::dry_report;

    #[test]
    fn the_table_has_a_row_per_topology_and_a_column_per_kernel() {
        let mut m = dry_report(&["seed-002", "r24-no-smt"], &["6.12-min", "6.1"], Shard::WHOLE);
        m.pairs[3] = PairRecord::rig_error(m.pairs[3].pair.clone(), &std::io::Error::other("a | b"), None, None);
        let text = render(&m);
        assert!(text.starts_with("# manarig matrix: ERROR\n"), "{text}");
        assert!(text.contains("| topology | 6.12-min | 6.1 |"), "{text}");
        assert!(text.contains("| seed-002 (8 vCPUs) | PASS"), "{text}");
        assert!(text.contains("**ERROR**: a \\| b"), "pipes escaped: {text}");
        assert!(text.contains("| 1/1 | 4 |"), "{text}");
        assert!(!text.contains("another shard"), "{text}");
        let part = dry_report(&["seed-002", "r24-no-smt"], &["6.12-min"], Shard { index: 1, count: 2 });
        let text = render(&part);
        assert!(text.contains("holds shard 1/2") && text.contains("another shard"), "{text}");
    }

    #[test]
    fn the_arch_axis_gives_a_column_per_kernel_and_architecture() {
        use crate::topology::Arch;
        let m = crate::matrix::shard_run::dry_report_on(
            &["seed-002"],
            &["6.12", "7.x"],
            &[Arch::X86_64, Arch::Arm64],
            Shard::WHOLE,
        );
        let text = render(&m);
        assert!(text.contains("| topology | 6.12 (x86_64) | 6.12 (arm64) | 7.x (x86_64) | 7.x (arm64) |"), "{text}");
        assert!(text.contains("| seed-002 (8 vCPUs) | PASS"), "{text}");
        assert!(!text.contains("another shard"), "every pair found by its name: {text}");
    }
}
