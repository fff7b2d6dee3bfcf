//! The seed corpus: what the in-process model of Linux's `mana` driver
//! (device-model/tests/support) does in real probes, opens, transmits and
//! closes, recorded ([`crate::support::start_trace`]) and written in each
//! target's input format; for the vfio-user targets, the messages QEMU sends
//! while it brings the device up. `record_corpus` writes them into
//! `fuzz/corpus/<target>/`.

use crate::ops::{encode_all, Op};
use crate::support::frames::{frame, Flow};
use crate::support::net::TxOpts;
use crate::support::{start_trace, take_trace, Driver, Kernel, Traced};
use crate::targets::config;
use crate::wire_session::{self, Segment};
use device_model::shell::vfio_wire::{self, Header, HEADER_SIZE};
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE, VFIO_PCI_BAR0_REGION_INDEX,
    VFIO_PCI_BAR2_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX, VFIO_PCI_MSIX_IRQ_INDEX,
};
use zerocopy::IntoBytes;

/// One seed: its file name and bytes.
pub type Seed = (String, Vec<u8>);

const KERNELS: [(Kernel, &str); 3] = [(Kernel::V6_1, "6.1"), (Kernel::V6_12, "6.12"), (Kernel::V7_3, "7.3")];

/// A probe, an open of 2 queue pairs and a close, recorded.
fn recorded(kernel: Kernel, open: bool) -> Vec<Traced> {
    start_trace();
    let mut drv = Driver::new(kernel, config());
    if let Ok(eqs) = drv.probe() {
        if open {
            if let Ok(pairs) = drv.open(&eqs, 2) {
                let _ = drv.close(&pairs);
            }
        }
    }
    take_trace()
}

fn device_ops(trace: &[Traced]) -> Vec<Op> {
    trace.iter().filter_map(Op::from_traced).collect()
}

/// `bar0`: every MMIO access and memory write of whole probes.
pub fn bar0() -> Vec<Seed> {
    KERNELS
        .iter()
        .map(|(kernel, name)| {
            let ops = device_ops(&recorded(*kernel, false));
            (format!("probe-{name}"), encode_all(&ops))
        })
        .collect()
}

/// `hwc`: the HWC requests of probes, opens and closes.
pub fn hwc() -> Vec<Seed> {
    KERNELS
        .iter()
        .map(|(kernel, name)| {
            let ops: Vec<Op> = recorded(*kernel, true)
                .into_iter()
                .filter_map(|event| match event {
                    Traced::Request(bytes) => Some(Op::Request(bytes)),
                    _ => None,
                })
                .collect();
            (format!("probe-open-close-{name}"), encode_all(&ops))
        })
        .collect()
}

/// `smc`: ESTABLISH_HWC with rings in memory, the init EQEs serviced,
/// DESTROY_HWC, ESTABLISH again.
pub fn smc() -> Vec<Seed> {
    let mut out = Vec::new();
    let establish = |out: &mut Vec<u8>, base: u64| {
        let mut msg = [0u8; 32];
        for i in 0..4u64 {
            let pfn = (base + i * 4096) / 4096;
            let at = i as usize * 6;
            msg[at..at + 6].copy_from_slice(&pfn.to_le_bytes()[..6]);
        }
        msg[28] = 1;
        for (dword, value) in msg.chunks(4).enumerate() {
            out.push(0);
            out.push(dword as u8);
            out.extend_from_slice(value);
        }
        out.push(3);
    };
    establish(&mut out, 0x10_0000);
    out.extend_from_slice(&[0, 7, 2, 0, 0, 0, 3]);
    establish(&mut out, 0x20_0000);
    vec![("establish-destroy-establish".into(), out)]
}

/// `queues`: transmits (plain, checksum offloads, several SGEs, TSO, VLAN)
/// and receives after a 6.12 probe and an open of 2 queue pairs.
pub fn queues() -> Vec<Seed> {
    let mut drv = Driver::new(Kernel::V6_12, config());
    let Ok(eqs) = drv.probe() else {
        return Vec::new();
    };
    let Ok(pairs) = drv.open(&eqs, 2) else {
        return Vec::new();
    };
    let mac = config().mac;
    let tcp = Flow::tcp("10.0.0.1", 1234, "10.0.0.2", 80);
    let udp = Flow::tcp("fe80::1", 5353, "fe80::2", 53).udp();
    let plain = frame(mac, &tcp, &[0x42; 64]);
    let big = frame(mac, &tcp, &[7; 4000]);
    let cases: Vec<(&str, Vec<u8>, TxOpts)> = vec![
        ("tx-plain", plain.clone(), TxOpts::default()),
        (
            "tx-csum-sges",
            frame(mac, &udp, &[1; 300]),
            TxOpts { sges: vec![14, 40], udp_csum: true, ..TxOpts::default() },
        ),
        (
            "tx-tso-vlan",
            big,
            TxOpts { sges: vec![54], tcp_csum: true, ip_csum: true, mss: 1400, vlan: Some(5), ..TxOpts::default() },
        ),
    ];
    let mut seeds = Vec::new();
    for (i, (name, bytes, opts)) in cases.into_iter().enumerate() {
        start_trace();
        let _ = drv.xmit(&pairs[i % pairs.len()], &bytes, &opts);
        let _ = drv.pump();
        let mut ops = device_ops(&take_trace());
        ops.push(Op::Pump);
        seeds.push((name.to_owned(), encode_all(&ops)));
    }
    let rx = vec![
        Op::Receive { vport: 0, frame: plain },
        Op::Receive { vport: 0, frame: frame(mac, &udp, &[9; 1000]) },
        Op::Pump,
    ];
    seeds.push(("rx".into(), encode_all(&rx)));
    seeds
}

/// `msix`: QEMU's stepwise enable, vectors raised with and without
/// eventfds, the table and PBA read and written, disable.
pub fn msix() -> Vec<Seed> {
    let eventfd = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
    let none = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER;
    let mut out = vec![8u8];
    let set = |out: &mut Vec<u8>, flags: u32, start: u32, count: u32, fds: &[u8]| {
        out.push(0);
        for v in [flags, start, count] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.push(fds.len() as u8);
        out.extend_from_slice(fds);
    };
    set(&mut out, eventfd, 0, 1, &[]);
    set(&mut out, eventfd, 0, 1, &[0]);
    set(&mut out, eventfd, 3, 2, &[0, 1]);
    for vector in [0u16, 3, 4, 5] {
        out.push(1);
        out.extend_from_slice(&vector.to_le_bytes());
    }
    // PBA read (offset 0x8000), table entry 1 written and read.
    out.extend_from_slice(&[2, 0, 0x00, 0x80, 8]);
    out.extend_from_slice(&[3, 0, 16, 0, 16]);
    out.extend_from_slice(&[0xee; 16]);
    out.extend_from_slice(&[2, 0, 16, 0, 16]);
    set(&mut out, none, 0, 0, &[]);
    out.push(4);
    out.push(5);
    vec![("qemu-enable-raise-disable".into(), out)]
}

/// `vfio_region`: config space read in dwords, the BAR0 registers, the SMC
/// header, the MSI-X BAR, a DMA map and unmap, SET_IRQS, reset.
pub fn vfio_region() -> Vec<Seed> {
    let mut out = Vec::new();
    let access = |out: &mut Vec<u8>, write: bool, region: u32, at: u16, data: &[u8]| {
        out.push(u8::from(write));
        out.push(region as u8);
        out.push(0);
        out.extend_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&(data.len() as u16).to_le_bytes());
        if write {
            out.extend_from_slice(data);
        }
    };
    for at in (0..0x100u16).step_by(4) {
        access(&mut out, false, VFIO_PCI_CONFIG_REGION_INDEX, at, &[0; 4]);
    }
    access(&mut out, true, VFIO_PCI_CONFIG_REGION_INDEX, 4, &[6, 0]);
    for at in [0x08u16, 0x10, 0x18, 0x11c] {
        access(&mut out, false, VFIO_PCI_BAR0_REGION_INDEX, at, &[0; 8]);
    }
    access(&mut out, true, VFIO_PCI_BAR0_REGION_INDEX, 0x11c, &2u32.to_le_bytes());
    access(&mut out, false, VFIO_PCI_BAR2_REGION_INDEX, 0, &[0; 16]);
    access(&mut out, false, VFIO_PCI_BAR2_REGION_INDEX, 0x8000, &[0; 8]);
    // DMA_MAP of a 1 MiB memfd at 0, then its unmap.
    out.extend_from_slice(&[2, 3]);
    for v in [0u64, 0, 1 << 20] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.push(1);
    out.push(3);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&(1u64 << 20).to_le_bytes());
    // SET_IRQS: MSI-X on, vector 0 with an eventfd.
    let eventfd = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
    out.push(4);
    out.push(VFIO_PCI_MSIX_IRQ_INDEX as u8);
    for v in [eventfd, 0, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&[1, 0]);
    out.push(5);
    vec![("qemu-like".into(), out)]
}

fn message(id: u16, command: u16, fields: &[u8], flags: u32) -> Vec<u8> {
    let size = (HEADER_SIZE + fields.len()) as u32;
    let mut bytes = Header::request(id, command, size, flags).as_bytes().to_vec();
    bytes.extend_from_slice(fields);
    bytes
}

/// `vfio_wire`: QEMU bringing the device up: VERSION, device, region and
/// IRQ info, config space, DMA_MAP of guest RAM (a memfd), MSI-X enable
/// with an eventfd, BAR0 reads and a posted write, DMA_UNMAP, reset.
pub fn vfio_wire() -> Vec<Seed> {
    use crate::wire_client::{dma_map_fields, dma_unmap_fields, region_fields, set_irqs_fields, version_fields};
    let mut segments = Vec::new();
    let mut id = 0u16;
    let mut push = |command: u16, fields: &[u8], flags: u32, fds: u8| {
        id = id.wrapping_add(1);
        segments.push(Segment { fds, bytes: message(id, command, fields, flags) });
    };
    let json = "{\"capabilities\":{\"max_msg_fds\":8,\"max_data_xfer_size\":1048576}}";
    push(vfio_wire::VERSION, &version_fields(json), 0, 0);
    let mut info = [0u8; 16];
    info[0] = 16;
    push(vfio_wire::DEVICE_GET_INFO, &info, 0, 0);
    for index in 0..9u32 {
        let mut info = vec![0u8; 32];
        info[..4].copy_from_slice(&32u32.to_le_bytes());
        info[8..12].copy_from_slice(&index.to_le_bytes());
        push(vfio_wire::DEVICE_GET_REGION_INFO, &info, 0, 0);
    }
    for index in 0..5u32 {
        let mut info = vec![0u8; 16];
        info[..4].copy_from_slice(&16u32.to_le_bytes());
        info[8..12].copy_from_slice(&index.to_le_bytes());
        push(vfio_wire::DEVICE_GET_IRQ_INFO, &info, 0, 0);
    }
    let config = VFIO_PCI_CONFIG_REGION_INDEX;
    for at in (0..0x40u64).step_by(4) {
        push(vfio_wire::REGION_READ, &region_fields(config, at, 4), 0, 0);
    }
    let mut command = region_fields(config, 4, 2);
    command.extend_from_slice(&[6, 0]);
    push(vfio_wire::REGION_WRITE, &command, 0, 0);
    push(vfio_wire::DMA_MAP, &dma_map_fields(0, 1 << 20, 0), 0, 1);
    let eventfd = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
    let msix = VFIO_PCI_MSIX_IRQ_INDEX;
    push(vfio_wire::DEVICE_SET_IRQS, &set_irqs_fields(msix, eventfd, 0, 1), 0, 0);
    push(vfio_wire::DEVICE_SET_IRQS, &set_irqs_fields(msix, eventfd, 0, 1), 0, 2);
    let bar0 = VFIO_PCI_BAR0_REGION_INDEX;
    for at in [0x08u64, 0x10, 0x18, 0x11c] {
        push(vfio_wire::REGION_READ, &region_fields(bar0, at, 8), 0, 0);
    }
    let mut db = region_fields(bar0, 0x1ff8, 8);
    db.extend_from_slice(&[0; 8]);
    push(vfio_wire::REGION_WRITE, &db, vfio_wire::FLAG_NO_REPLY, 0);
    push(vfio_wire::DMA_UNMAP, &dma_unmap_fields(0, 1 << 20), 0, 0);
    push(vfio_wire::DEVICE_RESET, &[], 0, 0);
    vec![("qemu-bring-up".into(), wire_session::encode(&segments))]
}

/// Every target's seeds, by target name.
pub fn all() -> Vec<(&'static str, Vec<Seed>)> {
    vec![
        ("bar0", bar0()),
        ("smc", smc()),
        ("hwc", hwc()),
        ("queues", queues()),
        ("msix", msix()),
        ("vfio_region", vfio_region()),
        ("vfio_wire", vfio_wire()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::decode_all;

    #[test]
    fn a_recorded_probe_replayed_as_ops_leaves_the_device_as_the_driver_did() {
        let mut drv = Driver::new(Kernel::V6_12, config());
        drv.probe().expect("probe");
        let expected = drv.dev.snapshot();
        let (_, seed) = bar0().remove(1);
        let mut replay = Driver::new(Kernel::V6_12, config());
        for op in decode_all(&seed) {
            op.apply(&mut replay);
        }
        let got = replay.dev.snapshot();
        assert_eq!(got.eqs, expected.eqs);
        assert_eq!(got.devices, expected.devices);
        assert_eq!(got.counters.commands, expected.counters.commands);
    }

    #[test]
    fn every_op_decodes_back_from_its_encoding() {
        let ops = vec![
            Op::BarWrite { offset: 0x11c, data: vec![1, 0, 0, 0] },
            Op::BarRead { offset: 8, len: 8 },
            Op::Mem { addr: 0x10_0000, bytes: vec![1, 2, 3] },
            Op::Zero { addr: 0, len: 4096 },
            Op::Doorbell { kind: 3, page: 0, value: 7 },
            Op::Smc { dword: 7, value: 2 },
            Op::Wqe { sq: false, queue: 1, units: 2, bytes: vec![9; 64] },
            Op::Pump,
            Op::Request(vec![5; 40]),
            Op::Receive { vport: 0, frame: vec![0xff; 60] },
        ];
        assert_eq!(decode_all(&encode_all(&ops)), ops);
    }

    #[test]
    fn the_hwc_seeds_hold_the_requests_of_a_whole_probe() {
        for (name, seed) in hwc() {
            let requests = decode_all(&seed).into_iter().filter(|op| matches!(op, Op::Request(_))).count();
            assert!(requests > 10, "{name}: {requests} requests");
        }
    }
}
