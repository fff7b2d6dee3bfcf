//! Pictures of a run: the machine drawn as nested boxes — package (socket), NUMA node,
//! core, thread — as hwloc's `lstopo` draws them, with the NIC attached to its node, each
//! CPU coloured by the number of MANA IRQs whose effective affinity is on it (with
//! `--traffic`, by the interrupts and softirqs it took under load), a dot per IRQ whose
//! `smp_affinity_list` holds it, each node's hop from the NIC's node as the colour of
//! its band and outline, and a legend. A machine with several NICs (`[[nic]]`) shows
//! every NIC in its node, each in its own colour, the dots in the colour of their NIC,
//! and the number on a CPU is the combined load (every NIC's IRQs delivered to it). `compare` draws before and after side
//! by side. An HTML report holds the picture and the run's tables.
//!
//! Public API (for `run`, `compare` and the matrix runner):
//! - [`svg()`]`(&Topology, &Picture) -> String` and [`html()`]`(&Topology, &Picture) -> String`,
//!   where a [`Picture`] is one [`Panel`] or a before/after pair, and a panel is a run's
//!   [`Verdict`] or [`Panel::NoGuestData`] (a rig error before the report: the topology
//!   is still drawn, marked "no guest data");
//! - [`cpu_counts`]`(&Verdict)`: per CPU, the counts the picture shows (the same numbers
//!   every CPU's `<title>` and `data-effective-irqs` / `data-affinity-irqs` attributes carry);
//! - [`cpu_load`]`(&Verdict)`: with `--traffic`, per CPU the queues' interrupts and the
//!   NET_RX / NET_TX softirqs during the flows (the verdict's `traffic.cpus`). A run with
//!   traffic fills each CPU by that load (interrupts + softirqs, as a share of the busiest
//!   CPU of the picture) instead of by its IRQ count, which stays written on the CPU; its
//!   `<title>` and `data-load-interrupts` / `data-load-net-rx` / `data-load-net-tx` carry
//!   the counts.
//!
//! CPU ids are the guest's (QEMU numbering), as in the report's tables; for a
//! `linux-smt-outer` file each CPU's title and `data-file-cpu` also give the file's id.
//!
//! Rendering uses the `svg` crate (bodoni/svg): a small, dependency-free composer of SVG
//! elements that escapes text and attribute values itself, so names from topology files
//! and error messages cannot break the document; the geometry (`layout`) is plain
//! arithmetic and the drawing (`draw`) only turns boxes into elements. A plotting library
//! (plotters) would bring a canvas model and fonts it does not need here; writing SVG text
//! by hand would mean our own escaping.

mod draw;
mod html;
mod layout;

use crate::topology::Topology;
use crate::verdict::Verdict;
use std::collections::BTreeMap;

/// One machine drawing: a run, or a run that produced no report.
#[derive(Debug, Clone, Copy)]
pub enum Panel<'a> {
    /// A judged run: its rows give the per-CPU counts.
    Run(&'a Verdict),
    /// A run that failed before the guest's report (a rig error): the topology alone,
    /// marked "no guest data".
    NoGuestData {
        /// What was being run (`seed-002@6.12`).
        run: &'a str,
        /// Why there is no data (the rig error, one line).
        reason: &'a str,
    },
}

/// What to draw: one run, or two side by side.
#[derive(Debug, Clone, Copy)]
pub enum Picture<'a> {
    /// `run`: one machine.
    One(Panel<'a>),
    /// `compare`: before (left) and after (right).
    BeforeAfter(Panel<'a>, Panel<'a>),
}

impl<'a> Picture<'a> {
    fn panels(&self) -> Vec<(Option<&'static str>, Panel<'a>)> {
        match *self {
            Picture::One(p) => vec![(None, p)],
            Picture::BeforeAfter(b, a) => vec![(Some("before"), b), (Some("after"), a)],
        }
    }
}

/// What one CPU received in a run, over every NIC of the machine (`[[nic]]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuCounts {
    /// MANA IRQs of every NIC whose effective CPU ([`crate::verdict::VectorRow::effective_cpu`]:
    /// fired, first CPU of `effective_affinity_list`) is this CPU: the combined load.
    pub effective: u32,
    /// MANA IRQs of every NIC whose observed `smp_affinity_list` holds this CPU.
    pub affinity: u32,
    /// [`Self::effective`] per NIC (index = NIC, NIC 0 first; one entry per NIC of the run).
    pub effective_per_nic: Vec<u32>,
    /// [`Self::affinity`] per NIC.
    pub affinity_per_nic: Vec<u32>,
    /// The short names of the first kind, NIC by NIC, each NIC's by MSI-X index
    /// (NIC K ≥ 1's as `nicK:<name>`).
    pub effective_irqs: Vec<String>,
    /// The short names of the second kind, in the same order.
    pub affinity_irqs: Vec<String>,
}

/// The IRQ rows of every NIC of a run: NIC 0's (the verdict's own), then NIC 1's, … as
/// (NIC index, name prefix, rows).
pub(crate) fn rows_per_nic(verdict: &Verdict) -> Vec<(usize, String, &[crate::verdict::VectorRow])> {
    let mut out = vec![(0, String::new(), verdict.vectors.as_slice())];
    for nic in verdict.nics.iter().flat_map(|n| &n.nics) {
        out.push((nic.index, format!("nic{}:", nic.index), nic.verdict.vectors.as_slice()));
    }
    out
}

/// Per guest CPU id, what a run's MANA IRQs did, every NIC's (CPUs without any are absent).
pub fn cpu_counts(verdict: &Verdict) -> BTreeMap<u32, CpuCounts> {
    let per_nic = rows_per_nic(verdict);
    let n = per_nic.iter().map(|(k, _, _)| k + 1).max().unwrap_or(1);
    let mut out: BTreeMap<u32, CpuCounts> = BTreeMap::new();
    let fresh = || CpuCounts { effective_per_nic: vec![0; n], affinity_per_nic: vec![0; n], ..CpuCounts::default() };
    for (k, prefix, rows) in per_nic {
        for row in rows {
            if let Some(cpu) = row.effective_cpu() {
                let c = out.entry(cpu).or_insert_with(fresh);
                c.effective += 1;
                c.effective_per_nic[k] += 1;
                c.effective_irqs.push(format!("{prefix}{}", row.name));
            }
            if let Some(o) = &row.observed {
                for cpu in o.smp_affinity_list.iter() {
                    let c = out.entry(cpu).or_insert_with(fresh);
                    c.affinity += 1;
                    c.affinity_per_nic[k] += 1;
                    c.affinity_irqs.push(format!("{prefix}{}", row.name));
                }
            }
        }
    }
    out
}

/// What one CPU took under load (`run --traffic`): its row of the verdict's
/// `traffic.cpus` (counts during the flows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuLoad {
    /// The queues' interrupts it took (the channels' IRQs, not the HWC's).
    pub interrupts: u64,
    /// NET_RX softirqs it ran.
    pub net_rx: u64,
    /// NET_TX softirqs it ran.
    pub net_tx: u64,
}

impl CpuLoad {
    /// Interrupts plus softirqs: what the picture's load colour measures.
    pub fn total(&self) -> u64 {
        self.interrupts + self.net_rx + self.net_tx
    }
}

/// Per guest CPU id, what it took under load; `None` for a run without `--traffic`.
pub fn cpu_load(verdict: &Verdict) -> Option<BTreeMap<u32, CpuLoad>> {
    let t = verdict.traffic.as_ref()?;
    Some(
        t.cpus
            .iter()
            .map(|c| (c.cpu, CpuLoad { interrupts: c.interrupts, net_rx: c.net_rx, net_tx: c.net_tx }))
            .collect(),
    )
}

/// The picture as an SVG document (UTF-8 text, no XML declaration; sizes in CSS pixels).
pub fn svg(topology: &Topology, picture: &Picture<'_>) -> String {
    draw::document(topology, picture).to_string() + "\n"
}

/// For pages that hold several pictures (the matrix report): the tables of `picture`'s
/// runs as HTML sections, text escaped for HTML, and the reports' style sheet.
pub use html::{escape as html_escape, tables as html_tables, STYLE as HTML_STYLE};

/// A self-contained HTML report: the picture inline, then each run's tables (the human
/// report, and for a before/after pair the side-by-side table) or the rig error.
pub fn html(topology: &Topology, picture: &Picture<'_>) -> String {
    html::page(topology, picture, &svg(topology, picture))
}

#[cfg(test)]
mod tests;
