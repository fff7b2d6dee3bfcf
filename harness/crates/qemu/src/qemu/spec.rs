//! `MachineSpec`: the machine QEMU should build, in QEMU's own terms, and the
//! command-line arguments that build it.

use crate::accel::{Accel, AccelChoice};
use crate::topology::Arch;
use std::fmt::Write as _;

pub use super::nic_slots::{NicPlacement, PXB_BUS_NR};

/// QEMU CPU model. TCG's `max` CPU reports vendor AMD; Linux 6.1 then reads
/// SMT only from AMD's topology extension leaf (0x8000001e) and, without it,
/// sees every thread as its own core (measured: thread_siblings_list = the CPU
/// alone on 6.1; `max,topoext=on` and `EPYC` the same). 6.12 and 7.x parse
/// leaf 0xb on AMD too. With `vendor=GenuineIntel` all three kernels see the
/// declared sibling groups.
pub const DEFAULT_CPU: &str = "max,vendor=GenuineIntel";

/// QEMU CPU model of arm64 guests: `max` with the implementation-defined
/// pointer-authentication algorithm, which TCG computes much faster than the
/// architected QARMA (QEMU's docs/system/arm/cpu-features.rst); the guest
/// kernel only signs and checks its own return addresses with it.
pub const DEFAULT_CPU_ARM64: &str = "max,pauth-impdef=on";

/// The CPU model a KVM guest gets instead of [`DEFAULT_CPU`]: the host's own
/// (KVM gives what the host has; `max`'s extra features may be refused).
pub const KVM_CPU: &str = "host";

/// One guest NUMA node.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeSpec {
    /// QEMU cpu indexes (= guest CPU numbers) on this node; empty for a memory-only node.
    pub cpus: Vec<u32>,
    /// RAM in MiB; 0 for a CPU-only node.
    pub mem_mib: u32,
}

/// The machine, as QEMU builds it: CPU topology (`-smp`), NUMA nodes (`-numa`),
/// distance matrix, NIC slot and accelerator. Node ids are the indexes in
/// `nodes`; CPU numbers are QEMU cpu indexes (0..sockets·dies·cores·threads),
/// numbered thread-fastest as `-smp` does.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MachineSpec {
    /// Sockets (packages).
    pub sockets: u32,
    /// Dies per socket.
    pub dies: u32,
    /// Clusters per die (arm64; 1 elsewhere). `cores` counts all of a die's
    /// clusters' cores, so it is a multiple of this.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub clusters: u32,
    /// Cores per die.
    pub cores: u32,
    /// Threads per core (SMT siblings).
    pub threads: u32,
    /// NUMA nodes, node id = index.
    pub nodes: Vec<NodeSpec>,
    /// Full distance matrix, `distances[from][to]`, 10 on the diagonal (ACPI SLIT units).
    pub distances: Vec<Vec<u32>>,
    /// NIC 0's slot.
    pub nic: NicPlacement,
    /// NIC 1, 2, …'s slots (a `[[nic]]` topology; see [`super::nic_slots`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_nics: Vec<NicPlacement>,
    /// Accelerator requested.
    pub accel: AccelChoice,
    /// The guest architecture: x86_64 boots `q35`, arm64 the `virt` machine.
    #[serde(default, skip_serializing_if = "Arch::is_x86_64")]
    pub arch: Arch,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// A `MachineSpec` that QEMU or Linux would reject or misread.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("machine: {0}")]
pub struct SpecError(pub String);

impl MachineSpec {
    /// Number of vCPUs.
    pub fn vcpus(&self) -> u32 {
        self.sockets * self.dies * self.cores * self.threads
    }

    /// Total guest RAM in MiB (sum over nodes).
    pub fn mem_mib(&self) -> u32 {
        self.nodes.iter().map(|n| n.mem_mib).sum()
    }

    /// Highest x86 APIC ID QEMU assigns: each level gets ceil(log2(count)) bits
    /// (thread, core, die, then socket), as in QEMU's x86 topology encoding.
    pub fn max_apic_id(&self) -> u64 {
        let bits = |n: u32| if n <= 1 { 0 } else { 32 - (n - 1).leading_zeros() };
        let (bt, bc, bd) = (bits(self.threads), bits(self.cores), bits(self.dies));
        (u64::from(self.sockets - 1) << (bt + bc + bd))
            | (u64::from(self.dies - 1) << (bt + bc))
            | (u64::from(self.cores - 1) << bt)
            | u64::from(self.threads - 1)
    }

    /// APIC IDs above 254 need x2APIC, which Linux only enables for such CPUs
    /// with interrupt remapping (emulated intel-iommu, `intremap=on,eim=on`).
    pub fn needs_x2apic(&self) -> bool {
        self.arch == Arch::X86_64 && self.max_apic_id() > 254
    }

    /// The CPU model a TCG guest of this architecture gets by default.
    pub fn default_cpu(&self) -> &'static str {
        match self.arch {
            Arch::X86_64 => DEFAULT_CPU,
            Arch::Arm64 => DEFAULT_CPU_ARM64,
        }
    }

    /// Check the spec.
    ///
    /// # Errors
    /// [`SpecError`] naming the first problem: zero counts, more than one die
    /// per socket (QEMU 11.1 cannot show dies to the guest), CPUs outside
    /// `0..vcpus` or on two nodes or on none, a node with neither CPUs nor
    /// memory, no memory at all, a distance matrix that is not n×n, a diagonal
    /// other than 10, an off-diagonal distance outside 11..=254, or a NIC node
    /// that does not exist.
    pub fn validate(&self) -> Result<(), SpecError> {
        let err = |s: String| Err(SpecError(s));
        if self.sockets == 0 || self.dies == 0 || self.cores == 0 || self.threads == 0 {
            return err(format!(
                "sockets {}, dies {}, cores {}, threads {}: each must be at least 1",
                self.sockets, self.dies, self.cores, self.threads
            ));
        }
        if self.clusters == 0 || self.cores % self.clusters != 0 {
            return err(format!("{} cores per die do not split into {} clusters", self.cores, self.clusters));
        }
        if self.clusters > 1 && self.arch != Arch::Arm64 {
            return err(format!("{} clusters per die: the rig shows clusters on arm64 guests only", self.clusters));
        }
        if self.dies > 1 && self.arch == Arch::Arm64 {
            return err(format!("{} dies per socket: QEMU's arm virt machine has no dies", self.dies));
        }
        if self.dies > 1 {
            // Measured with QEMU 11.1.3: Intel-vendor models abort in
            // encode_topo_cpuid1f ("count <= CPU_TOPOLOGY_LEVEL_SOCKET"), and
            // with the AMD-vendor `max` Linux 6.12 sees one die per package.
            return err(format!(
                "{} dies per socket: QEMU 11.1 cannot show dies to the guest \
                 (it aborts for Intel CPU models; AMD models hide them); use 1 die \
                 (mana's IRQ spreading looks at NUMA nodes and SMT siblings, not dies)",
                self.dies
            ));
        }
        let n = self.vcpus();
        if self.nodes.is_empty() {
            return err("no NUMA nodes".into());
        }
        let mut owner = vec![None; n as usize];
        for (id, node) in self.nodes.iter().enumerate() {
            if node.cpus.is_empty() && node.mem_mib == 0 {
                return err(format!("node {id} has neither CPUs nor memory"));
            }
            for &c in &node.cpus {
                match owner.get_mut(c as usize) {
                    None => return err(format!("node {id}: cpu {c} is outside 0-{}", n - 1)),
                    Some(Some(other)) => return err(format!("cpu {c} is on node {other} and node {id}")),
                    Some(slot) => *slot = Some(id),
                }
            }
        }
        if let Some(c) = owner.iter().position(Option::is_none) {
            return err(format!("cpu {c} is on no node"));
        }
        if self.mem_mib() == 0 {
            return err("no node has memory".into());
        }
        let k = self.nodes.len();
        if self.distances.len() != k || self.distances.iter().any(|r| r.len() != k) {
            return err(format!("distance matrix must be {k}×{k}"));
        }
        for (i, row) in self.distances.iter().enumerate() {
            for (j, &d) in row.iter().enumerate() {
                if i == j && d != 10 {
                    return err(format!("distance {i}->{i} is {d}; the local distance must be 10"));
                }
                if i != j && !(11..=254).contains(&d) {
                    return err(format!("distance {i}->{j} is {d}; remote distances must be 11-254"));
                }
            }
        }
        for (index, placement) in self.nics().enumerate() {
            if let NicPlacement::Node(nid) = placement {
                if nid as usize >= k {
                    return err(format!("NIC {index} on node {nid}, but there are only {k} nodes"));
                }
            }
        }
        if self.more_nics.len() >= crate::topology::MAX_NICS {
            return err(format!(
                "{} NICs: the rig plugs in at most {}",
                self.more_nics.len() + 1,
                crate::topology::MAX_NICS
            ));
        }
        Ok(())
    }

    /// Every NIC's slot, NIC 0 first.
    pub fn nics(&self) -> impl Iterator<Item = NicPlacement> + '_ {
        std::iter::once(self.nic).chain(self.more_nics.iter().copied())
    }

    /// QEMU arguments for this machine (everything but QEMU's own path, the
    /// kernel, initrd, append and the console), for accelerator `accel`.
    ///
    /// Choices: `-cpu cpu_model` ([`DEFAULT_CPU`] lets every kernel see the SMT
    /// siblings; the rig checks the guest rather than QEMU's warnings); one
    /// `memory-backend-memfd,share=on` per node with memory (a vfio-user device
    /// process can then map guest RAM for DMA); `-numa dist` for every ordered
    /// pair; the NIC's root port `rp0` behind `pxb-pcie` (or on pcie.0);
    /// intel-iommu with interrupt remapping and EIM when APIC IDs exceed 254.
    ///
    /// An arm64 machine is QEMU's `virt` with GICv3 and an ITS (MSI-X goes
    /// through the ITS, as on Cobalt) and ACPI (the firmware hands QEMU's
    /// tables to the kernel: the only way the guest learns the expander
    /// bridge's node), `-smp` with `clusters=` in place of `dies=`.
    pub fn qemu_args(&self, accel: Accel, cpu_model: &str) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        let mut push = |s: &str, v: String| {
            a.push(s.to_string());
            a.push(v);
        };
        let x2apic = self.needs_x2apic();
        let mut machine = match self.arch {
            Arch::X86_64 => "q35".to_string(),
            Arch::Arm64 => "virt,gic-version=3,its=on,acpi=on".to_string(),
        };
        if x2apic && accel == Accel::Kvm {
            // With KVM, interrupt remapping needs the split irqchip.
            machine.push_str(",kernel-irqchip=split");
        }
        push("-machine", machine);
        push("-accel", accel.qemu_arg().to_string());
        push("-cpu", cpu_model.to_string());
        let smp = match self.arch {
            Arch::X86_64 => format!(
                "{},sockets={},dies={},cores={},threads={}",
                self.vcpus(),
                self.sockets,
                self.dies,
                self.cores,
                self.threads
            ),
            Arch::Arm64 => format!(
                "{},sockets={},clusters={},cores={},threads={}",
                self.vcpus(),
                self.sockets,
                self.clusters,
                self.cores / self.clusters,
                self.threads
            ),
        };
        push("-smp", smp);
        push("-m", format!("{}M", self.mem_mib()));
        for (id, node) in self.nodes.iter().enumerate() {
            if node.mem_mib > 0 {
                push("-object", format!("memory-backend-memfd,id=mem{id},size={}M,share=on", node.mem_mib));
            }
        }
        for (id, node) in self.nodes.iter().enumerate() {
            let mut v = format!("node,nodeid={id}");
            for (lo, hi) in ranges(&node.cpus) {
                if lo == hi {
                    let _ = write!(v, ",cpus={lo}");
                } else {
                    let _ = write!(v, ",cpus={lo}-{hi}");
                }
            }
            if node.mem_mib > 0 {
                let _ = write!(v, ",memdev=mem{id}");
            }
            push("-numa", v);
        }
        for (i, row) in self.distances.iter().enumerate() {
            for (j, d) in row.iter().enumerate() {
                if i != j {
                    push("-numa", format!("dist,src={i},dst={j},val={d}"));
                }
            }
        }
        if x2apic {
            push("-device", "intel-iommu,intremap=on,eim=on,dma-translation=off".into());
        }
        for (index, placement) in self.nics().enumerate() {
            for device in super::nic_slots::slot_devices(index, placement) {
                push("-device", device);
            }
        }
        a
    }

    /// The guest BDF of the NIC's root port, when it is predictable
    /// (behind the pxb: bus [`PXB_BUS_NR`], device 0).
    pub fn root_port_bdf(&self) -> Option<String> {
        super::nic_slots::root_port_bdf(0, self.nic)
    }
}

/// The `-device` JSON for the MANA NIC served by a vfio-user device process on
/// the unix socket `socket`, in the NIC slot (root port `rp0`, see
/// [`MachineSpec::qemu_args`]). Pass it in `BootRequest::extra_devices`; the
/// caller starts the device process and removes the socket.
pub fn vfio_user_nic(socket: &std::path::Path) -> String {
    super::nic_slots::vfio_user_device(0, socket)
}

/// Consecutive runs of a CPU list, sorted: `[0, 1, 2, 5]` → `[(0, 2), (5, 5)]`.
pub fn ranges(cpus: &[u32]) -> Vec<(u32, u32)> {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for c in v {
        match out.last_mut() {
            Some((_, hi)) if *hi + 1 == c => *hi = c,
            _ => out.push((c, c)),
        }
    }
    out
}

/// Ready-made machines used by the tests and measurements.
pub mod machines {
    use super::*;

    /// Seed 002's machine (docs/seeds.md: "Node 0 1 / Core 0 1 2 3 /
    /// CPU 0 1 2 3 4 5 6 7"): 2 sockets × 2 cores × 2 threads, node 0 = CPUs 0-3,
    /// node 1 = CPUs 4-7, distance 20, the NIC slot on node 0.
    pub fn seed_002(mem_per_node_mib: u32) -> MachineSpec {
        MachineSpec {
            sockets: 2,
            dies: 1,
            cores: 2,
            threads: 2,
            nodes: vec![
                NodeSpec { cpus: (0..4).collect(), mem_mib: mem_per_node_mib },
                NodeSpec { cpus: (4..8).collect(), mem_mib: mem_per_node_mib },
            ],
            distances: vec![vec![10, 20], vec![20, 10]],
            nic: NicPlacement::Node(0),
            more_nics: Vec::new(),
            accel: AccelChoice::Tcg,
            clusters: 1,
            arch: Arch::X86_64,
        }
    }

    /// `sockets` × `cores` × `threads`, one node per socket (distance 20
    /// between all), NIC slot on node 0: for measurements of boot time by size.
    pub fn grid(sockets: u32, cores: u32, threads: u32, mem_per_node_mib: u32) -> MachineSpec {
        let per = cores * threads;
        MachineSpec {
            sockets,
            dies: 1,
            cores,
            threads,
            nodes: (0..sockets)
                .map(|s| NodeSpec { cpus: (s * per..(s + 1) * per).collect(), mem_mib: mem_per_node_mib })
                .collect(),
            distances: (0..sockets).map(|i| (0..sockets).map(|j| if i == j { 10 } else { 20 }).collect()).collect(),
            nic: NicPlacement::Node(0),
            more_nics: Vec::new(),
            accel: AccelChoice::Tcg,
            clusters: 1,
            arch: Arch::X86_64,
        }
    }

    /// Public report R17 (topologies/r17-diameter.toml, Barry Song's Kunpeng 920
    /// model): `-smp 8`, nodes 0-1, 2-3, 4-5, 6-7; distances 0-1 = 12, 0-2 = 20,
    /// 0-3 = 22, 1-2 = 22, 1-3 = 24, 2-3 = 12. The report gives no SMT, so one
    /// thread per core (8 sockets of 1 core would also do; the report says `-smp 8`,
    /// whose QEMU default is 8 sockets). NIC slot on node 0.
    pub fn r17(mem_per_node_mib: u32) -> MachineSpec {
        MachineSpec {
            sockets: 8,
            dies: 1,
            cores: 1,
            threads: 1,
            nodes: (0..4).map(|i| NodeSpec { cpus: vec![2 * i, 2 * i + 1], mem_mib: mem_per_node_mib }).collect(),
            distances: vec![vec![10, 12, 20, 22], vec![12, 10, 22, 24], vec![20, 22, 10, 12], vec![22, 24, 12, 10]],
            nic: NicPlacement::Node(0),
            more_nics: Vec::new(),
            accel: AccelChoice::Tcg,
            clusters: 1,
            arch: Arch::X86_64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::machines::*;
    use super::*;

    #[test]
    fn seed_002_args_have_topology_numa_and_pxb() {
        let m = seed_002(256);
        m.validate().expect("valid");
        let a = m.qemu_args(Accel::TcgSingle, DEFAULT_CPU).join(" ");
        assert!(a.contains("-smp 8,sockets=2,dies=1,cores=2,threads=2"), "{a}");
        assert!(a.contains("-numa node,nodeid=0,cpus=0-3,memdev=mem0"), "{a}");
        assert!(a.contains("-numa dist,src=0,dst=1,val=20"), "{a}");
        assert!(a.contains("-numa dist,src=1,dst=0,val=20"), "{a}");
        assert!(a.contains("memory-backend-memfd,id=mem1,size=256M,share=on"), "{a}");
        assert!(a.contains("pxb-pcie,id=pxb0,bus_nr=64,numa_node=0"), "{a}");
        assert!(a.contains("-m 512M"), "{a}");
        assert!(!a.contains("intel-iommu"), "{a}");
    }

    #[test]
    fn cpu_only_and_memory_only_nodes_are_expressed() {
        let mut m = seed_002(256);
        m.nodes[1].mem_mib = 0; // CPU-only node 1
        m.nodes.push(NodeSpec { cpus: vec![], mem_mib: 128 }); // memory-only node 2
        m.distances = vec![vec![10, 20, 30], vec![20, 10, 30], vec![30, 30, 10]];
        m.validate().expect("valid");
        let a = m.qemu_args(Accel::TcgSingle, DEFAULT_CPU).join(" ");
        assert!(a.contains("-numa node,nodeid=1,cpus=4-7 "), "{a}");
        assert!(a.contains("-numa node,nodeid=2,memdev=mem2"), "{a}");
        assert!(!a.contains("id=mem1,"), "{a}");
    }

    #[test]
    fn nic_without_node_sits_on_pcie0() {
        let mut m = seed_002(256);
        m.nic = NicPlacement::NoNode;
        let a = m.qemu_args(Accel::TcgSingle, DEFAULT_CPU).join(" ");
        assert!(a.contains("pcie-root-port,id=rp0,bus=pcie.0"), "{a}");
        assert!(!a.contains("pxb-pcie"), "{a}");
    }

    #[test]
    fn bad_specs_are_named() {
        let mut m = seed_002(256);
        m.nodes[1].cpus.push(3);
        assert_eq!(m.validate(), Err(SpecError("cpu 3 is on node 0 and node 1".into())));
        let mut m = r17(128);
        m.distances[1][2] = 5;
        assert!(m.validate().expect_err("must fail").0.contains("distance 1->2 is 5"));
        let mut m = seed_002(256);
        m.nic = NicPlacement::Node(7);
        assert!(m.validate().is_err());
        // seed 002's 8 CPUs as 1 socket of 2 dies.
        let m = MachineSpec { sockets: 1, dies: 2, ..seed_002(256) };
        assert!(m.validate().expect_err("dies").0.contains("2 dies per socket"));
        let mut m = seed_002(256);
        m.nodes[1].cpus.pop();
        assert_eq!(m.validate(), Err(SpecError("cpu 7 is on no node".into())));
    }

    #[test]
    fn x2apic_needed_past_apic_id_254() {
        // 256 vCPUs as 2 × 64 × 2: APIC IDs up to 255.
        let big = MachineSpec { sockets: 2, dies: 1, cores: 64, threads: 2, ..seed_002(256) };
        assert_eq!(big.max_apic_id(), 255);
        assert!(big.needs_x2apic());
        // 3 cores per die take 2 bits: the last of 2×3×2 vCPUs has APIC ID 0b1_10_1 = 13.
        let odd = MachineSpec { sockets: 2, dies: 1, cores: 3, threads: 2, ..seed_002(256) };
        assert_eq!(odd.max_apic_id(), 13);
        assert!(!seed_002(256).needs_x2apic());
    }

    #[test]
    fn vfio_user_nic_goes_into_the_nic_slot() {
        let d = vfio_user_nic(std::path::Path::new("/tmp/dev.sock"));
        let v: serde_json::Value = serde_json::from_str(&d).expect("json");
        assert_eq!(v["driver"], "vfio-user-pci");
        assert_eq!(v["bus"], "rp0");
        assert_eq!(v["socket"]["path"], "/tmp/dev.sock");
    }

    #[test]
    fn an_arm64_machine_is_virt_with_gicv3_its_acpi_and_clusters() {
        // Seed 002's nodes on 2 sockets × 2 clusters × 2 cores, no SMT.
        let m = MachineSpec { arch: Arch::Arm64, clusters: 2, cores: 4, threads: 1, ..seed_002(256) };
        m.validate().expect("valid");
        assert_eq!(m.default_cpu(), DEFAULT_CPU_ARM64);
        let a = m.qemu_args(Accel::TcgSingle, DEFAULT_CPU_ARM64).join(" ");
        assert!(a.contains("-machine virt,gic-version=3,its=on,acpi=on "), "{a}");
        assert!(a.contains("-smp 8,sockets=2,clusters=2,cores=2,threads=1"), "{a}");
        assert!(a.contains("pxb-pcie,id=pxb0,bus_nr=64,numa_node=0"), "{a}");
        assert!(!a.contains("q35") && !a.contains("dies="), "{a}");
        // x86 keeps its machine, and has no clusters.
        let x = MachineSpec { clusters: 2, cores: 4, threads: 1, ..seed_002(256) };
        assert!(x.validate().expect_err("x86 clusters").0.contains("arm64 guests only"));
        let d = MachineSpec { arch: Arch::Arm64, sockets: 1, dies: 2, ..seed_002(256) };
        assert!(d.validate().expect_err("arm dies").0.contains("no dies"));
        let odd = MachineSpec { arch: Arch::Arm64, clusters: 3, ..seed_002(256) };
        assert!(odd.validate().expect_err("split").0.contains("do not split"));
    }

    #[test]
    fn cpu_ranges_compress() {
        assert_eq!(ranges(&[5, 0, 1, 2]), vec![(0, 2), (5, 5)]);
    }
}
