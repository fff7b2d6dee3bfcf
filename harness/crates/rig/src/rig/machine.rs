//! A topology file as QEMU builds it, and as the emulated NIC advertises it.

use crate::accel::AccelChoice;
use crate::model::KernelGen;
use crate::qemu::{MachineSpec, NicPlacement, NodeSpec};
use crate::topology::Topology;
use mana_device_api::config::DeviceConfig;
use thiserror::Error;

/// A topology the rig cannot build.
#[derive(Debug, Error)]
pub enum MachineError {
    /// A NIC knob outside what the device model supports.
    #[error("{topology}: nic.{field}: {problem}")]
    Nic {
        /// Topology name.
        topology: String,
        /// The field.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// QEMU or Linux would reject or misread the machine.
    #[error("{topology}: {error}")]
    Spec {
        /// Topology name.
        topology: String,
        /// The launcher's reason.
        error: crate::qemu::SpecError,
    },
}

/// The QEMU machine for `topo`: the same sockets/dies/cores/threads, nodes with
/// their CPUs as QEMU cpu indexes ([`Topology::qemu_node_cpus`]), the full SLIT,
/// and the NIC slot on the NIC's node (or on pcie.0 for NUMA_NO_NODE).
///
/// Guest RAM: `mem_per_node_mib` on every node that has memory in the file, 0 on
/// CPU-only nodes. IRQ placement does not depend on memory size, and small
/// nodes keep boots fast.
///
/// # Errors
/// [`MachineError::Spec`] when the launcher refuses the machine (e.g. more
/// than one die per socket, which QEMU 11.1 cannot present to Linux).
pub fn machine_spec(topo: &Topology, accel: AccelChoice, mem_per_node_mib: u32) -> Result<MachineSpec, MachineError> {
    let shape = topo.shape();
    let nodes = topo
        .nodes()
        .iter()
        .map(|n| NodeSpec {
            cpus: topo.qemu_node_cpus(n.id).iter().collect(),
            mem_mib: if n.memory_mib == 0 { 0 } else { mem_per_node_mib },
        })
        .collect();
    let spec = MachineSpec {
        sockets: shape.sockets,
        dies: shape.dies,
        cores: shape.cores,
        threads: shape.threads,
        nodes,
        distances: topo.distances().to_vec(),
        nic: placement(topo.nic()),
        more_nics: topo.nics()[1..].iter().map(placement).collect(),
        accel,
        clusters: topo.clusters(),
        arch: topo.arch(),
    };
    spec.validate().map_err(|source| MachineError::Spec { topology: topo.name().to_owned(), error: source })?;
    Ok(spec)
}

fn placement(nic: &crate::topology::Nic) -> NicPlacement {
    match nic.node {
        Some(node) => NicPlacement::Node(node),
        None => NicPlacement::NoNode,
    }
}

/// The emulated NIC's knobs from the topology's NIC 0 (`[nic]`).
///
/// # Errors
/// As [`device_config_of`].
pub fn device_config(topo: &Topology) -> Result<DeviceConfig, MachineError> {
    device_config_of(topo, 0)
}

/// Whether a guest whose driver is modelled as `gen` can meet the MSI-X platform every
/// NIC of `topo` describes.
///
/// `dynamic_msix = false` describes an MSI domain that cannot add MSI-X vectors once
/// MSI-X is on (`pci_msix_can_alloc_dyn()` false: Hyper-V's or Xen's PCI/MSI domains).
/// QEMU's x86 domains always can, with or without interrupt remapping
/// (docs/mana-protocol.md §4.1 and §5.3: `X86_VECTOR_MSI_FLAGS_SUPPORTED`), so a 7.x driver, the
/// only one that asks, takes the dynamic path whatever the file says, and judging it by
/// the static path would blame the kernel for the file. Older drivers never ask: the
/// field changes nothing there, and the file is accepted.
///
/// # Errors
/// [`MachineError::Nic`] naming `dynamic_msix` when a NIC has it false under 7.x.
pub fn msix_platform(topo: &Topology, gen: KernelGen) -> Result<(), MachineError> {
    if gen != KernelGen::V7 {
        return Ok(());
    }
    let Some(k) = topo.nics().iter().position(|n| !n.dynamic_msix) else { return Ok(()) };
    let which = if topo.nics().len() > 1 { format!("NIC {k}: ") } else { String::new() };
    Err(MachineError::Nic {
        topology: topo.name().to_owned(),
        field: "dynamic_msix",
        problem: format!(
            "{which}false, but the MSI domains of QEMU's machines always allow dynamic MSI-X \
             (pci_msix_can_alloc_dyn() is true on x86, with or without interrupt remapping, and \
             under arm64's GICv3 ITS), so a 7.x \
             driver takes the dynamic path; the field describes another platform and is for \
             the model alone (`expect --kernel 7.x`), or drop it to boot the machine"
        ),
    })
}

/// NIC `index`'s knobs from the topology's `[[nic]]` entry `index`: MSI-X table,
/// `max_msix`, `max_queues`, the vPort count and NIC `index`'s MAC
/// ([`Topology::nic_mac`]: the file's, else one of its own per NIC).
///
/// # Errors
/// [`MachineError::Nic`] for an index beyond the topology's NICs, an MSI-X table size
/// the device cannot expose (PCI allows 1..=2048 entries), or a vPort count beyond
/// the device's u16.
pub fn device_config_of(topo: &Topology, index: usize) -> Result<DeviceConfig, MachineError> {
    let err = |field, problem: String| MachineError::Nic { topology: topo.name().to_owned(), field, problem };
    let (Some(nic), Some(mac)) = (topo.nics().get(index), topo.nic_mac(index)) else {
        return Err(err("index", format!("no NIC {index} (the file has {})", topo.nics().len())));
    };
    let num_vports = u16::try_from(nic.num_ports)
        .map_err(|_| err("num_ports", format!("{} does not fit the device's 16 bits", nic.num_ports)))?;
    let msix_table_size =
        u16::try_from(nic.msix_table_size).ok().filter(|n| (1..=2048).contains(n)).ok_or_else(|| {
            err("msix_table_size", format!("{} is outside 1..=2048 (PCI MSI-X limit)", nic.msix_table_size))
        })?;
    Ok(DeviceConfig { msix_table_size, max_msix: nic.max_msix, max_queues: nic.max_queues, mac, num_vports })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(name: &str) -> Topology {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../topologies/");
        Topology::load(format!("{path}{name}.toml")).expect("topology file loads")
    }

    /// Seed 002 (docs/seeds.md): node 0 = CPUs 0-3, node 1 = 4-7, NIC on node 0.
    #[test]
    fn seed_002_becomes_two_nodes_of_two_sockets_with_the_nic_on_node_0() {
        let spec = machine_spec(&topo("seed-002"), AccelChoice::Tcg, 256).expect("buildable");
        assert_eq!((spec.sockets, spec.cores, spec.threads), (2, 2, 2));
        assert_eq!(spec.nodes[0].cpus, vec![0, 1, 2, 3]);
        assert_eq!(spec.nodes[1].cpus, vec![4, 5, 6, 7]);
        assert_eq!(spec.distances, vec![vec![10, 20], vec![20, 10]]);
        assert_eq!(spec.nic, NicPlacement::Node(0));
    }

    /// Seed 003 numbers siblings N and N+128 (Linux style); QEMU numbers them
    /// adjacently, so node 14 (file CPUs 112-119,240-247) is QEMU CPUs 224-239.
    #[test]
    fn seed_003_nodes_are_renumbered_for_qemu() {
        let spec = machine_spec(&topo("seed-003-epyc-7763"), AccelChoice::Tcg, 64).expect("buildable");
        assert_eq!(spec.nodes[14].cpus, (224..240).collect::<Vec<u32>>());
        assert_eq!(spec.nic, NicPlacement::Node(14));
    }

    #[test]
    fn static_msix_is_refused_for_a_7x_guest_only() {
        // QEMU x86 gives every 7.x guest dynamic MSI-X: a file saying otherwise is refused
        // before anything boots; 6.x drivers never ask, so the field changes nothing there.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../topologies/seed-002.toml");
        let text = std::fs::read_to_string(path).expect("seed-002");
        let text = text.replacen("numa_node = 0", "numa_node = 0\ndynamic_msix = false", 1);
        let t = Topology::from_toml_str("static.toml", &text).expect("valid");
        let err = msix_platform(&t, KernelGen::V7).expect_err("refused on 7.x").to_string();
        assert!(err.starts_with("seed-002: nic.dynamic_msix: false, but the MSI domains of QEMU's machines"), "{err}");
        for gen in [KernelGen::V6_1, KernelGen::V6_3, KernelGen::V6_12] {
            assert!(msix_platform(&t, gen).is_ok(), "{gen}");
        }
        assert!(msix_platform(&topo("seed-002"), KernelGen::V7).is_ok(), "the default: dynamic");
    }

    #[test]
    fn nic_without_a_node_goes_on_pcie0() {
        let spec = machine_spec(&topo("r23-no-node"), AccelChoice::Tcg, 128).expect("buildable");
        assert_eq!(spec.nic, NicPlacement::NoNode);
    }

    #[test]
    fn nic_knobs_reach_the_device() {
        let cfg = device_config(&topo("seed-000-4ch")).expect("valid knobs");
        assert_eq!(cfg.msix_table_size, 5);
        assert_eq!(cfg.max_queues, 4);
    }
}
