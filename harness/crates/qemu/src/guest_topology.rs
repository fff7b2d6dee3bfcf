//! The guest's topology = the declared one: compare what the guest reports
//! (sysfs) with the [`MachineSpec`] QEMU was given, before any IRQ verdict
//! relies on the guest's view.
//!
//! Compared: the present CPUs (all declared) and the online ones (those the
//! topology's `[scenario]` leaves online at that moment); per online CPU its package, die group (the CPUs
//! sharing its die, when the machine has more than one die per socket), SMT
//! sibling group (`thread_siblings_list`: its online siblings)
//! and node; per node its cpulist (online CPUs only, as x86 keeps `cpumask_of_node()`), whether it has memory, and its distance row;
//! the numa_node of the NIC's root port (and of the NIC when present). Core ids
//! are not compared: Linux numbers them from APIC IDs, which QEMU pads to
//! powers of two, so they need not be 0..cores.
//!
//! arm64 guests read the same sysfs, but their ids come from ACPI's PPTT,
//! where `physical_package_id` and `cluster_id` are the tables' offsets of
//! the package and cluster entries (measured on QEMU 11.1's virt machine with
//! Debian 6.12: packages 56 and 176, clusters 76 and 196): there the package
//! group and the cluster group (`cluster_id` within the package) of each CPU
//! are compared, not the ids.

use crate::cpulist::CpuMask;
use crate::guest_protocol::{format_cpulist, GuestReport};
use crate::qemu::{MachineSpec, NicPlacement};
use crate::topology::Arch;
use std::fmt;

/// PCI ids of QEMU's generic PCIe root port (`pcie-root-port`): Red Hat 1b36:000c.
const ROOT_PORT_ID: (u16, u16) = (0x1b36, 0x000c);

/// One difference between declared and observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// What was compared, e.g. `cpu 3 siblings`.
    pub what: String,
    /// The declared value.
    pub declared: String,
    /// The guest's value.
    pub observed: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: declared {}, observed {}", self.what, self.declared, self.observed)
    }
}

/// The cluster of cpu index `i` within its die (arm64; 0 with one cluster).
fn cluster_of(spec: &MachineSpec, i: u32) -> u32 {
    let per_cluster = spec.cores / spec.clusters.max(1);
    (i / spec.threads) % spec.cores / per_cluster.max(1)
}

/// Where cpu index `i` sits: (socket, die, core, thread), thread fastest, as
/// QEMU's `-smp` numbers cpu indexes.
fn position(spec: &MachineSpec, i: u32) -> (u32, u32, u32, u32) {
    let thread = i % spec.threads;
    let core = (i / spec.threads) % spec.cores;
    let die = (i / (spec.threads * spec.cores)) % spec.dies;
    let socket = i / (spec.threads * spec.cores * spec.dies);
    (socket, die, core, thread)
}

/// All differences, in a stable order; empty when the guest matches. `online`: the
/// CPUs that should be online (guest numbering; every CPU without a `[scenario]`).
pub fn compare(spec: &MachineSpec, r: &GuestReport, online: &CpuMask) -> Vec<Difference> {
    let mut d = Vec::new();
    let mut diff = |what: String, declared: String, observed: String| {
        if declared != observed {
            d.push(Difference { what, declared, observed });
        }
    };
    let n = spec.vcpus();
    let present: Vec<u32> = (0..n).collect();
    if let Some(observed) = &r.cpu_state.present {
        diff("present CPUs".into(), format_cpulist(&present), format_cpulist(observed));
    }
    let declared_cpus: Vec<u32> = online.iter().filter(|&c| c < n).collect();
    let observed_cpus: Vec<u32> = r.cpus.keys().copied().collect();
    diff("online CPUs".into(), format_cpulist(&declared_cpus), format_cpulist(&observed_cpus));
    let node_of = |c: u32| spec.nodes.iter().position(|nd| nd.cpus.contains(&c)).map_or(-1, |p| p as i64);
    for &c in &declared_cpus {
        let Some(g) = r.cpus.get(&c) else { continue };
        let (socket, die, _core, _thread) = position(spec, c);
        if spec.arch == Arch::Arm64 {
            arm64_groups(spec, r, c, g, &mut diff);
        } else {
            diff(format!("cpu {c} package"), socket.to_string(), g.package.to_string());
        }
        if spec.dies > 1 {
            // Compare die groups, not ids: kernels number die_id per package or
            // system-wide depending on version.
            let declared: Vec<u32> =
                (0..n).filter(|&o| position(spec, o).0 == socket && position(spec, o).1 == die).collect();
            let observed: Vec<u32> =
                r.cpus.iter().filter(|(_, o)| o.package == g.package && o.die == g.die).map(|(&o, _)| o).collect();
            diff(format!("cpu {c} die group"), format_cpulist(&declared), format_cpulist(&observed));
        }
        let first = c - c % spec.threads;
        let sib: Vec<u32> = (first..first + spec.threads).filter(|&s| online.contains(s)).collect();
        diff(format!("cpu {c} siblings"), format_cpulist(&sib), format_cpulist(&g.siblings));
        diff(format!("cpu {c} node"), node_of(c).to_string(), g.node.to_string());
    }
    let declared_nodes: Vec<u32> = (0..spec.nodes.len() as u32).collect();
    let observed_nodes: Vec<u32> = r.nodes.keys().copied().collect();
    diff("nodes".into(), format_cpulist(&declared_nodes), format_cpulist(&observed_nodes));
    for (id, nd) in spec.nodes.iter().enumerate() {
        let Some(g) = r.nodes.get(&(id as u32)) else { continue };
        let cpus: Vec<u32> = nd.cpus.iter().copied().filter(|&c| online.contains(c)).collect();
        diff(format!("node {id} cpulist"), format_cpulist(&cpus), format_cpulist(&g.cpus));
        let mem = |has: bool| if has { "memory" } else { "no memory" }.to_string();
        diff(format!("node {id} memory"), mem(nd.mem_mib > 0), mem(g.mem_kib > 0));
        let row = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(" ");
        diff(format!("node {id} distance"), row(&spec.distances[id]), row(&g.distance));
    }
    let want_node = match spec.nic {
        NicPlacement::Node(n) => i64::from(n),
        NicPlacement::NoNode => -1,
    };
    let root_port = match spec.root_port_bdf() {
        Some(bdf) => r.pci.get(&bdf).map(|p| (bdf, p)),
        None => r
            .pci
            .iter()
            .find(|(bdf, p)| bdf.starts_with("0000:00:") && (p.vendor, p.device) == ROOT_PORT_ID)
            .map(|(b, p)| (b.clone(), p)),
    };
    match root_port {
        Some((bdf, p)) => {
            diff(format!("NIC root port {bdf} numa_node"), want_node.to_string(), p.numa_node.to_string())
        }
        None => diff("NIC root port".into(), "present".into(), "missing".into()),
    }
    if let Some(nic) = &r.nic {
        let got = r.pci.get(nic).map_or("missing".into(), |p| p.numa_node.to_string());
        diff(format!("NIC {nic} numa_node"), want_node.to_string(), got);
    }
    more_nics(spec, r, &mut diff);
    d
}

/// An arm64 CPU's package group (the CPUs with its `physical_package_id`)
/// and, when the agent reported `cluster_id`, its cluster group (the CPUs of
/// its package with its `cluster_id`), each against the declared one. Only
/// online CPUs are in the report; the declared groups are cut to them.
fn arm64_groups(
    spec: &MachineSpec,
    r: &GuestReport,
    c: u32,
    g: &crate::guest_protocol::GuestCpu,
    diff: &mut impl FnMut(String, String, String),
) {
    let online: Vec<u32> = r.cpus.keys().copied().collect();
    let socket = position(spec, c).0;
    let declared: Vec<u32> = online.iter().copied().filter(|&o| position(spec, o).0 == socket).collect();
    let observed: Vec<u32> = r.cpus.iter().filter(|(_, o)| o.package == g.package).map(|(&o, _)| o).collect();
    diff(format!("cpu {c} package group"), format_cpulist(&declared), format_cpulist(&observed));
    if g.cluster.is_some() {
        let cluster = cluster_of(spec, c);
        let declared: Vec<u32> = online
            .iter()
            .copied()
            .filter(|&o| position(spec, o).0 == socket && cluster_of(spec, o) == cluster)
            .collect();
        let observed: Vec<u32> =
            r.cpus.iter().filter(|(_, o)| o.package == g.package && o.cluster == g.cluster).map(|(&o, _)| o).collect();
        diff(format!("cpu {c} cluster group"), format_cpulist(&declared), format_cpulist(&observed));
    }
}

/// NIC 1, 2, …: each one's root port and the NIC itself on the declared node, and as
/// many MANA NICs in the guest as the machine has.
fn more_nics(spec: &MachineSpec, r: &GuestReport, diff: &mut impl FnMut(String, String, String)) {
    if spec.more_nics.is_empty() {
        return;
    }
    let placements: Vec<NicPlacement> = spec.nics().collect();
    diff("MANA NICs".into(), placements.len().to_string(), r.nics.len().to_string());
    let found = crate::qemu::nic_slots::match_nics(&placements, &r.nics);
    for (k, (&placement, bdf)) in placements.iter().zip(&found).enumerate().skip(1) {
        let want = match placement {
            NicPlacement::Node(n) => i64::from(n),
            NicPlacement::NoNode => -1,
        };
        if let Some(port) = crate::qemu::nic_slots::root_port_bdf(k, placement) {
            let got = r.pci.get(&port).map_or("missing".into(), |p| p.numa_node.to_string());
            diff(format!("NIC {k} root port {port} numa_node"), want.to_string(), got);
        }
        match bdf {
            Some(bdf) => {
                let got = r.pci.get(bdf).map_or("missing".into(), |p| p.numa_node.to_string());
                diff(format!("NIC {k} {bdf} numa_node"), want.to_string(), got);
            }
            None => diff(format!("NIC {k}"), "present".into(), "missing".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest_protocol::{GuestCpu, GuestNode, GuestPci};
    use crate::qemu::machines;

    /// The report a correct guest gives for seed 002's machine.
    fn seed_002_report() -> GuestReport {
        let mut r = GuestReport { kernel: "6.12".into(), ..Default::default() };
        for c in 0..8u32 {
            let first = c - c % 2;
            r.cpus.insert(
                c,
                GuestCpu {
                    package: i64::from(c / 4),
                    die: Some(0),
                    core: i64::from(c / 2 % 2),
                    cluster: None,
                    siblings: vec![first, first + 1],
                    node: i64::from(c / 4),
                },
            );
        }
        r.nodes.insert(0, GuestNode { cpus: vec![0, 1, 2, 3], mem_kib: 200_000, distance: vec![10, 20] });
        r.nodes.insert(1, GuestNode { cpus: vec![4, 5, 6, 7], mem_kib: 200_000, distance: vec![20, 10] });
        r.pci.insert(
            "0000:40:00.0".into(),
            GuestPci { vendor: 0x1b36, device: 0x000c, class: 0x060400, numa_node: 0, driver: Some("pcieport".into()) },
        );
        r
    }

    #[test]
    fn matching_guest_has_no_differences() {
        assert_eq!(compare(&machines::seed_002(256), &seed_002_report(), &CpuMask::first_n(8)), vec![]);
    }

    #[test]
    fn offline_cpus_leave_the_online_set_node_cpulists_and_sibling_groups() {
        let mut r = seed_002_report();
        r.cpus.remove(&3);
        r.cpus.get_mut(&2).expect("cpu 2").siblings = vec![2];
        r.nodes.get_mut(&0).expect("node 0").cpus = vec![0, 1, 2];
        r.cpu_state.present = Some((0..8).collect());
        let online = CpuMask::parse_cpulist("0-2,4-7").expect("cpulist");
        assert_eq!(compare(&machines::seed_002(256), &r, &online), vec![]);
        let d: Vec<String> =
            compare(&machines::seed_002(256), &r, &CpuMask::first_n(8)).iter().map(ToString::to_string).collect();
        assert_eq!(d[0], "online CPUs: declared 0-7, observed 0-2,4-7");
        r.cpu_state.present = Some((0..7).collect());
        let d: Vec<String> = compare(&machines::seed_002(256), &r, &online).iter().map(ToString::to_string).collect();
        assert_eq!(d, vec!["present CPUs: declared 0-7, observed 0-6"]);
    }

    /// Seed 002's nodes as an arm64 guest under ACPI reports them: 2 sockets of
    /// 2 clusters of 2 cores, no SMT; the ids are PPTT offsets (measured shape).
    #[test]
    fn an_arm64_guest_is_compared_by_package_and_cluster_groups_not_ids() {
        let spec = crate::qemu::MachineSpec {
            arch: Arch::Arm64,
            clusters: 2,
            cores: 4,
            threads: 1,
            ..machines::seed_002(256)
        };
        let mut r = seed_002_report();
        for (c, g) in r.cpus.iter_mut() {
            g.package = if *c < 4 { 56 } else { 176 };
            g.cluster = Some(i64::from(76 + 20 * (*c / 2)));
            g.die = None;
            g.siblings = vec![*c];
        }
        assert_eq!(compare(&spec, &r, &CpuMask::first_n(8)), vec![]);
        // One cluster where two are declared: each CPU's cluster group is wrong.
        for g in r.cpus.values_mut() {
            g.cluster = Some(g.package + 20);
        }
        let d: Vec<String> = compare(&spec, &r, &CpuMask::first_n(8)).iter().map(ToString::to_string).collect();
        assert_eq!(d.len(), 8, "{d:?}");
        assert_eq!(d[0], "cpu 0 cluster group: declared 0-1, observed 0-3");
    }

    #[test]
    fn wrong_siblings_distance_and_slot_node_are_each_reported() {
        let mut r = seed_002_report();
        r.cpus.get_mut(&1).expect("cpu 1").siblings = vec![1];
        r.nodes.get_mut(&1).expect("node 1").distance = vec![21, 10];
        r.pci.get_mut("0000:40:00.0").expect("port").numa_node = -1;
        let d: Vec<String> =
            compare(&machines::seed_002(256), &r, &CpuMask::first_n(8)).iter().map(ToString::to_string).collect();
        assert_eq!(
            d,
            vec![
                "cpu 1 siblings: declared 0-1, observed 1",
                "node 1 distance: declared 20 10, observed 21 10",
                "NIC root port 0000:40:00.0 numa_node: declared 0, observed -1",
            ]
        );
    }
}
