//! `numactl -H` (`--hardware`): the node list, each node's CPUs and memory, and the
//! distance matrix (`node distances:`, a header row of node ids, then `i: d d …` rows).
//!
//! Read lines: `available: N nodes (LIST)`, `node N cpus: a b c`, `node N size: X MB`
//! (numactl's MB are MiB: it prints bytes >> 20), `node N free: …` (skipped), the matrix,
//! and `No NUMA available on this system` (one node). Elided lines (`..`) may stand
//! anywhere but inside the matrix.

use super::error::{ErrorKind, ImportError, Origin};
use super::facts::{DistanceFacts, Facts, Sourced};
use super::paste::{is_elision, Line};
use crate::cpulist::CpuMask;
use crate::text::plural;

/// Whether `text` is a line only `numactl -H` prints (used to recognise its output).
pub(crate) fn is_numactl_line(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("available:")
        || t == "node distances:"
        || t.starts_with("No NUMA available")
        || node_line(t).is_some_and(|(_, what, _)| ["cpus", "size", "free"].contains(&what))
}

/// `node N what: rest` → (N, what, rest).
fn node_line(t: &str) -> Option<(u32, &str, &str)> {
    let rest = t.strip_prefix("node ")?;
    let (head, value) = rest.split_once(':')?;
    let mut words = head.split_whitespace();
    let id = words.next()?.parse().ok()?;
    let what = words.next()?;
    words.next().is_none().then_some((id, what, value.trim()))
}

fn unknown(file: &str, line: &Line<'_>, why: &str) -> ImportError {
    ImportError::new(ErrorKind::Unknown, Origin::line(file, line.no), format!("{:?}: {why}", line.text.trim()))
}

fn numbers(file: &str, line: &Line<'_>, text: &str) -> Result<Vec<u32>, ImportError> {
    text.split_whitespace()
        .map(|w| w.parse::<u32>().map_err(|_| unknown(file, line, &format!("{w:?} is not a number"))))
        .collect()
}

/// Read `numactl -H` output.
///
/// # Errors
/// [`ErrorKind::Unknown`] for a line numactl does not print or a value that does not
/// parse; [`ErrorKind::Truncated`] for a distance matrix with missing rows or entries;
/// [`ErrorKind::Contradiction`] for a node whose CPUs are listed twice differently.
pub(crate) fn read(file: &str, lines: &[Line<'_>]) -> Result<Facts, ImportError> {
    let mut facts = Facts::default();
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        let t = line.text.trim();
        i += 1;
        if t.is_empty() || is_elision(t) {
            continue;
        }
        let here = || Origin::line(file, line.no);
        if let Some(rest) = t.strip_prefix("available:") {
            // `available: 2 nodes (0-1)`
            let (count, ids) =
                rest.split_once('(').ok_or_else(|| unknown(file, line, "expected `available: N nodes (LIST)`"))?;
            let count = count.trim().trim_end_matches("nodes").trim();
            let count: u32 = count.parse().map_err(|_| unknown(file, line, "expected `available: N nodes (LIST)`"))?;
            let ids = CpuMask::parse_cpulist(ids.trim_end_matches(')').trim())
                .map_err(|e| ImportError::new(ErrorKind::Unknown, here(), e.to_string()))?;
            if ids.count() != count {
                return Err(ImportError::new(
                    ErrorKind::Contradiction,
                    here(),
                    format!("{} but the list ({ids}) has {}", plural(count, "node"), ids.count()),
                ));
            }
            facts.node_count = Some(Sourced::new(count, here()));
            facts.node_ids = Some(Sourced::new(ids.iter().collect(), here()));
        } else if t.starts_with("No NUMA available") {
            facts.node_count = Some(Sourced::new(1, here()));
        } else if t == "node distances:" {
            i = matrix(file, lines, i, line, &mut facts)?;
        } else if let Some((node, what, value)) = node_line(t) {
            match what {
                "cpus" => {
                    let ids = numbers(file, line, value)?;
                    if let Some(big) = ids.iter().find(|&&c| c >= crate::cpulist::MAX_CPUS) {
                        return Err(unknown(file, line, &format!("CPU {big} is beyond the kernel's limit")));
                    }
                    let cpus: CpuMask = ids.into_iter().collect();
                    facts.set_node_cpus(node, cpus, here())?;
                }
                "size" => {
                    let mib = value.strip_suffix("MB").map(str::trim).and_then(|v| v.parse::<u64>().ok());
                    let mib = mib.ok_or_else(|| unknown(file, line, "expected `node N size: X MB`"))?;
                    facts.set_node_memory(node, mib, here());
                }
                "free" => {}
                _ => return Err(unknown(file, line, "not a numactl -H line")),
            }
        } else {
            return Err(unknown(file, line, "not a numactl -H line"));
        }
    }
    facts.read.push("numactl -H".to_owned());
    Ok(facts)
}

/// The matrix after `node distances:` (at `lines[start..]`); returns the index after it.
fn matrix(
    file: &str,
    lines: &[Line<'_>],
    start: usize,
    title: &Line<'_>,
    facts: &mut Facts,
) -> Result<usize, ImportError> {
    let mut i = start;
    while i < lines.len() && lines[i].text.trim().is_empty() {
        i += 1;
    }
    let header = lines.get(i).ok_or_else(|| {
        ImportError::new(ErrorKind::Truncated, Origin::line(file, title.no), "`node distances:` without the matrix")
    })?;
    let ids_text = header.text.trim().strip_prefix("node").ok_or_else(|| {
        ImportError::new(
            ErrorKind::Truncated,
            Origin::line(file, header.no),
            "expected the `node 0 1 …` header of the distance matrix",
        )
    })?;
    let nodes = numbers(file, header, ids_text)?;
    if nodes.is_empty() {
        return Err(ImportError::new(
            ErrorKind::Truncated,
            Origin::line(file, header.no),
            "a distance matrix header without node ids",
        ));
    }
    i += 1;
    let (mut rows, mut row_origins) = (Vec::new(), Vec::new());
    for &want in &nodes {
        let row = lines.get(i).filter(|l| !l.text.trim().is_empty());
        let Some(row) = row else {
            let at = lines.get(i.saturating_sub(1)).map_or(header.no, |l| l.no);
            return Err(ImportError::new(
                ErrorKind::Truncated,
                Origin::line(file, at),
                format!("the distance matrix stops after {} of its {}", rows.len(), plural(nodes.len(), "row")),
            ));
        };
        let here = Origin::line(file, row.no);
        let (id, values) = row.text.trim().split_once(':').ok_or_else(|| {
            let kind = if is_elision(row.text) { ErrorKind::Truncated } else { ErrorKind::Unknown };
            ImportError::new(
                kind,
                here.clone(),
                format!("expected row `{want}: …` of the distance matrix ({})", plural(nodes.len(), "row")),
            )
        })?;
        if id.trim().parse::<u32>().ok() != Some(want) {
            return Err(ImportError::new(
                ErrorKind::Unknown,
                here,
                format!("expected row {want} of the distance matrix, found {:?}", id.trim()),
            ));
        }
        let values = numbers(file, row, values)?;
        if values.len() != nodes.len() {
            let kind = if values.len() < nodes.len() { ErrorKind::Truncated } else { ErrorKind::Contradiction };
            return Err(ImportError::new(
                kind,
                here,
                format!("row {want} has {} for {}", plural(values.len(), "distance"), plural(nodes.len(), "node")),
            ));
        }
        rows.push(values);
        row_origins.push(here);
        i += 1;
    }
    let origin = Origin::line(file, header.no);
    facts.distances = Some(Sourced::new(DistanceFacts { nodes, rows, row_origins }, origin));
    Ok(i)
}
