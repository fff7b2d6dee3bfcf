//! The guest's report turned into the verdict's inputs: its MANA IRQs as
//! [`Observed`] and each stage's facts.

use crate::cpulist::CpuMask;
use crate::guest_protocol::{GuestIrq, GuestReport};
use crate::model::{KernelGen, ModelBasis};
use crate::verdict::{Observed, ObservedVector, QueueTable, StageFacts, StageLink, VectorName};

/// A report's IRQ whose `affinity_hint` is not a hex cpumask.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("IRQ {irq} ({name}): affinity_hint {hint:?}")]
pub struct BadHint {
    /// The IRQ number.
    pub irq: u32,
    /// Its name in /proc/interrupts.
    pub name: String,
    /// The text the guest read.
    pub hint: String,
    /// Why it is not a cpumask.
    #[source]
    pub source: crate::cpulist::CpulistError,
}

/// [`Observed`] from the guest report: the NIC's MSI-X vectors with their
/// `smp_affinity_list`, `affinity_hint` and `effective_affinity_list`.
///
/// The probe counts as successful when the driver's netdev appeared and its
/// vectors are still allocated (a failed probe frees them:
/// docs/mana-protocol.md §4.1); insmod's status says nothing about
/// probe, because PCI driver registration succeeds even when probe fails.
///
/// # Errors
/// [`BadHint`]: an `affinity_hint` that is not a hex cpumask.
pub fn observed(report: &GuestReport, kernel: KernelGen, basis: &ModelBasis, accel: &str) -> Result<Observed, BadHint> {
    observed_of(report, report.nic.as_deref(), kernel, basis, accel)
}

/// [`observed`] for the NIC at `bdf` of a guest with several MANA NICs: only the
/// vectors whose name ends `@pci:<bdf>` (with one NIC in the report, every vector, as
/// [`observed`]); `bdf` `None` = the guest has no such NIC (no vectors, probe failed).
///
/// # Errors
/// As [`observed`].
pub fn observed_of(
    report: &GuestReport,
    bdf: Option<&str>,
    kernel: KernelGen,
    basis: &ModelBasis,
    accel: &str,
) -> Result<Observed, BadHint> {
    let several = report.nics.len() > 1;
    let mine = |irq: &&GuestIrq| !several || bdf.is_some_and(|b| VectorName::parse(&irq.name, kernel).bdf == Some(b));
    let vectors = report.msix.iter().filter(mine).map(vector).collect::<Result<Vec<_>, _>>()?;
    let nic_numa_node =
        bdf.and_then(|bdf| report.pci.get(bdf)).and_then(|pci| i32::try_from(pci.numa_node).ok()).filter(|&n| n >= 0);
    Ok(Observed {
        kernel_release: report.kernel.clone(),
        kernel,
        model_basis: basis.clone(),
        accel: accel.to_owned(),
        nic_bdf: bdf.map(str::to_owned),
        nic_numa_node,
        probe_ok: report.netdev.is_some() && !vectors.is_empty(),
        probe_unfinished: report.probe_unfinished(),
        vectors,
        dmesg_mana: report.dmesg.clone(),
    })
}

/// What a stage's report says beside the IRQ table (link, `ethtool -L`,
/// `rmmod`, kernel warnings), with the queue table the rig built for it.
pub fn stage_facts(report: &GuestReport, table: Option<QueueTable>) -> StageFacts {
    let at = |k: &str| report.times.get(k).copied();
    StageFacts {
        link: StageLink {
            netdev: report.netdev.clone(),
            ifup_s: at("ifup"),
            carrier: report.carrier,
            carrier_s: at("carrier"),
            // Both ends have /proc/uptime's centisecond resolution: no float noise.
            ifup_to_carrier_s: report.ifup_to_carrier_s().map(|s| (s * 100.0).round() / 100.0),
            ethtool_status: report.ethtool_status,
            ethtool_s: at("ethtool"),
            channels: report.channels,
        },
        rmmod_status: report.rmmod_status,
        warnings: report.warnings.clone(),
        table,
        online: Some(report.cpus.keys().copied().collect()),
        vectors: None,
    }
}

fn vector(irq: &GuestIrq) -> Result<ObservedVector, BadHint> {
    let mask = |cpus: &Option<Vec<u32>>| cpus.as_ref().map(|c| c.iter().copied().collect::<CpuMask>());
    let affinity_hint = match &irq.hint {
        Some(text) => ObservedVector::parse_hint(text).map_err(|source| BadHint {
            irq: irq.irq,
            name: irq.name.clone(),
            hint: text.clone(),
            source,
        })?,
        None => None,
    };
    Ok(ObservedVector {
        irq: irq.irq,
        name: irq.name.clone(),
        smp_affinity: mask(&irq.affinity).unwrap_or_default(),
        affinity_hint,
        effective: mask(&irq.effective),
        counts: irq.counts.clone(),
    })
}
