//! What the guest reported: the MANA device's MSI-X vectors as `/proc/irq` and
//! `/proc/interrupts` show them, and how their names map to MSI-X indices.

use super::kernel_serde;
use crate::cpulist::{CpuMask, CpulistError};
use crate::model::{ExpectedTable, KernelGen, ModelBasis};
use serde::{Deserialize, Serialize};

/// The guest's view of one run, filled from its console report.
///
/// CPU ids are the guest's Linux CPU ids (= QEMU cpu indices, see
/// [`crate::topology::Topology::to_qemu_numbering`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    /// `uname -r` in the guest (`6.12.117+deb13-cloud-amd64`).
    pub kernel_release: String,
    /// The kernel generation the run was meant to test (selects the model and the IRQ
    /// naming scheme).
    #[serde(with = "kernel_serde")]
    pub kernel: KernelGen,
    /// Why `kernel`'s model judges this guest (its release, its source, `--model`).
    #[serde(default)]
    pub model_basis: ModelBasis,
    /// QEMU accelerator as the launcher passed it (`tcg,thread=single`, `kvm`).
    pub accel: String,
    /// The NIC's PCI address in the guest (`0000:41:00.0`); `None` if the guest did not
    /// find it.
    pub nic_bdf: Option<String>,
    /// `/sys/bus/pci/devices/<bdf>/numa_node`; `None` for -1 (NUMA_NO_NODE).
    pub nic_numa_node: Option<i32>,
    /// Every MANA IRQ of the device (names starting `mana_`), in `/proc/interrupts` order.
    pub vectors: Vec<ObservedVector>,
    /// Whether `mana` bound to the device (probe returned 0).
    pub probe_ok: bool,
    /// The probe (mana's `insmod`) had not returned when the agent's deadline
    /// passed (report `settle: deadline`): a hung probe, or a guest the host
    /// starved.
    #[serde(default)]
    pub probe_unfinished: bool,
    /// Kernel log lines from the driver (`mana …`), oldest first, for failure reports.
    pub dmesg_mana: Vec<String>,
}

/// One IRQ of the device as `/proc/irq/<irq>/` and `/proc/interrupts` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedVector {
    /// Linux IRQ number (`/proc/irq/<irq>`).
    pub irq: u32,
    /// Full name from `/proc/interrupts` (`mana_q3@pci:0000:41:00.0`).
    pub name: String,
    /// `/proc/irq/<irq>/smp_affinity_list`.
    pub smp_affinity: CpuMask,
    /// `/proc/irq/<irq>/affinity_hint`; `None` when the file is missing or all zero
    /// (no hint set).
    pub affinity_hint: Option<CpuMask>,
    /// `/proc/irq/<irq>/effective_affinity_list`; only meaningful once the vector has
    /// fired since its affinity was set: x86 without interrupt remapping applies the change
    /// when the vector next fires (`irq_move_masked_irq()`, kernel/irq/migration.c,
    /// `CONFIG_GENERIC_PENDING_IRQ`), and that first interrupt is still counted on the old
    /// CPU, so per-CPU counts are not evidence of the affinity.
    pub effective: Option<CpuMask>,
    /// Interrupt counts per CPU from `/proc/interrupts` (index = guest CPU id).
    pub counts: Vec<u64>,
}

impl ObservedVector {
    /// Parse `/proc/irq/N/affinity_hint` (a hex cpumask, `%*pb`): the kernel prints all
    /// zeros when no hint is set (`irq_affinity_hint_proc_show()`, kernel/irq/proc.c), which
    /// becomes `None`.
    ///
    /// # Errors
    /// [`CpulistError`] for text that is not a hex cpumask.
    pub fn parse_hint(text: &str) -> Result<Option<CpuMask>, CpulistError> {
        let mask = CpuMask::parse_mask_string(text)?;
        Ok((!mask.is_empty()).then_some(mask))
    }

    /// Total interrupts on all CPUs (saturating: counts come from the guest).
    pub fn interrupts(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, c| a.saturating_add(*c))
    }

    /// Whether the vector has fired at least once, so that `effective` is meaningful.
    pub fn fired(&self) -> bool {
        self.interrupts() > 0
    }
}

/// A MANA IRQ name taken apart: `mana_q3@pci:0000:41:00.0` → short name `mana_q3`, BDF
/// `0000:41:00.0`, MSI-X index 4 on 6.x.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorName<'a> {
    /// The name without `@pci:…` (`mana_q3`).
    pub short: &'a str,
    /// The PCI address after `@pci:`, if the name has one.
    pub bdf: Option<&'a str>,
    /// The MSI-X index the name stands for under the kernel's naming scheme, if it
    /// follows one: `mana_hwc` → 0; 6.x `mana_q<k>` → k + 1; 7.x `mana_msi<k>` → k
    /// (gdma_main.c `mana_gd_setup_irqs()` / `mana_gd_setup_dyn_irqs()`).
    pub msix_index: Option<u32>,
}

impl<'a> VectorName<'a> {
    /// Parse `name` under `gen`'s naming scheme. Never fails: an unknown name just has no
    /// MSI-X index.
    pub fn parse(name: &'a str, gen: KernelGen) -> Self {
        let (short, bdf) = match name.split_once('@') {
            Some((s, rest)) => (s, Some(rest.strip_prefix("pci:").unwrap_or(rest))),
            None => (name, None),
        };
        let number = |prefix: &str| {
            short
                .strip_prefix(prefix)
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<u32>().ok())
        };
        let msix_index = if short == "mana_hwc" {
            Some(0)
        } else if gen == KernelGen::V7 {
            number("mana_msi")
        } else {
            number("mana_q").and_then(|k| k.checked_add(1))
        };
        Self { short, bdf, msix_index }
    }
}

impl Observed {
    /// What a guest would report if the kernel did exactly what `expected` predicts:
    /// every vector present with the model's `smp_affinity_list` (and hint where MANA
    /// sets one), IRQ numbers from `first_irq` up, each vector fired once on the first
    /// CPU of its mask. For dry runs of the report formats and for tests; not a
    /// substitute for a guest.
    pub fn as_model_predicts(expected: &ExpectedTable, bdf: &str, first_irq: u32) -> Self {
        let vectors = expected
            .vectors
            .iter()
            .zip(first_irq..)
            .map(|(v, irq)| {
                let cpu = v.smp_affinity_list.first();
                let mut counts = vec![0; expected.nr_cpu_ids as usize];
                if let Some(c) = cpu.and_then(|c| counts.get_mut(c as usize)) {
                    *c = 1;
                }
                ObservedVector {
                    irq,
                    name: v.irq_name(bdf),
                    smp_affinity: v.smp_affinity_list.clone(),
                    affinity_hint: v.affinity_hint(),
                    effective: cpu.map(CpuMask::single),
                    counts,
                }
            })
            .collect();
        Self {
            kernel_release: format!("{} (model)", expected.kernel.model_version()),
            kernel: expected.kernel,
            model_basis: ModelBasis::Release,
            accel: "none (model)".to_owned(),
            nic_bdf: Some(bdf.to_owned()),
            nic_numa_node: expected.nic_node.and_then(|n| i32::try_from(n).ok()),
            vectors,
            probe_ok: expected.probe_error.is_none(),
            probe_unfinished: false,
            dmesg_mana: Vec::new(),
        }
    }

    /// The first vector whose short name (without `@pci:…`) is `short`.
    pub fn vector(&self, short: &str) -> Option<&ObservedVector> {
        self.vectors.iter().find(|v| v.name.split('@').next() == Some(short))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_hint_text_parses_and_all_zero_is_no_hint() {
        // Seed 003, "Before", IRQ 331: CPU 112 of 256.
        let s = "00000000,00000000,00000000,00000000,00010000,00000000,00000000,00000000";
        assert_eq!(ObservedVector::parse_hint(s), Ok(Some(CpuMask::single(112))));
        assert_eq!(ObservedVector::parse_hint("00\n"), Ok(None));
        assert_eq!(ObservedVector::parse_hint("03"), Ok(Some(CpuMask::first_n(2))));
        assert!(ObservedVector::parse_hint("xyz").is_err());
    }

    #[test]
    fn names_map_to_msix_indices_per_kernel() {
        // gdma_main.c: "mana_hwc@pci:%s" is vector 0; 6.x "mana_q%d@pci:%s" for vector
        // i + 1 (queue i); 7.x "mana_msi%d@pci:%s" for vector i.
        let n = VectorName::parse("mana_q3@pci:0000:41:00.0", KernelGen::V6_12);
        assert_eq!(n, VectorName { short: "mana_q3", bdf: Some("0000:41:00.0"), msix_index: Some(4) });
        let n = VectorName::parse("mana_msi4@pci:7870:00:00.0", KernelGen::V7);
        assert_eq!((n.short, n.bdf, n.msix_index), ("mana_msi4", Some("7870:00:00.0"), Some(4)));
        assert_eq!(VectorName::parse("mana_hwc@pci:x", KernelGen::V6_1).msix_index, Some(0));
        assert_eq!(VectorName::parse("mana_hwc@pci:x", KernelGen::V7).msix_index, Some(0));
        // The other generation's scheme, junk and a missing suffix do not panic.
        assert_eq!(VectorName::parse("mana_msi4@pci:x", KernelGen::V6_12).msix_index, None);
        assert_eq!(VectorName::parse("mana_q@pci:x", KernelGen::V6_12).msix_index, None);
        assert_eq!(VectorName::parse("mana_q99999999999", KernelGen::V6_1).msix_index, None);
        let n = VectorName::parse("mana_q0", KernelGen::V6_1);
        assert_eq!((n.bdf, n.msix_index), (None, Some(1)));
    }
}
