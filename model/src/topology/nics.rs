//! More than one NIC (the `nic` key as one `[nic]` table or a `[[nic]]` array is
//! `file::NicsFile`): the MAC addresses the NICs' vPorts get, and the
//! checks across NICs (no two vPorts with one MAC).
//!
//! A file with `[nic]` is a machine with one NIC (the form every file had before
//! `[[nic]]`); `[[nic]]` lists NIC 0, NIC 1, … in the order QEMU plugs them in and the
//! guest's PCI bus numbers them.

use super::error::{Problem, TopologyError};
use super::Nic;

/// The most NICs a file may list (each is a device process, a `pxb-pcie` bus and a
/// root port; the rig numbers their buses 0x40 apart by 0x10).
pub const MAX_NICS: usize = 8;

/// Hyper-V's MAC prefix (00:15:5d), which Azure's synthetic and MANA NICs carry.
const DEFAULT_OUI: [u8; 3] = [0x00, 0x15, 0x5d];

/// The MAC address of NIC `index` when its file entry sets none: 00:15:5d:00:K:01
/// (vPort p of it then has last byte 01 + p, as the device model numbers vPorts).
pub fn default_mac(index: usize) -> [u8; 6] {
    let [a, b, c] = DEFAULT_OUI;
    [a, b, c, 0x00, index as u8, 0x01]
}

/// The MAC address of vPort `port` of a NIC whose vPort 0 has `mac`: the last byte
/// plus `port`, wrapping (the device model's `DeviceConfig::mac` numbering).
pub fn port_mac(mac: [u8; 6], port: u32) -> [u8; 6] {
    let mut m = mac;
    m[5] = m[5].wrapping_add(port as u8);
    m
}

fn mac_text(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// The checks across NICs: at most [`MAX_NICS`], and no MAC address on two vPorts
/// (a guest with two netdevs of one MAC cannot tell them apart on the wire).
///
/// # Errors
/// [`TopologyError::Invalid`] naming `nic` (too many) or the later NIC's `mac` field.
pub(super) fn check_across(path: &str, names: &[String], nics: &[Nic]) -> Result<(), TopologyError> {
    let err = |field: String, problem| TopologyError::Invalid { path: path.to_owned(), field, problem };
    if nics.len() > MAX_NICS {
        return Err(err("nic".into(), Problem::TooManyNics { count: nics.len(), max: MAX_NICS }));
    }
    let mut seen: Vec<([u8; 6], usize, u32)> = Vec::new();
    for (k, nic) in nics.iter().enumerate() {
        let mac = nic.mac.unwrap_or_else(|| default_mac(k));
        for port in 0..nic.num_ports {
            let m = port_mac(mac, port);
            if let Some(&(_, other, other_port)) = seen.iter().find(|(s, _, _)| *s == m) {
                let problem = Problem::SameMac { mac: mac_text(m), other: names[other].clone(), port, other_port };
                return Err(err(format!("{}.mac", names[k]), problem));
            }
            seen.push((m, k, port));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::topology::{Problem, Topology};

    /// Seed 002's machine (nodes 0-3 / 4-7) with the NIC section `nics`.
    fn file(nics: &str) -> String {
        format!(
            "name = \"t\"\n[source]\nkind = \"synthetic\"\nwording = \"w\"\n[cpus]\nsockets = 2\ncores = 2\n\
             threads = 2\n[[numa.nodes]]\ncpus = \"0-3\"\nmemory_mib = 512\n[[numa.nodes]]\ncpus = \"4-7\"\n\
             memory_mib = 512\n{nics}\n[expect]\nverdict = \"pass\"\nsource = \"s\"\n"
        )
    }

    fn error_line(nics: &str) -> String {
        match Topology::from_toml_str("topologies/x.toml", &file(nics)) {
            Ok(_) => panic!("accepted:\n{nics}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn an_array_of_nics_gives_one_nic_per_entry_in_file_order() {
        let t =
            Topology::from_toml_str("x.toml", &file("[[nic]]\nnuma_node = 0\n[[nic]]\nnuma_node = 1\nnum_ports = 2"))
                .expect("valid");
        assert_eq!(t.nics().len(), 2);
        assert_eq!((t.nics()[0].node, t.nics()[1].node), (Some(0), Some(1)));
        assert_eq!((t.nics()[0].num_ports, t.nics()[1].num_ports), (1, 2));
        assert_eq!(t.nic().node, Some(0), "nic() is NIC 0");
        // Without a `mac`, NIC k is 00:15:5d:00:k:01.
        assert_eq!(t.nic_mac(1), Some([0x00, 0x15, 0x5d, 0x00, 0x01, 0x01]));
        let only = t.with_only_nic(1).expect("NIC 1");
        assert_eq!((only.nics().len(), only.nic().node, only.nic().num_ports), (1, Some(1), 2));
        assert!(t.with_only_nic(2).is_none());
    }

    #[test]
    fn a_single_nic_table_is_one_nic_and_stays_a_table_in_to_toml() {
        let t = Topology::from_toml_str("x.toml", &file("[nic]\nnuma_node = 1")).expect("valid");
        assert_eq!(t.nics().len(), 1);
        assert!(t.to_toml().contains("\n[nic]\n") && !t.to_toml().contains("[[nic]]"), "{}", t.to_toml());
        let two = Topology::from_toml_str("x.toml", &file("[[nic]]\nnuma_node = 1\n[[nic]]\nnuma_node = \"none\""))
            .expect("valid");
        let text = two.to_toml();
        assert_eq!(text.matches("[[nic]]").count(), 2, "{text}");
        let back = Topology::from_toml_str("x.toml", &text).expect("loads back");
        assert_eq!(back.nics()[1].node, None);
    }

    #[test]
    fn a_nic_on_a_node_that_does_not_exist_names_its_index() {
        let line = error_line("[[nic]]\nnuma_node = 0\n[[nic]]\nnuma_node = 5");
        assert_eq!(line, "topologies/x.toml: nic[1].numa_node: node 5 does not exist (the file has nodes 0-1)");
    }

    #[test]
    fn two_nics_with_one_mac_are_refused_naming_the_second() {
        let line = error_line(
            "[[nic]]\nnuma_node = 0\nmac = \"00:15:5d:aa:00:01\"\n[[nic]]\nnuma_node = 1\nmac = \"00:15:5d:aa:00:01\"",
        );
        assert!(
            line.starts_with("topologies/x.toml: nic[1].mac: 00:15:5d:aa:00:01 (vPort 0) is also nic[0]'s vPort 0"),
            "{line}"
        );
        // vPort 1 of NIC 0 takes the last byte + 1: NIC 1 may not start there.
        let line = error_line("[[nic]]\nnuma_node = 0\nnum_ports = 2\nmac = \"00:15:5d:aa:00:01\"\n[[nic]]\nnuma_node = 1\nmac = \"00:15:5d:aa:00:02\"");
        assert!(line.contains("nic[1].mac: 00:15:5d:aa:00:02 (vPort 0) is also nic[0]'s vPort 1"), "{line}");
        // The defaults differ per NIC.
        assert!(Topology::from_toml_str("x.toml", &file("[[nic]]\nnuma_node = 0\n[[nic]]\nnuma_node = 0")).is_ok());
    }

    #[test]
    fn only_nic_0_sets_channels_and_num_ports_stays_in_range() {
        let line = error_line("[[nic]]\nnuma_node = 0\n[[nic]]\nnuma_node = 1\nchannels = 2");
        assert!(line.starts_with("topologies/x.toml: nic[1].channels: only the first NIC"), "{line}");
        let line = error_line("[nic]\nnuma_node = 0\nnum_ports = 0");
        assert!(line.starts_with("topologies/x.toml: nic.num_ports: 0"), "{line}");
        let e = Topology::from_toml_str("x.toml", &file(&"[[nic]]\nnuma_node = 0\n".repeat(9))).expect_err("9 NICs");
        assert!(matches!(e.problem(), Some(Problem::TooManyNics { count: 9, max: 8 })), "{e}");
    }

    #[test]
    fn an_unknown_field_in_a_nic_array_keeps_the_parsers_words_and_position() {
        let line = error_line("[[nic]]\nnuma_node = 0\n[[nic]]\nnuma_nod = 1");
        assert!(line.contains("unknown field `numa_nod`"), "{line}");
        let e = Topology::from_toml_str("x.toml", &format!("nic = 3\n{}", file(""))).expect_err("a number");
        let line = e.to_string();
        assert!(line.contains("[nic] table or a [[nic]] array"), "{line}");
        let e = Topology::from_toml_str("x.toml", &format!("nic = []\n{}", file(""))).expect_err("no NIC");
        let line = e.to_string();
        assert_eq!(line, "x.toml: nic: must not be empty");
    }
}
