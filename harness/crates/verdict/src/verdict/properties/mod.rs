//! An oracle that needs no model: properties any sane MSI-X spreading of this driver
//! family has, judged on the guest's own IRQ table. For patches that change the
//! algorithm, where the reference model of the old one says nothing useful.
//!
//! Public API: [`evaluate`]`(&Topology, &Observed) -> Vec<Check>` (one check per
//! [`Property`], named `property_<name>`); [`Property`] names each rule, where it comes
//! from and which kernels keep it.
//!
//! Conventions:
//! - CPU ids are the guest's (the topology is taken to QEMU numbering with
//!   [`Topology::to_qemu_numbering`], which is idempotent).
//! - Locality and balance judge the vectors the driver placed (an `affinity_hint` is
//!   set) **in MSI-X order**: a device with fewer channels uses the first vectors only
//!   (seed 000, Souradeep Chakrabarti: "Total 4 channels were used, which was set up by
//!   ethtool."; Yury Norov's walk-through there adds the IRQs one at a time, "If I add
//!   one more IRQ, …"), so every prefix of the table must be a good spread too.
//! - Balance counts **queue** IRQs only; the HWC vector (MSI-X 0) carries the hardware
//!   channel, not traffic: the seeds' tables list queue IRQs only (seed 002's IRQ 0-7
//!   are the 8 queues), and with one vector more than CPUs both 6.12 and 7.x put it with
//!   the first queue on purpose (gdma_main.c `mana_gd_setup_irqs()`, Linux 6.12: "If
//!   number of IRQ is one extra than number of online CPUs, then we need to assign IRQ0
//!   (hwc irq) and IRQ1 to same CPU."). Locality counts it: a core with the HWC's IRQ
//!   is not a free core (6.1 and 6.3 spread the HWC with the queues).
//! - A core is an SMT sibling group (`topology_sibling_cpumask`); hops are the CPU nodes
//!   grouped by SLIT distance from the NIC's node (`for_each_numa_hop_mask()` order).
//!
//! Which kernels keep which property (each [`Property::applies_to`]): the properties
//! describe the hop-aware, sibling-aware design of `irq_setup()` (Linux 6.9-6.16) and
//! `mana_irq_setup_numa_aware()` (6.17-7.x). Older and simpler spreads break some of them
//! by design, and the checks say so: 6.1's flat `cpumask_local_spread()` breaks
//! locality on multi-hop machines whose CPU-id order is not distance order, and balance
//! on SMT machines (both threads of core 0 before core 1: seed 000's "Case 2"); 6.3's
//! hop-aware one keeps locality but breaks balance on SMT; 7.x's
//! `mana_irq_setup_linear()` (R06, low vCPU counts) breaks balance on SMT and locality
//! when the NIC's node is not the lowest-numbered; 6.12 and 7.x leave every queue
//! vector unplaced when the NIC sits on a memory-only node (R15), and there 6.3's
//! `cpumask_local_spread()` walks the hops of `numa_nearest_node()`, not the NIC node's
//! own distances (random machines with tied distances show it). The harness tests pin
//! this table for every machine of topologies/ and check 300 random machines.

mod machine;
mod rules;
mod without_model;

pub use without_model::{judge_without_model, rig_checks, with_checks};

use super::check::{Check, CheckStatus};
use super::guest_irqs::{Observed, VectorName};
use crate::text::plural;
use crate::topology::Topology;
use machine::Machine;
use rules::Vector;

/// A property of a sane spreading of MANA's MSI-X vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Property {
    /// Every vector's `smp_affinity_list` is non-empty, online, and inside the
    /// driver's `affinity_hint` when it set one.
    Online,
    /// Every vector carries the driver's `affinity_hint` (none is left at the kernel's
    /// default).
    Placed,
    /// No IRQ leaves the nearest NUMA hop while that hop still has a core without one
    /// (in MSI-X order).
    Locality,
    /// No core gets a second queue IRQ while a core of the same hop has none (in
    /// general: its (n+1)-th while another has fewer than n; in MSI-X order).
    Balance,
    /// A placed mask is a single CPU or a whole SMT sibling group.
    SiblingGroups,
}

impl Property {
    /// Every property, in report order.
    pub const ALL: [Property; 5] =
        [Property::Online, Property::Placed, Property::Locality, Property::Balance, Property::SiblingGroups];

    /// The check name: `property_online`, `property_placed`, `property_locality`,
    /// `property_balance`, `property_sibling_groups`.
    pub fn check_name(self) -> &'static str {
        match self {
            Self::Online => "property_online",
            Self::Placed => "property_placed",
            Self::Locality => "property_locality",
            Self::Balance => "property_balance",
            Self::SiblingGroups => "property_sibling_groups",
        }
    }

    /// The rule in one sentence.
    pub fn rule(self) -> &'static str {
        match self {
            Self::Online => "every IRQ's CPUs are online and inside the driver's affinity_hint",
            Self::Placed => "the driver set every IRQ's affinity (an affinity_hint), none is left at the default",
            Self::Locality => "no IRQ leaves the nearest NUMA hop while that hop still has a core without one",
            Self::Balance => "no core gets another queue IRQ while a core of the same hop has fewer",
            Self::SiblingGroups => "each IRQ's mask is a single CPU or a whole SMT sibling group",
        }
    }

    /// Where the rule comes from: a kernel comment or a review message, quoted.
    pub fn source(self) -> &'static str {
        match self {
            Self::Online => {
                "include/linux/interrupt.h irq_set_affinity_and_hint(): \"Updates the affinity hint and if @m is not \
                 NULL it applies it as the affinity of that interrupt.\"; seed 000 (PATCH 4/4, Souradeep Chakrabarti) \
                 spreads under cpus_read_lock() over num_online_cpus()"
            }
            Self::Placed => {
                "gdma_main.c mana_gd_setup_irqs() (Linux 6.9-6.16): \"we are using cpumask_local_spread instead of \
                 cpumask_first for the node, because the node can be mem only.\""
            }
            Self::Locality => {
                "seed 002 (commit message of 91bfe210e196, Yury Norov): \"2. NUMA locality is the second priority;\"; \
                 seed 000, Yury Norov: \"NUMA locality trumps sibling dislocality\"; include/linux/topology.h: \
                 \"for_each_numa_hop_mask - iterate over cpumasks of increasing NUMA distance from a given node.\""
            }
            Self::Balance => {
                "seed 002: \"1. No more than one IRQ per CPU, if possible;\" … \"3. Sibling dislocality is the last \
                 priority.\"; seed 000 (PATCH 4/4, Souradeep Chakrabarti): \"Existing MANA design assigns IRQ to every \
                 CPU, including sibling hyper-threads. This may cause multiple IRQs to be active simultaneously in the \
                 same core\"; Michael Kelley: \"the original problem was to avoid putting IRQs on both hyper-threads in \
                 the same core\""
            }
            Self::SiblingGroups => {
                "seed 002: \"assigns IRQs to sibling groups\"; seed 000, Yury Norov: \"I just added a bit more \
                 flexibility, so that kernel may pick any sibling for the IRQ.\" (Souradeep's one-CPU-per-IRQ table, \
                 which he calls \"very similar\", is the single-CPU form)"
            }
        }
    }

    /// The kernels whose spreading keeps the property (the model's tables on the
    /// topologies/ machines; harness tests check this).
    pub fn applies_to(self) -> &'static str {
        match self {
            Self::Online | Self::SiblingGroups => "every modelled kernel (6.1, 6.3, 6.12, 7.x)",
            Self::Placed => {
                "every modelled kernel, except 6.12 and 7.x with the NIC on a memory-only node (R15: the hop walk \
                 yields no mask, the vectors keep the default)"
            }
            Self::Locality => {
                "the hop-aware spreads: 6.3, 6.12 irq_setup(), 7.x mana_irq_setup_numa_aware(); not 6.1's flat \
                 cpumask_local_spread() or 7.x mana_irq_setup_linear() where CPU-id order is not distance order; \
                 with the NIC on a memory-only node 6.3 walks the hops of numa_nearest_node() (lowest id on a tie), \
                 which need not be the NIC node's own distance order"
            }
            Self::Balance => {
                "6.12 irq_setup() and 7.x mana_irq_setup_numa_aware(); not the one-CPU-per-IRQ spreads (6.1, 6.3, \
                 7.x linear) on SMT machines: both threads of a core before the next core (seed 000's Case 2)"
            }
        }
    }

    fn violations(self, m: &Machine, vectors: &[Vector]) -> Vec<String> {
        match self {
            Self::Online => rules::online(m, vectors),
            Self::Placed => rules::placed(m, vectors),
            Self::Locality => rules::locality(m, vectors),
            Self::Balance => rules::balance(m, vectors),
            Self::SiblingGroups => rules::sibling_groups(m, vectors),
        }
    }
}

/// The guest's MANA vectors in MSI-X order (names that follow no scheme last, in
/// `/proc/interrupts` order).
fn vectors(observed: &Observed) -> Vec<Vector> {
    let mut out: Vec<(Option<u32>, Vector)> = observed
        .vectors
        .iter()
        .map(|v| {
            let name = VectorName::parse(&v.name, observed.kernel);
            let index = name.msix_index.map_or_else(|| "MSI-X ?".to_owned(), |i| format!("MSI-X {i}"));
            let vector = Vector {
                label: format!("{} ({index}, IRQ {})", name.short, v.irq),
                hwc: name.msix_index == Some(0),
                mask: v.smp_affinity.clone(),
                hint: v.affinity_hint.clone(),
            };
            (name.msix_index, vector)
        })
        .collect();
    out.sort_by_key(|(i, _)| i.unwrap_or(u32::MAX));
    out.into_iter().map(|(_, v)| v).collect()
}

/// Judge the guest's IRQ table by every [`Property`], without a model.
///
/// - `topo`: the topology file as loaded, or already in the guest's numbering;
/// - `observed`: the guest's report; the NIC's node is the one the guest reports
///   (`numa_node`, -1 = NUMA_NO_NODE), which is what its driver spread around.
///
/// One [`Check`] per property, in [`Property::ALL`] order: pass with the rule and its
/// source, fail with the first violation as the message and the others (then the rule
/// and source) as detail lines, skip when the guest shows no MANA vector. Never panics
/// on odd guest data (CPUs beyond the machine are reported, not indexed).
pub fn evaluate(topo: &Topology, observed: &Observed) -> Vec<Check> {
    let nic = observed.nic_numa_node.and_then(|n| u32::try_from(n).ok());
    let machine = Machine::new(topo, nic);
    let vectors = vectors(observed);
    Property::ALL
        .iter()
        .map(|&p| {
            let about = format!("{} (source: {}; holds for {})", p.rule(), p.source(), p.applies_to());
            if vectors.is_empty() {
                let msg = format!("{}: no MANA vector in the guest to judge", p.rule());
                return Check {
                    name: p.check_name().to_owned(),
                    status: CheckStatus::Skip,
                    message: msg,
                    detail: Vec::new(),
                };
            }
            let mut found = p.violations(&machine, &vectors).into_iter();
            match found.next() {
                None => Check {
                    name: p.check_name().to_owned(),
                    status: CheckStatus::Pass,
                    message: format!("{}: {about}", plural(vectors.len(), "vector")),
                    detail: Vec::new(),
                },
                Some(first) => Check {
                    name: p.check_name().to_owned(),
                    status: CheckStatus::Fail,
                    message: first,
                    detail: found.chain(std::iter::once(format!("rule: {about}"))).collect(),
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
