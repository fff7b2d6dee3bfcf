//! Where each NIC of a machine plugs in: NIC k's root port `rpK`, behind its own
//! `pxb-pcie` expander `pxbK` on the NIC's node (ACPI _PXM) or on `pcie.0` for
//! NUMA_NO_NODE, and the PCI address the guest then gives the NIC.
//!
//! Bus numbers: expander k takes bus `0x40 + 0x10·k` ([`PXB_BUS_NR`] for NIC 0), its
//! root port is device 0 there and the NIC sits on the next bus, so NIC 0 is
//! `0000:41:00.0`, NIC 1 `0000:51:00.0`. Root ports on `pcie.0` get buses from the
//! guest's enumeration (below 0x40, in slot order), so their NICs' addresses are not
//! known in advance; they sort in NIC order.

/// PCI bus number given to the NIC's `pxb-pcie` expander. The root port behind
/// it is then `0000:40:00.0` and the NIC `0000:41:00.0` in the guest.
pub const PXB_BUS_NR: u8 = 0x40;

/// Where the NIC's PCIe slot sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NicPlacement {
    /// Behind a `pxb-pcie` expander with `numa_node=N` (ACPI _PXM) and a root port.
    Node(u32),
    /// Behind a root port on `pcie.0`: the guest sees `numa_node = -1` (NUMA_NO_NODE).
    NoNode,
}

/// Bus numbers between two NICs' expanders (each uses 2: the expander's, the port's).
const BUS_STRIDE: u8 = 0x10;

/// The bus number of NIC `index`'s expander (`index` < [`crate::topology::MAX_NICS`]).
fn pxb_bus(index: usize) -> u8 {
    PXB_BUS_NR.wrapping_add(BUS_STRIDE.wrapping_mul(index as u8))
}

/// QEMU `-device` values that plug in NIC `index`'s slot: the expander (on a node)
/// and the root port `rp{index}`, each its own chassis.
pub fn slot_devices(index: usize, placement: NicPlacement) -> Vec<String> {
    let chassis = index + 1;
    match placement {
        NicPlacement::Node(n) => vec![
            format!("pxb-pcie,id=pxb{index},bus_nr={},numa_node={n},bus=pcie.0", pxb_bus(index)),
            format!("pcie-root-port,id=rp{index},bus=pxb{index},chassis={chassis},slot=0"),
        ],
        NicPlacement::NoNode => vec![format!("pcie-root-port,id=rp{index},bus=pcie.0,chassis={chassis},slot=0")],
    }
}

/// The guest address of NIC `index`'s root port, when it is fixed (behind an expander).
pub fn root_port_bdf(index: usize, placement: NicPlacement) -> Option<String> {
    match placement {
        NicPlacement::Node(_) => Some(format!("0000:{:02x}:00.0", pxb_bus(index))),
        NicPlacement::NoNode => None,
    }
}

/// The guest address of NIC `index` itself, when it is fixed (behind an expander).
pub fn nic_bdf(index: usize, placement: NicPlacement) -> Option<String> {
    match placement {
        NicPlacement::Node(_) => Some(format!("0000:{:02x}:00.0", pxb_bus(index).wrapping_add(1))),
        NicPlacement::NoNode => None,
    }
}

/// Which guest PCI address is which NIC: NICs behind an expander by their fixed
/// address, the others (on `pcie.0`) in address order from what is left. `found` are
/// the addresses the guest reported for the MANA device; the result has one entry per
/// placement, `None` where the guest has no such NIC.
pub fn match_nics(placements: &[NicPlacement], found: &[String]) -> Vec<Option<String>> {
    let mut left: Vec<&String> = found.iter().collect();
    left.sort();
    let mut out: Vec<Option<String>> = placements
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let want = nic_bdf(k, p)?;
            let at = left.iter().position(|b| **b == want)?;
            Some(left.remove(at).clone())
        })
        .collect();
    for (k, &p) in placements.iter().enumerate() {
        if p == NicPlacement::NoNode && !left.is_empty() {
            out[k] = Some(left.remove(0).clone());
        }
    }
    out
}

/// The `-device` JSON for NIC `index`, served by a vfio-user device process on the
/// unix socket `socket`, in root port `rp{index}` ([`slot_devices`]).
pub fn vfio_user_device(index: usize, socket: &std::path::Path) -> String {
    serde_json::json!({
        "driver": "vfio-user-pci",
        "id": format!("nic{index}"),
        "socket": { "type": "unix", "path": socket.to_string_lossy() },
        "bus": format!("rp{index}"),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nic_0_keeps_the_single_nic_addresses_and_nic_1_sits_0x10_buses_higher() {
        let n = NicPlacement::Node(1);
        assert_eq!(nic_bdf(0, n).as_deref(), Some("0000:41:00.0"));
        assert_eq!(root_port_bdf(1, n).as_deref(), Some("0000:50:00.0"));
        assert_eq!(nic_bdf(1, n).as_deref(), Some("0000:51:00.0"));
        assert_eq!(slot_devices(1, n)[0], "pxb-pcie,id=pxb1,bus_nr=80,numa_node=1,bus=pcie.0");
        assert_eq!(slot_devices(1, NicPlacement::NoNode), vec!["pcie-root-port,id=rp1,bus=pcie.0,chassis=2,slot=0"]);
    }

    #[test]
    fn guest_addresses_match_nics_by_bus_then_in_order() {
        let placements = [NicPlacement::Node(0), NicPlacement::NoNode, NicPlacement::Node(1)];
        let found: Vec<String> = ["0000:61:00.0", "0000:41:00.0", "0000:01:00.0"].map(String::from).to_vec();
        let m = match_nics(&placements, &found);
        assert_eq!(m, vec![Some("0000:41:00.0".into()), Some("0000:01:00.0".into()), Some("0000:61:00.0".into())]);
        let m = match_nics(&placements, &found[..1]);
        assert_eq!(m, vec![None, None, Some("0000:61:00.0".into())]);
    }
}
