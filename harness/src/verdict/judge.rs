//! The verdict: the guest's `/proc/irq` table against the model's, as a list of checks.

use super::kernel_serde;
use super::observed::{Observed, ObservedVector, VectorName};
use super::summary::Summary;
use crate::cli::{EXIT_MISMATCH, EXIT_PASS};
use crate::cpulist::CpuMask;
use crate::model::{Algorithm, ExpectedTable, ExpectedVector, KernelGen};
use crate::topology::{CpuNumbering, ExpectedVerdict, SourceKind, Topology};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Version of the serialised [`Verdict`] (the `--format json` schema). Bumped on any
/// change a consumer could notice (renamed or removed field, changed meaning).
pub const SCHEMA_VERSION: u32 = 1;

/// Outcome of a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Every check passed (or was skipped).
    Pass,
    /// At least one check failed: the guest differs from the model.
    Fail,
}

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckStatus {
    /// The guest agrees with the model.
    Pass,
    /// The guest differs from the model.
    Fail,
    /// Nothing to check (e.g. no vector fired, so effective affinity means nothing yet).
    Skip,
}

/// One pass/fail fact about the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// Stable identifier, a single word usable as a KTAP description or a JUnit test
    /// case name: `kernel_generation`, `nic_numa_node`, `probe`, `vector_count`, the
    /// vector's short IRQ name (`mana_q3`), `no_unexpected_vectors`,
    /// `effective_within_affinity`.
    pub name: String,
    /// Pass, fail or skip.
    pub status: CheckStatus,
    /// One line saying what was compared and what was found (for a failure: vector, IRQ
    /// name, expected vs got cpulists, node, hop).
    pub message: String,
    /// Further lines (one per difference when there are several).
    pub detail: Vec<String>,
}

impl Check {
    fn new(name: impl Into<String>, status: CheckStatus, message: impl Into<String>) -> Self {
        Self { name: name.into(), status, message: message.into(), detail: Vec::new() }
    }

    fn pass_if(name: &str, ok: bool, message: String) -> Self {
        Self::new(name, if ok { CheckStatus::Pass } else { CheckStatus::Fail }, message)
    }
}

/// How a vector compares with the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowOutcome {
    /// Present, `smp_affinity_list`, `affinity_hint` and PCI address as the model says.
    Match,
    /// Present but something differs.
    Mismatch,
    /// The model expects it; the guest has no such IRQ.
    Missing,
    /// The guest has it; the model does not expect it (or it is a duplicate).
    Unexpected,
}

/// What the model expects for one vector (guest CPU numbering).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedSide {
    /// Expected `smp_affinity_list`.
    pub smp_affinity_list: CpuMask,
    /// Expected `affinity_hint`: the same set when MANA sets the affinity
    /// (`irq_set_affinity_and_hint()`), `None` when the vector keeps the default.
    pub affinity_hint: Option<CpuMask>,
    /// Which kernel code sets it (`irq_setup`, `local_spread(hops)`, `default`, …).
    pub set_by: String,
    /// NUMA nodes of the set.
    pub nodes: Vec<u32>,
    /// Physical cores of the set.
    pub cores: Vec<u32>,
    /// First hop (from the NIC's node) containing the whole set.
    pub hop: Option<u32>,
}

/// What the guest shows for one vector (guest CPU numbering).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedSide {
    /// Linux IRQ number.
    pub irq: u32,
    /// Full `/proc/interrupts` name (`mana_q3@pci:0000:41:00.0`).
    pub irq_name: String,
    /// `smp_affinity_list`.
    pub smp_affinity_list: CpuMask,
    /// `affinity_hint` (`None` = no hint).
    pub affinity_hint: Option<CpuMask>,
    /// `effective_affinity_list` (meaningful only when `interrupts > 0`).
    pub effective: Option<CpuMask>,
    /// Total interrupts counted on all CPUs.
    pub interrupts: u64,
    /// NUMA nodes of `smp_affinity_list`.
    pub nodes: Vec<u32>,
    /// Physical cores of `smp_affinity_list`.
    pub cores: Vec<u32>,
    /// First hop (from the NIC's node) containing `smp_affinity_list`.
    pub hop: Option<u32>,
    /// `smp_affinity_list` in the topology file's CPU numbering (only for files that
    /// number CPUs differently from QEMU, e.g. seed 003's `linux-smt-outer`).
    pub file_cpus: Option<CpuMask>,
}

/// One row of the IRQ table: a vector the model expects, the guest has, or both.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorRow {
    /// MSI-X index (0 = HWC); `None` for an unexpected IRQ whose name follows no scheme.
    pub msix_index: Option<u32>,
    /// Short IRQ name (`mana_q3`).
    pub name: String,
    /// Queue number (the seeds' "IRQ" column): `msix_index - 1`, `None` for the HWC.
    pub queue: Option<u32>,
    /// How it compares.
    pub outcome: RowOutcome,
    /// The model's side (`None` for an unexpected IRQ).
    pub expected: Option<ExpectedSide>,
    /// The guest's side (`None` for a missing IRQ).
    pub observed: Option<ObservedSide>,
}

impl VectorRow {
    /// The effective CPU if the vector has fired (`None` if it never fired or the kernel
    /// shows no effective affinity): the first CPU of `effective_affinity_list` (x86
    /// delivers a vector to one CPU).
    pub fn effective_cpu(&self) -> Option<u32> {
        let o = self.observed.as_ref()?;
        if o.interrupts == 0 {
            return None;
        }
        o.effective.as_ref()?.first()
    }
}

/// Facts about the run that every format prints in its header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Test name of the run: `<topology>@<kernel>` (`seed-002@6.12`).
    pub name: String,
    /// Topology name.
    pub topology: String,
    /// Where the topology comes from (`seed 002`, `report R08`).
    pub source: String,
    /// What the topology file expects of a run.
    pub topology_expects: ExpectedVerdict,
    /// Kernel generation modelled.
    #[serde(with = "kernel_serde")]
    pub kernel: KernelGen,
    /// Guest `uname -r`.
    pub kernel_release: String,
    /// Debian package whose code the model follows.
    pub model_version: String,
    /// QEMU accelerator.
    pub accel: String,
    /// The topology file's CPU numbering (the tables use guest = QEMU numbering).
    pub cpu_numbering: CpuNumbering,
    /// Online CPUs.
    pub online_cpus: u32,
    /// `nr_cpu_ids` (width of the hex masks).
    pub nr_cpu_ids: u32,
    /// The NIC's node in the topology (`None` = NUMA_NO_NODE).
    pub nic_node: Option<u32>,
    /// The NIC's `numa_node` in the guest (`None` = -1, NUMA_NO_NODE).
    pub nic_numa_node_observed: Option<i32>,
    /// The NIC's PCI address in the guest.
    pub nic_bdf: Option<String>,
    /// CPUs each hop from the NIC's node adds (guest numbering).
    pub hops: Vec<CpuMask>,
    /// MSI-X table size.
    pub msix_table_size: u32,
    /// Vectors the model expects.
    pub vectors_expected: u32,
    /// MANA IRQs the guest shows.
    pub vectors_observed: u32,
    /// Whether the probe succeeded in the guest.
    pub probe_ok: bool,
    /// Why the model expects the probe to fail, if it does.
    pub probe_error_expected: Option<String>,
}

/// The verdict of one run: a serde value that every output format renders.
///
/// Built by [`judge`]; [`Verdict::exit_code`] gives the process exit code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Pass when no check failed.
    pub status: Status,
    /// Header facts.
    pub run: RunInfo,
    /// The IRQ table, by MSI-X index, then unexpected IRQs.
    pub vectors: Vec<VectorRow>,
    /// Reviewers' questions answered from `effective_affinity_list`.
    pub summary: Summary,
    /// Every check, in report order.
    pub checks: Vec<Check>,
    /// The driver's kernel log lines.
    pub dmesg_mana: Vec<String>,
}

impl Verdict {
    /// Process exit code: [`EXIT_PASS`] (0) or [`EXIT_MISMATCH`] (1).
    pub fn exit_code(&self) -> u8 {
        match self.status {
            Status::Pass => EXIT_PASS,
            Status::Fail => EXIT_MISMATCH,
        }
    }

    /// Checks that failed.
    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.status == CheckStatus::Fail)
    }

    /// Whether this outcome is what the topology file's `[expect] verdict` says
    /// (`pass` ↔ PASS, `mismatch` ↔ FAIL; `rig-error` never matches a verdict).
    pub fn as_topology_expects(&self) -> bool {
        matches!(
            (self.run.topology_expects, self.status),
            (ExpectedVerdict::Pass, Status::Pass) | (ExpectedVerdict::Mismatch, Status::Fail)
        )
    }
}

/// The `affinity_hint` the model expects for a vector: MANA sets every vector it places
/// with `irq_set_affinity_and_hint()` (gdma_main.c, 6.1–7.x), so the hint equals the
/// affinity; vectors left at the kernel's default have no hint.
pub fn expected_hint(v: &ExpectedVector) -> Option<CpuMask> {
    (v.algorithm != Algorithm::Default).then(|| v.smp_affinity_list.clone())
}

/// CPU-set facts in the guest's numbering: nodes, cores and hops of a cpumask.
pub(super) struct Geometry<'a> {
    /// The topology as the guest numbers it.
    pub(super) guest: Topology,
    /// The topology file as written.
    pub(super) file: &'a Topology,
    /// CPUs each hop adds.
    pub(super) hops: &'a [CpuMask],
}

impl<'a> Geometry<'a> {
    pub(super) fn new(file: &'a Topology, hops: &'a [CpuMask]) -> Self {
        Self { guest: file.to_qemu_numbering(), file, hops }
    }

    /// CPUs of `mask` that exist on the machine (odd guest data must not index past it).
    fn in_machine<'m>(&'m self, mask: &'m CpuMask) -> impl Iterator<Item = u32> + 'm {
        let n = self.guest.ncpu();
        mask.iter().take_while(move |&c| c < n)
    }

    pub(super) fn nodes(&self, mask: &CpuMask) -> Vec<u32> {
        self.guest.nodes().iter().filter(|n| n.cpus.intersects(mask)).map(|n| n.id).collect()
    }

    pub(super) fn cores(&self, mask: &CpuMask) -> Vec<u32> {
        let mut cores: Vec<u32> = self.in_machine(mask).map(|c| self.guest.core_of(c)).collect();
        cores.sort_unstable();
        cores.dedup();
        cores
    }

    /// First hop whose cumulative CPUs contain `mask`.
    pub(super) fn hop(&self, mask: &CpuMask) -> Option<u32> {
        let mut seen = CpuMask::new();
        for (i, h) in self.hops.iter().enumerate() {
            seen.or_assign(h);
            if mask.is_subset(&seen) {
                return u32::try_from(i).ok();
            }
        }
        None
    }

    /// The set in the file's numbering, when that differs from the guest's.
    pub(super) fn file_cpus(&self, mask: &CpuMask) -> Option<CpuMask> {
        (self.file.numbering() != CpuNumbering::Qemu)
            .then(|| self.in_machine(mask).map(|c| self.file.cpu_of_qemu_index(c)).collect())
    }

    /// `2-3 (node 0, hop 0)`.
    pub(super) fn describe(&self, mask: &CpuMask) -> String {
        let list = if mask.is_empty() { "(empty)".to_owned() } else { mask.to_cpulist() };
        let node_ids = self.nodes(mask);
        let nodes = match node_ids.len() {
            0 => "no node".to_owned(),
            1 => format!("node {}", node_ids[0]),
            _ => format!("nodes {}", ids(&node_ids)),
        };
        let hop = self.hop(mask).map_or("no hop".to_owned(), |h| format!("hop {h}"));
        format!("{list} ({nodes}, {hop})")
    }
}

/// A list of ids in cpulist form (`0-3,8`).
pub(super) fn ids(v: &[u32]) -> String {
    v.iter().copied().collect::<CpuMask>().to_cpulist()
}

fn hint_text(h: &Option<CpuMask>) -> String {
    match h {
        Some(m) => m.to_cpulist(),
        None => "none".to_owned(),
    }
}

/// Judge one run: compare what the guest shows with what the model predicts.
///
/// - `topo`: the topology file as loaded (either numbering; the guest's view is derived
///   with [`Topology::to_qemu_numbering`]);
/// - `observed`: the guest's report (guest CPU ids);
/// - `expected`: `model::expected_table(&topo.to_qemu_numbering(), observed.kernel)`.
///
/// Vectors are matched by short IRQ name (`mana_hwc`, 6.x `mana_q<k>`, 7.x
/// `mana_msi<k>`). Checks, in order: `kernel_generation`, `nic_numa_node`, `probe`,
/// `vector_count`, one per expected vector (named after it: `smp_affinity_list`,
/// `affinity_hint`, PCI address), `no_unexpected_vectors` (extra or duplicate MANA
/// IRQs), `effective_within_affinity` (each vector that fired has its effective CPU
/// inside `smp_affinity_list`; skipped when none fired). Never panics on odd guest data.
pub fn judge(topo: &Topology, observed: &Observed, expected: &ExpectedTable) -> Verdict {
    let geo = Geometry::new(topo, &expected.hops);
    let mut checks = vec![
        check_kernel(observed, expected),
        check_nic_node(topo, observed),
        check_probe(observed, expected),
    ];

    // Observed MANA IRQs by short name; later duplicates are unexpected.
    let mut by_name: HashMap<&str, &ObservedVector> = HashMap::new();
    let mut duplicates = 0usize;
    for v in &observed.vectors {
        let short = VectorName::parse(&v.name, observed.kernel).short;
        match by_name.entry(short) {
            std::collections::hash_map::Entry::Occupied(_) => duplicates += 1,
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(v);
            }
        }
    }
    let distinct = by_name.len();
    let n_expected = expected.vectors.len();
    let count_ok = distinct == n_expected && duplicates == 0;
    checks.push(Check::pass_if(
        "vector_count",
        count_ok,
        format!(
            "{} on Linux {}: the model expects {n_expected} MSI-X vectors (table {}), the guest shows {distinct} MANA IRQs{}",
            expected.topology,
            expected.kernel,
            expected.msix_table_size,
            if duplicates == 0 { String::new() } else { format!(" and {duplicates} duplicate names") }
        ),
    ));

    let mut rows = Vec::with_capacity(n_expected + observed.vectors.len());
    for ev in &expected.vectors {
        let ov = by_name.get(ev.short_name()).copied();
        let (row, check) = compare_vector(&geo, observed, ev, ov);
        rows.push(row);
        checks.push(check);
    }

    // Unexpected: names the model does not have, and duplicates.
    let mut extra_msgs = Vec::new();
    for v in &observed.vectors {
        let name = VectorName::parse(&v.name, observed.kernel);
        let is_first = by_name.get(name.short).is_some_and(|f| std::ptr::eq(*f, v));
        let known = expected.vector_by_name(name.short).is_some();
        if known && is_first {
            continue;
        }
        let first = by_name.get(name.short).map_or_else(String::new, |f| format!(" (the first is IRQ {})", f.irq));
        let why = if known {
            format!("a second IRQ named {}{first}", name.short)
        } else if n_expected == 0 {
            "not in the model (it expects no MANA vector)".to_owned()
        } else {
            format!("not in the model (it expects MSI-X 0-{} only)", n_expected - 1)
        };
        extra_msgs.push(format!(
            "{} (IRQ {}, smp_affinity_list {}): {why}",
            v.name,
            v.irq,
            geo.describe(&v.smp_affinity)
        ));
        rows.push(VectorRow {
            msix_index: name.msix_index,
            name: name.short.to_owned(),
            queue: name.msix_index.and_then(|i| i.checked_sub(1)),
            outcome: RowOutcome::Unexpected,
            expected: None,
            observed: Some(observed_side(&geo, v)),
        });
    }
    let mut extra = Check::pass_if(
        "no_unexpected_vectors",
        extra_msgs.is_empty(),
        if extra_msgs.is_empty() {
            "no MANA IRQ beyond the model's".to_owned()
        } else {
            format!("{} MANA IRQs the model does not expect: {}", extra_msgs.len(), extra_msgs[0])
        },
    );
    extra.detail = extra_msgs.into_iter().skip(1).collect();
    checks.push(extra);
    checks.push(check_effective(&rows));

    let summary = Summary::new(&geo, expected.nic_node, &rows);
    let status = if checks.iter().any(|c| c.status == CheckStatus::Fail) { Status::Fail } else { Status::Pass };
    let src = topo.source();
    let kind = match src.kind {
        SourceKind::Seed => "seed",
        SourceKind::Report => "report",
        SourceKind::Review => "review",
        SourceKind::Synthetic => "synthetic",
    };
    Verdict {
        schema_version: SCHEMA_VERSION,
        status,
        run: RunInfo {
            name: format!("{}@{}", topo.name(), expected.kernel),
            topology: topo.name().to_owned(),
            source: format!("{kind} {}", src.id).trim().to_owned(),
            topology_expects: topo.expect().verdict,
            kernel: expected.kernel,
            kernel_release: observed.kernel_release.clone(),
            model_version: expected.debian_version.to_owned(),
            accel: observed.accel.clone(),
            cpu_numbering: topo.numbering(),
            online_cpus: expected.online_cpus,
            nr_cpu_ids: expected.nr_cpu_ids,
            nic_node: expected.nic_node,
            nic_numa_node_observed: observed.nic_numa_node,
            nic_bdf: observed.nic_bdf.clone(),
            hops: expected.hops.clone(),
            msix_table_size: expected.msix_table_size,
            vectors_expected: u32::try_from(n_expected).unwrap_or(u32::MAX),
            vectors_observed: u32::try_from(observed.vectors.len()).unwrap_or(u32::MAX),
            probe_ok: observed.probe_ok,
            probe_error_expected: expected.probe_error.clone(),
        },
        vectors: rows,
        summary,
        checks,
        dmesg_mana: observed.dmesg_mana.clone(),
    }
}

fn check_kernel(observed: &Observed, expected: &ExpectedTable) -> Check {
    let release = &observed.kernel_release;
    let guest_gen = release.parse::<KernelGen>().ok();
    let mut problems = Vec::new();
    if observed.kernel != expected.kernel {
        problems.push(format!("the run is for {} but the model table is for {}", observed.kernel, expected.kernel));
    }
    if let Some(g) = guest_gen.filter(|g| *g != expected.kernel) {
        problems.push(format!("the guest runs {release}, a {g} kernel, not {}", expected.kernel));
    }
    if problems.is_empty() {
        let how = if guest_gen.is_some() { "" } else { " (release not recognised; the run's kernel is trusted)" };
        Check::new(
            "kernel_generation",
            CheckStatus::Pass,
            format!("guest kernel {release} is modelled as Linux {} (Debian {}){how}", expected.kernel, expected.debian_version),
        )
    } else {
        Check::new("kernel_generation", CheckStatus::Fail, problems.join("; "))
    }
}

fn check_nic_node(topo: &Topology, observed: &Observed) -> Check {
    let want = topo.nic().node;
    let got = observed.nic_numa_node.and_then(|n| u32::try_from(n).ok());
    let show = |n: Option<u32>| n.map_or("-1 (NUMA_NO_NODE)".to_owned(), |n| n.to_string());
    let bdf = observed.nic_bdf.as_deref().unwrap_or("(PCI address not reported)");
    if want == got {
        Check::new("nic_numa_node", CheckStatus::Pass, format!("NIC {bdf} has numa_node {} as the topology places it", show(got)))
    } else {
        Check::new(
            "nic_numa_node",
            CheckStatus::Fail,
            format!(
                "NIC {bdf}: the guest reads numa_node {}, the topology puts the NIC on node {}: every expectation below assumes the topology's node",
                show(got),
                show(want)
            ),
        )
    }
}

fn check_probe(observed: &Observed, expected: &ExpectedTable) -> Check {
    match (&expected.probe_error, observed.probe_ok) {
        (None, true) => Check::new("probe", CheckStatus::Pass, "mana bound to the device"),
        (None, false) => Check::new("probe", CheckStatus::Fail, "mana failed to probe the device; the model expects it to bind"),
        (Some(e), false) => Check::new("probe", CheckStatus::Pass, format!("mana failed to probe, as the model predicts: {e}")),
        (Some(e), true) => {
            Check::new("probe", CheckStatus::Fail, format!("mana bound to the device, but the model predicts a probe failure: {e}"))
        }
    }
}

fn observed_side(geo: &Geometry<'_>, v: &ObservedVector) -> ObservedSide {
    ObservedSide {
        irq: v.irq,
        irq_name: v.name.clone(),
        smp_affinity_list: v.smp_affinity.clone(),
        affinity_hint: v.affinity_hint.clone(),
        effective: v.effective.clone(),
        interrupts: v.interrupts(),
        nodes: geo.nodes(&v.smp_affinity),
        cores: geo.cores(&v.smp_affinity),
        hop: geo.hop(&v.smp_affinity),
        file_cpus: geo.file_cpus(&v.smp_affinity),
    }
}

fn compare_vector(
    geo: &Geometry<'_>,
    observed: &Observed,
    ev: &ExpectedVector,
    ov: Option<&ObservedVector>,
) -> (VectorRow, Check) {
    let want_hint = expected_hint(ev);
    let expected = ExpectedSide {
        smp_affinity_list: ev.smp_affinity_list.clone(),
        affinity_hint: want_hint.clone(),
        set_by: ev.algorithm.short().to_owned(),
        nodes: ev.nodes.clone(),
        cores: ev.cores.clone(),
        hop: ev.hop,
    };
    let short = ev.short_name();
    let mut row = VectorRow {
        msix_index: Some(ev.msix_index),
        name: short.to_owned(),
        queue: ev.queue,
        outcome: RowOutcome::Missing,
        expected: Some(expected),
        observed: None,
    };
    let want = geo.describe(&ev.smp_affinity_list);
    let Some(ov) = ov else {
        let msg = format!(
            "{short} (MSI-X {}): missing: the model expects smp_affinity_list {want} set by {}, the guest has no such IRQ",
            ev.msix_index,
            ev.algorithm.short()
        );
        return (row, Check::new(short, CheckStatus::Fail, msg));
    };
    let head = format!("{short} (MSI-X {}, IRQ {}, {})", ev.msix_index, ov.irq, ov.name);
    let mut diffs = Vec::new();
    if ov.smp_affinity != ev.smp_affinity_list {
        diffs.push(format!("smp_affinity_list expected {want}, got {}", geo.describe(&ov.smp_affinity)));
    }
    if ov.affinity_hint != want_hint {
        diffs.push(format!("affinity_hint expected {}, got {}", hint_text(&want_hint), hint_text(&ov.affinity_hint)));
    }
    let name = VectorName::parse(&ov.name, observed.kernel);
    if let Some(bdf) = &observed.nic_bdf {
        if name.bdf != Some(bdf.as_str()) {
            diffs.push(format!("IRQ name {} does not carry the NIC's PCI address {bdf}", ov.name));
        }
    }
    row.observed = Some(observed_side(geo, ov));
    if diffs.is_empty() {
        row.outcome = RowOutcome::Match;
        let msg = format!(
            "{head}: smp_affinity_list {want} as {} sets it, affinity_hint {}",
            ev.algorithm.short(),
            hint_text(&want_hint)
        );
        (row, Check::new(short, CheckStatus::Pass, msg))
    } else {
        row.outcome = RowOutcome::Mismatch;
        let mut check = Check::new(short, CheckStatus::Fail, format!("{head}: {}", diffs[0]));
        check.detail = diffs.into_iter().skip(1).map(|d| format!("{head}: {d}")).collect();
        (row, check)
    }
}

fn check_effective(rows: &[VectorRow]) -> Check {
    let mut fired = 0;
    let mut unfired = Vec::new();
    let mut outside = Vec::new();
    for r in rows {
        let Some(o) = &r.observed else { continue };
        if o.interrupts == 0 {
            unfired.push(r.name.clone());
            continue;
        }
        fired += 1;
        match &o.effective {
            Some(e) if !e.is_empty() && e.is_subset(&o.smp_affinity_list) => {}
            e => outside.push(format!(
                "{} (IRQ {}): effective_affinity_list {} is not inside smp_affinity_list {} after {} interrupts",
                r.name,
                o.irq,
                e.as_ref().map_or("(not reported)".to_owned(), CpuMask::to_cpulist),
                o.smp_affinity_list,
                o.interrupts
            )),
        }
    }
    let not_yet = if unfired.is_empty() {
        String::new()
    } else {
        format!("; {} never fired, their effective CPU is not yet meaningful: {}", unfired.len(), unfired.join(", "))
    };
    if fired == 0 {
        return Check::new(
            "effective_within_affinity",
            CheckStatus::Skip,
            format!("no vector has fired, so effective_affinity_list means nothing yet{not_yet}"),
        );
    }
    if outside.is_empty() {
        Check::new(
            "effective_within_affinity",
            CheckStatus::Pass,
            format!("all {fired} vectors that fired run inside their smp_affinity_list{not_yet}"),
        )
    } else {
        let mut c = Check::new("effective_within_affinity", CheckStatus::Fail, outside[0].clone());
        c.detail = outside.into_iter().skip(1).collect();
        if !not_yet.is_empty() {
            c.detail.push(not_yet.trim_start_matches("; ").to_owned());
        }
        c
    }
}
