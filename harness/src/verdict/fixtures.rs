//! Test fixtures: topologies from `topologies/`, guest tables from the model or from a
//! seed's table, and small edits that make a guest differ.

use super::*;
use crate::cpulist::CpuMask;
use crate::model::{expected_table, ExpectedTable, KernelGen};
use crate::topology::Topology;

/// The PCI address used by the fixtures (QEMU's pxb-pcie bus 0x41 behind a root port).
pub(super) const BDF: &str = "0000:41:00.0";
/// First Linux IRQ number of the fixtures' vectors.
pub(super) const FIRST_IRQ: u32 = 24;

pub(super) fn topo(name: &str) -> Topology {
    let path = format!("{}/../topologies/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    Topology::load(path).unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn kernel(k: &str) -> KernelGen {
    k.parse().expect("kernel generation")
}

/// The table the guest should show (guest = QEMU CPU numbering).
pub(super) fn guest_table(t: &Topology, k: &str) -> ExpectedTable {
    expected_table(&t.to_qemu_numbering(), kernel(k))
}

/// One (topology, kernel) run: the topology, the model's table and a guest report that
/// starts as exactly what the model predicts.
pub(super) struct Run {
    pub(super) topo: Topology,
    pub(super) table: ExpectedTable,
    pub(super) observed: Observed,
}

impl Run {
    pub(super) fn new(name: &str, k: &str) -> Self {
        let topo = topo(name);
        let table = guest_table(&topo, k);
        let observed = Observed::as_model_predicts(&table, BDF, FIRST_IRQ);
        Self { topo, table, observed }
    }

    pub(super) fn judge(&self) -> Verdict {
        judge(&self.topo, &self.observed, &self.table)
    }

    pub(super) fn vector_mut(&mut self, short: &str) -> &mut ObservedVector {
        self.observed
            .vectors
            .iter_mut()
            .find(|v| v.name.split('@').next() == Some(short))
            .unwrap_or_else(|| panic!("no vector {short}"))
    }

    /// Set `smp_affinity_list` and `affinity_hint` of MSI-X vector `i` as the kernel shows
    /// them after `irq_set_affinity_and_hint(mask)`, with the vector fired once on the
    /// mask's first CPU (so its effective CPU has moved there).
    pub(super) fn set_affinity(&mut self, i: usize, cpulist: &str) {
        let m = mask(cpulist);
        let first = m.first().expect("non-empty mask");
        let v = &mut self.observed.vectors[i];
        v.effective = Some(CpuMask::single(first));
        v.counts = vec![0; self.table.nr_cpu_ids as usize];
        v.counts[first as usize] = 1;
        v.smp_affinity = m.clone();
        v.affinity_hint = Some(m);
    }

    /// Set every vector's effective CPU (in MSI-X order) and mark it fired once there.
    pub(super) fn set_effective(&mut self, cpus: &[u32]) {
        assert_eq!(cpus.len(), self.observed.vectors.len());
        for (v, &cpu) in self.observed.vectors.iter_mut().zip(cpus) {
            v.effective = Some(CpuMask::single(cpu));
            v.counts = vec![0; self.table.nr_cpu_ids as usize];
            v.counts[cpu as usize] = 1;
        }
    }
}

pub(super) fn mask(s: &str) -> CpuMask {
    CpuMask::parse_cpulist(s).expect("cpulist")
}

pub(super) fn check<'a>(v: &'a Verdict, name: &str) -> &'a Check {
    v.checks.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no check {name}"))
}

pub(super) fn rig_error() -> anyhow::Error {
    anyhow::anyhow!("QEMU exited with status 1 before the guest report")
        .context("guest boot of seed-002 (#1) failed")
}
