//! Several vPorts per NIC: which MSI-X vector each vPort's channels use.
//!
//! The IRQs and their affinities do not depend on the vPort count (every vector is set
//! up at probe, [`super::expected_table`]); what does is the EQ → vector assignment:
//!
//! - Linux 6.1–6.16 (Debian 6.1.192, 6.12.117): the EQs belong to the **device**, not to
//!   a vPort: `mana_probe()` calls `mana_create_eq(ac)` once, before any vPort exists,
//!   and it creates `gc->max_num_queues` EQs in `ac->eqs` (mana_en.c). EQ i takes vector
//!   `(i + 1) % num_msix_usable` (6.12: `spec.eq.msix_index`; 6.1: the lowest free bit of
//!   the device's MSI-X bitmap in `mana_gd_register_irq()`, gdma_main.c, after the HWC's
//!   vector 0: the same numbers, as `max_num_queues` ≤ `num_msix_usable − 1`). Every
//!   vPort's channel i puts its CQs on that one EQ (`spec.cq.parent_eq = ac->eqs[i].eq`
//!   in `mana_create_txq()`, `&ac->eqs[i]` in `mana_create_rxq()`): the vPorts **share**
//!   the EQs and so the vectors, and the device holds `max_num_queues` Ethernet EQs
//!   whatever `num_ports` is, each carrying one SQ and one RQ per vPort. Each vPort opens
//!   with `gc->max_num_queues` channels (`mana_probe_port()`).
//! - Linux 7.x (Debian 7.3.4): `mana_gd_query_max_resources()` (gdma_main.c) gives
//!   each vPort `max(rounddown_pow_of_two((num_msix_usable − 1) / num_ports), 16)`
//!   queues, at most `gc->max_num_queues`; when that many for every vPort fit in the
//!   `num_msix_usable − 1` queue vectors each vPort gets **dedicated** vectors, else they
//!   **share** (`msi_sharing`, always on without dynamic MSI-X). A vPort opens with
//!   `min(max_num_queues_vport, MANA_DEF_NUM_QUEUES = 16)` channels and creates its EQs
//!   when it opens (`mana_alloc_queues()` → `mana_create_eq(apc)`, mana_en.c: the EQs
//!   belong to the **vPort**, `apc->eqs`, one per channel, even when vectors are shared): dedicated,
//!   each EQ takes the lowest free vector of the device's bitmap (`mana_gd_get_gic()`
//!   with the bitmap, vector 0 being the HWC's), so vPorts opened in order 0, 1, … get
//!   consecutive vectors; shared, channel i takes vector `(i + 1) % num_msix_usable`.

use super::kernel::KernelGen;
use crate::topology::Topology;

/// MANA_MAX_NUM_QUEUES (include/net/mana/gdma.h).
const MANA_MAX_NUM_QUEUES: u32 = 64;
/// MANA_DEF_NUM_QUEUES (include/net/mana/mana.h, Debian 7.3.4).
const MANA_DEF_NUM_QUEUES: u32 = 16;

/// Who owns the Ethernet EQs, and so how many the device holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EqScope {
    /// Linux 6.1–6.16: one set of `max_num_queues` EQs per device, created at probe
    /// (`mana_create_eq(ac)`); channel i of every vPort uses EQ i.
    Device,
    /// Linux 7.x: each vPort creates one EQ per channel when it opens
    /// (`mana_create_eq(apc)`), on dedicated or shared vectors.
    Vport,
}

/// The vPorts' channels and their vectors, for vPorts opened in order 0, 1, ….
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VportPlan {
    /// `num_msix_usable`: the HWC's vector plus the queue vectors.
    pub msix_usable: u32,
    /// Whether the vPorts share vectors (`gc->msi_sharing` on 7.x; always on 6.x).
    pub sharing: bool,
    /// Whether the EQs are the device's (6.x) or each vPort's (7.x).
    pub eq_scope: EqScope,
    /// Per vPort: the MSI-X index of each channel's EQ, channel 0 first.
    pub vectors: Vec<Vec<u32>>,
}

/// One Ethernet EQ that carries queues, as the device holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedEq {
    /// Its `eq_pci_msix_index`.
    pub msix_index: u32,
    /// How many vPorts put a channel's SQ (and RQ) on it: 1 for a vPort's own EQ
    /// (7.x), every vPort with that channel for a device EQ (6.x).
    pub vports: u32,
}

impl VportPlan {
    /// The Ethernet EQs that carry queues, in creation order (the device's EQ ids
    /// ascending): on 6.x the device's EQs 0, 1, … once, each shared by channel i of
    /// every vPort; on 7.x vPort 0's EQs, then vPort 1's, ….
    pub fn eqs(&self) -> Vec<PlannedEq> {
        match self.eq_scope {
            EqScope::Device => {
                // Channel i of every vPort has the same vector (EQ i's): the longest
                // vPort's list names each EQ once.
                let longest = self.vectors.iter().max_by_key(|v| v.len()).map_or(&[][..], Vec::as_slice);
                let sharing = |i: usize| self.vectors.iter().filter(|v| v.len() > i).count() as u32;
                longest
                    .iter()
                    .enumerate()
                    .map(|(i, &msix_index)| PlannedEq { msix_index, vports: sharing(i) })
                    .collect()
            }
            EqScope::Vport => {
                self.vectors.iter().flatten().map(|&msix_index| PlannedEq { msix_index, vports: 1 }).collect()
            }
        }
    }
}

fn rounddown_pow_of_two(n: u32) -> u32 {
    if n == 0 {
        0
    } else {
        1 << (31 - n.leading_zeros())
    }
}

/// The plan for NIC 0 of `topo` (`num_ports` vPorts) on `gen` with `ncpu` online CPUs;
/// `None` when the probe fails (`num_msix_usable` ≤ 1), as [`super::expected_table`] says.
pub fn vport_plan(topo: &Topology, gen: KernelGen) -> Option<VportPlan> {
    let nic = topo.nic();
    let ncpu = topo.ncpu();
    let dynamic = gen == KernelGen::V7 && nic.dynamic_msix;
    let usable = if dynamic {
        nic.max_msix.min(ncpu + 1).min(nic.msix_table_size)
    } else {
        nic.msix_table_size.min(ncpu.min(MANA_MAX_NUM_QUEUES) + 1).min(nic.max_msix)
    };
    if usable <= 1 {
        return None;
    }
    let max_queues = ncpu.min(MANA_MAX_NUM_QUEUES).min(nic.max_queues).min(usable - 1);
    let ports = nic.num_ports;
    let (sharing, per_port) = if gen == KernelGen::V7 {
        let fair = rounddown_pow_of_two(((usable - 1) / ports).max(1)).max(MANA_DEF_NUM_QUEUES).min(max_queues);
        let sharing = !dynamic || fair * ports > usable - 1;
        let most = if sharing { max_queues } else { fair };
        (sharing, most.min(MANA_DEF_NUM_QUEUES))
    } else {
        (true, max_queues)
    };
    let vectors = (0..ports)
        .map(|p| (0..per_port).map(|i| if sharing { (i + 1) % usable } else { 1 + p * per_port + i }).collect())
        .collect();
    let eq_scope = if gen == KernelGen::V7 { EqScope::Vport } else { EqScope::Device };
    Some(VportPlan { msix_usable: usable, sharing, eq_scope, vectors })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(file: &str) -> Topology {
        let path = format!("{}/../topologies/{file}.toml", env!("CARGO_MANIFEST_DIR"));
        Topology::load(path).expect("loads")
    }

    /// topologies/vports-dedicated.toml: 8 CPUs, num_msix_usable 9, max_queues 4, two
    /// vPorts: 7.3 gives each vPort min(max(rounddown_pow_of_two(8 / 2), 16), 4) = 4
    /// queues; 4 × 2 = 8 fit the 8 queue vectors, so vPort 0 has vectors 1-4 and vPort 1
    /// vectors 5-8. 6.12 shares: both vPorts on vectors 1-4.
    #[test]
    fn two_vports_get_dedicated_vectors_on_7x_when_they_fit_and_share_on_6_12() {
        let t = topo("vports-dedicated");
        let p = vport_plan(&t, KernelGen::V7).expect("probes");
        assert_eq!((p.msix_usable, p.sharing), (9, false));
        assert_eq!(p.vectors, vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8]]);
        assert_eq!(p.eq_scope, EqScope::Vport);
        let eqs: Vec<(u32, u32)> = p.eqs().iter().map(|e| (e.msix_index, e.vports)).collect();
        assert_eq!(eqs, (1..=8).map(|m| (m, 1)).collect::<Vec<_>>(), "eight EQs, one vPort's channel each");
        let p = vport_plan(&t, KernelGen::V6_12).expect("probes");
        assert!(p.sharing);
        assert_eq!(p.vectors, vec![vec![1, 2, 3, 4], vec![1, 2, 3, 4]]);
    }

    /// The same file on 6.1 and 6.12 (Debian 6.1.192, 6.12.117, mana_en.c):
    /// `mana_probe()` creates the device's `max_num_queues` = 4 EQs once
    /// (`mana_create_eq(ac)`, vectors 1-4) and channel i of both vPorts puts its CQs on
    /// `ac->eqs[i]`: the device holds four Ethernet EQs, each with two vPorts' queues
    /// (what `run --kernel 6.12-min` shows: EQ 1 with SQs 1,5 and RQs 1,5), not eight.
    #[test]
    fn on_6_x_both_vports_share_the_devices_four_eqs() {
        let t = topo("vports-dedicated");
        for gen in [KernelGen::V6_1, KernelGen::V6_3, KernelGen::V6_12] {
            let p = vport_plan(&t, gen).expect("probes");
            assert_eq!(p.eq_scope, EqScope::Device, "{gen:?}");
            let eqs: Vec<(u32, u32)> = p.eqs().iter().map(|e| (e.msix_index, e.vports)).collect();
            assert_eq!(eqs, vec![(1, 2), (2, 2), (3, 2), (4, 2)], "{gen:?}");
        }
    }

    /// Device EQs of vPorts with different channel counts: EQ i carries the vPorts
    /// that have a channel i.
    #[test]
    fn a_device_eq_counts_the_vports_that_have_its_channel() {
        let p = VportPlan {
            msix_usable: 9,
            sharing: true,
            eq_scope: EqScope::Device,
            vectors: vec![vec![1, 2], vec![1, 2, 3]],
        };
        let eqs: Vec<(u32, u32)> = p.eqs().iter().map(|e| (e.msix_index, e.vports)).collect();
        assert_eq!(eqs, vec![(1, 2), (2, 2), (3, 1)]);
    }

    /// Seed 002's machine with default queues and two vPorts: 7.3's floor of 16 queues
    /// per vPort, cut to max_num_queues 8, does not fit twice in 8 vectors: shared.
    #[test]
    fn two_vports_share_on_7x_when_the_floor_of_16_queues_does_not_fit() {
        let mut d = crate::topology::TopologyDraft::from(&topo("seed-002"));
        d.nic.num_ports = Some(2);
        let t = d.validate("x.toml").expect("valid");
        let p = vport_plan(&t, KernelGen::V7).expect("probes");
        assert!(p.sharing);
        assert_eq!(p.vectors, vec![(1..=8).collect::<Vec<u32>>(), (1..=8).collect()]);
        assert_eq!(p.eqs().len(), 16, "each vPort makes its own eight EQs on the shared vectors");
    }
}
