//! Each property as a function from the guest's vectors to its violations (one line
//! each, naming the vector and the CPUs).

use super::machine::{Core, Machine};
use crate::cpulist::CpuMask;
use std::collections::BTreeMap;

/// One MANA vector as the properties see it.
pub(super) struct Vector {
    /// `mana_q3 (MSI-X 4, IRQ 28)`.
    pub(super) label: String,
    /// The HWC vector (MSI-X 0): balance leaves it out.
    pub(super) hwc: bool,
    /// `smp_affinity_list`.
    pub(super) mask: CpuMask,
    /// `affinity_hint` (`None` = the driver set none).
    pub(super) hint: Option<CpuMask>,
}

impl Vector {
    /// A vector the driver placed: the ones locality judges and counts.
    fn placed(&self) -> bool {
        self.hint.is_some()
    }

    /// A queue vector the driver placed: the ones balance judges and counts.
    fn queue(&self) -> bool {
        !self.hwc && self.placed()
    }
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn core_text(c: &Core) -> String {
    format!("core {} (CPUs {})", c.id, c.cpus.to_cpulist())
}

/// CPUs online, `smp_affinity_list` inside the driver's hint.
pub(super) fn online(m: &Machine, vectors: &[Vector]) -> Vec<String> {
    let mut out = Vec::new();
    for v in vectors {
        let offline = v.mask.andnot(&m.online);
        if v.mask.is_empty() {
            out.push(format!("{}: smp_affinity_list is empty", v.label));
        } else if !offline.is_empty() {
            out.push(format!(
                "{}: smp_affinity_list {} has {} that {} not online (online: {})",
                v.label,
                v.mask.to_cpulist(),
                offline.named(),
                crate::text::agree(offline.count(), "is", "are"),
                m.online.to_cpulist()
            ));
        }
        if let Some(h) = &v.hint {
            let outside = v.mask.andnot(h);
            if !h.andnot(&m.online).is_empty() {
                out.push(format!("{}: affinity_hint {} names CPUs that are not online", v.label, h.to_cpulist()));
            } else if !outside.is_empty() {
                out.push(format!(
                    "{}: smp_affinity_list {} leaves the driver's affinity_hint {} (CPUs {}): something other than the driver moved it",
                    v.label,
                    v.mask.to_cpulist(),
                    h.to_cpulist(),
                    outside.to_cpulist()
                ));
            }
        }
    }
    out
}

/// Every vector carries the driver's hint.
pub(super) fn placed(m: &Machine, vectors: &[Vector]) -> Vec<String> {
    vectors
        .iter()
        .filter(|v| v.hint.is_none())
        .map(|v| {
            format!("{}: no affinity_hint: the driver left it at the kernel's default {}", v.label, m.describe(&v.mask))
        })
        .collect()
}

/// A placed mask is one CPU or a whole sibling group.
pub(super) fn sibling_groups(m: &Machine, vectors: &[Vector]) -> Vec<String> {
    let mut out = Vec::new();
    for v in vectors.iter().filter(|v| v.hint.is_some() && v.mask.count() > 1) {
        if let Some(core) = m.core_holding(&v.mask) {
            if core.cpus == v.mask {
                continue;
            }
        }
        let mut parts: BTreeMap<u32, (CpuMask, CpuMask)> = BTreeMap::new();
        for cpu in v.mask.iter().filter(|&c| c < m.guest.ncpu()) {
            let group = m.guest.siblings(cpu).and(&m.online);
            parts.entry(m.guest.core_of(cpu)).or_insert_with(|| (CpuMask::new(), group)).0.insert(cpu);
        }
        if parts.is_empty() {
            continue; // no CPU on the machine: `online` reports it
        }
        let pieces: Vec<String> = parts
            .values()
            .map(|(took, group)| format!("{} of sibling group {}", took.to_cpulist(), group.to_cpulist()))
            .collect();
        out.push(format!(
            "{}: smp_affinity_list {} is neither one CPU nor a whole sibling group: it takes {}",
            v.label,
            v.mask.to_cpulist(),
            pieces.join(", ")
        ));
    }
    out
}

/// Queue IRQs per core so far, in MSI-X order.
#[derive(Default)]
struct Tally {
    per_core: BTreeMap<u32, u32>,
}

impl Tally {
    fn of(&self, core: &Core) -> u32 {
        self.per_core.get(&core.id).copied().unwrap_or(0)
    }

    fn add(&mut self, core: &Core) {
        *self.per_core.entry(core.id).or_default() += 1;
    }
}

/// In MSI-X order, no IRQ reaches past a hop that still has a core without one (the
/// HWC's core has one).
pub(super) fn locality(m: &Machine, vectors: &[Vector]) -> Vec<String> {
    let hop_cores: Vec<Vec<Core>> = (0..m.hops.len()).map(|h| m.cores_of_hop(h)).collect();
    let mut tally = Tally::default();
    let mut out = Vec::new();
    for v in vectors.iter().filter(|v| v.placed()) {
        if let Some(far) = m.farthest_hop(&v.mask) {
            let free: Vec<(usize, &Core)> = hop_cores[..far]
                .iter()
                .enumerate()
                .flat_map(|(h, cores)| cores.iter().map(move |c| (h, c)))
                .filter(|(_, c)| tally.of(c) == 0)
                .collect();
            if let Some((h, first)) = free.first() {
                let more =
                    if free.len() > 1 { format!(" (and {} more free cores)", free.len() - 1) } else { String::new() };
                out.push(format!(
                    "{} on {} while hop {h} still had {} without an IRQ{more}",
                    v.label,
                    m.describe(&v.mask),
                    core_text(first)
                ));
            }
        }
        if let Some(core) = m.core_holding(&v.mask) {
            tally.add(&core);
        }
    }
    out
}

/// In MSI-X order, no core gets its (n+1)-th queue IRQ while a core of its hop has
/// fewer than n.
pub(super) fn balance(m: &Machine, vectors: &[Vector]) -> Vec<String> {
    let hop_cores: Vec<Vec<Core>> = (0..m.hops.len()).map(|h| m.cores_of_hop(h)).collect();
    let mut tally = Tally::default();
    let mut out = Vec::new();
    for v in vectors.iter().filter(|v| v.queue()) {
        let Some(core) = m.core_holding(&v.mask) else { continue };
        let had = tally.of(&core);
        let same_hop = m.farthest_hop(&v.mask).and_then(|h| hop_cores.get(h));
        let poorer = same_hop.and_then(|cores| cores.iter().filter(|c| c.id != core.id).min_by_key(|c| tally.of(c)));
        if let Some(p) = poorer.filter(|p| tally.of(p) < had) {
            let has = match tally.of(p) {
                0 => "none".to_owned(),
                n => n.to_string(),
            };
            out.push(format!(
                "{} gives {} its {} IRQ while {} of the same hop has {has}",
                v.label,
                core_text(&core),
                ordinal(had + 1),
                core_text(p)
            ));
        }
        tally.add(&core);
    }
    out
}
