//! Judging a run: the guest's `/proc/irq` table against the model's, as a list of checks.

use super::check::{Check, CheckStatus, Status};
use super::geometry::Geometry;
use super::guest_irqs::{Observed, ObservedVector, VectorName};
use super::outcome::{RunInfo, Verdict, SCHEMA_VERSION};
use super::row::{ExpectedSide, ObservedSide, RowOutcome, VectorRow};
use super::summary::Summary;
use crate::cpulist::CpuMask;
use crate::model::{ExpectedTable, ExpectedVector, KernelGen, ModelBasis};
use crate::text::plural;
use crate::topology::{SourceKind, Topology};
use std::collections::HashMap;

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
    let mut checks =
        vec![check_kernel(observed, expected), check_nic_node(topo, observed), check_probe(observed, expected)];
    let (by_name, duplicates) = by_short_name(observed);
    checks.push(check_count(expected, by_name.len(), duplicates));
    let mut rows = Vec::with_capacity(expected.vectors.len() + observed.vectors.len());
    for ev in &expected.vectors {
        let ov = by_name.get(ev.short_name()).copied();
        let (row, check) = compare_vector(&geo, observed, ev, ov);
        rows.push(row);
        checks.push(check);
    }
    checks.push(check_unexpected(&geo, observed, expected, &by_name, &mut rows));
    checks.push(check_effective(&rows));
    let summary = Summary::new(&geo, expected.nic_node, &rows);
    let status = if checks.iter().any(|c| c.status == CheckStatus::Fail) { Status::Fail } else { Status::Pass };
    Verdict {
        schema_version: SCHEMA_VERSION,
        status,
        run: run_info(topo, observed, expected),
        vectors: rows,
        summary,
        checks,
        dmesg_mana: observed.dmesg_mana.clone(),
        queues: None,
        traffic: None,
        nics: None,
        irqbalance: None,
        selftests: None,
        soak: None,
    }
}

/// The observed MANA IRQs by short name (the first of each name), and how
/// many later ones repeat a name.
fn by_short_name(observed: &Observed) -> (HashMap<&str, &ObservedVector>, usize) {
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
    (by_name, duplicates)
}

/// `vector_count`: as many distinct MANA IRQs as the model's vectors, none repeated.
fn check_count(expected: &ExpectedTable, distinct: usize, duplicates: usize) -> Check {
    let n_expected = expected.vectors.len();
    Check::pass_if(
        "vector_count",
        distinct == n_expected && duplicates == 0,
        format!(
            "{} on Linux {}: the model expects {n_expected} MSI-X vectors (table {}), the guest shows {distinct} MANA IRQs{}",
            expected.topology,
            expected.kernel,
            expected.msix_table_size,
            if duplicates == 0 { String::new() } else { format!(" and {duplicates} duplicate names") }
        ),
    )
}

/// `no_unexpected_vectors`: MANA IRQs whose names the model does not have,
/// and repeated names, each also a row of `rows`.
fn check_unexpected(
    geo: &Geometry,
    observed: &Observed,
    expected: &ExpectedTable,
    by_name: &HashMap<&str, &ObservedVector>,
    rows: &mut Vec<VectorRow>,
) -> Check {
    let n_expected = expected.vectors.len();
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
            observed: Some(observed_side(geo, v)),
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
    extra
}

/// The verdict's header: the run, the topology and its source, the kernel and
/// the model, the machine and the NIC, the vector counts.
fn run_info(topo: &Topology, observed: &Observed, expected: &ExpectedTable) -> RunInfo {
    let src = topo.source();
    let kind = match src.kind {
        SourceKind::Seed => "seed",
        SourceKind::Report => "report",
        SourceKind::Review => "review",
        SourceKind::Synthetic => "synthetic",
    };
    RunInfo {
        name: format!("{}@{}", topo.name(), expected.kernel),
        topology: topo.name().to_owned(),
        source: format!("{kind} {}", src.id).trim().to_owned(),
        topology_expects: topo.expect().on(expected.kernel.as_str()).0,
        kernel: expected.kernel,
        kernel_release: observed.kernel_release.clone(),
        model_version: expected.kernel.model_version().to_owned(),
        model: expected.model.to_owned(),
        model_basis: observed.model_basis.to_string(),
        accel: observed.accel.clone(),
        cpu_numbering: topo.numbering(),
        online_cpus: expected.online_cpus,
        nr_cpu_ids: expected.nr_cpu_ids,
        nic_node: expected.nic_node,
        nic_numa_node_observed: observed.nic_numa_node,
        nic_bdf: observed.nic_bdf.clone(),
        hops: expected.hops.clone(),
        msix_table_size: expected.msix_table_size,
        vectors_expected: u32::try_from(expected.vectors.len()).unwrap_or(u32::MAX),
        vectors_observed: u32::try_from(observed.vectors.len()).unwrap_or(u32::MAX),
        probe_ok: observed.probe_ok,
        probe_error_expected: expected.probe_error.clone(),
        packages: Vec::new(),
        judged_by: None,
    }
}

fn check_kernel(observed: &Observed, expected: &ExpectedTable) -> Check {
    let release = &observed.kernel_release;
    let model = format!("Linux {} ({}; {})", expected.kernel, expected.model, expected.kernel.model_version());
    if observed.kernel != expected.kernel {
        let msg = format!("the run is for {} but the model table is for {}", observed.kernel, expected.kernel);
        return Check::new("kernel_generation", CheckStatus::Fail, msg);
    }
    let guest_gen = release.parse::<KernelGen>().ok();
    let (status, message) = match &observed.model_basis {
        ModelBasis::Release => match guest_gen {
            Some(g) if g != expected.kernel => {
                (CheckStatus::Fail, format!("the guest runs {release}, a {g} kernel, not {}", expected.kernel))
            }
            Some(_) => (CheckStatus::Pass, format!("guest kernel {release} is modelled as {model}")),
            None => (
                CheckStatus::Pass,
                format!("guest kernel {release} is modelled as {model} (release not recognised; the run's kernel is trusted)"),
            ),
        },
        ModelBasis::Source { evidence } => (
            CheckStatus::Pass,
            format!(
                "guest kernel {release} is judged as {model}: its MANA IRQ code, not its release, decides ({evidence})"
            ),
        ),
        ModelBasis::Module { evidence } => (
            CheckStatus::Pass,
            format!(
                "guest kernel {release}, a newer Debian build than the pinned one, is judged as {model}: its \
                 mana.ko runs that code ({evidence})"
            ),
        ),
        ModelBasis::Given => {
            let says = guest_gen.filter(|g| *g != expected.kernel).map_or(String::new(), |g| format!("; its release says {g}"));
            (CheckStatus::Pass, format!("guest kernel {release} is judged as {model} because --model says so{says}"))
        }
    };
    Check::new("kernel_generation", status, message)
}

fn check_nic_node(topo: &Topology, observed: &Observed) -> Check {
    let want = topo.nic().node;
    let got = observed.nic_numa_node.and_then(|n| u32::try_from(n).ok());
    let show = |n: Option<u32>| n.map_or("-1 (NUMA_NO_NODE)".to_owned(), |n| n.to_string());
    let bdf = observed.nic_bdf.as_deref().unwrap_or("(PCI address not reported)");
    if want == got {
        Check::new(
            "nic_numa_node",
            CheckStatus::Pass,
            format!("NIC {bdf} has numa_node {} as the topology places it", show(got)),
        )
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
        (None, false) if observed.probe_unfinished => Check::new(
            "probe",
            CheckStatus::Fail,
            "mana's probe had not returned at the agent's deadline (settle: deadline): it hung, or the host \
             starved the guest (docs/rig-pitfalls.md); the model expects it to bind",
        ),
        (None, false) => {
            Check::new("probe", CheckStatus::Fail, "mana failed to probe the device; the model expects it to bind")
        }
        (Some(e), false) => {
            Check::new("probe", CheckStatus::Pass, format!("mana failed to probe, as the model predicts: {e}"))
        }
        (Some(e), true) => Check::new(
            "probe",
            CheckStatus::Fail,
            format!("mana bound to the device, but the model predicts a probe failure: {e}"),
        ),
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
    let want_hint = ev.affinity_hint();
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
                "{} (IRQ {}): effective_affinity_list {} is not inside smp_affinity_list {} after {}",
                r.name,
                o.irq,
                e.as_ref().map_or("(not reported)".to_owned(), CpuMask::to_cpulist),
                o.smp_affinity_list,
                plural(o.interrupts, "interrupt")
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
            format!("all {} that fired run inside their smp_affinity_list{not_yet}", plural(fired, "vector")),
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
