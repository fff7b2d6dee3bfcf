//! The seed corpus: what the in-process model of Linux's `mana` driver
//! (device-model/tests/support) does in real probes, opens, transmits and
//! closes, recorded ([`crate::support::start_trace`]) and written in each
//! target's input format; for the vfio-user targets, the messages QEMU sends
//! while it brings the device up. `record_corpus` writes them into
//! `fuzz/corpus/<target>/`.

use crate::machine::{Prepared, Spec};
use crate::ops::{decode_all, encode_all, Op};
use crate::support::checkpoint::DmaView;
use crate::support::frames::{frame, Flow};
use crate::support::net::TxOpts;
use crate::support::{start_trace, take_trace, Driver, Kernel, Traced};
use crate::targets::{config, spec, TWO_QUEUES};
use crate::wire_session::{self, Segment};
use device_model::defs::Command;
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

/// Transmits (plain, checksum offloads, several SGEs, TSO with a VLAN tag)
/// and receives, recorded on the machine of `spec` as a fuzz input starts
/// it (its checkpoint), one seed each.
fn traffic(spec: &Spec) -> Vec<Seed> {
    let mut prepared = Prepared::build(spec);
    let machine = prepared.rewound();
    if machine.pairs.is_empty() {
        return Vec::new();
    }
    let mac = spec.config.mac;
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
        let machine = prepared.rewound();
        let pair = machine.pairs[i % machine.pairs.len()].clone();
        start_trace();
        let _ = machine.drv.xmit(&pair, &bytes, &opts);
        let _ = machine.drv.pump();
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

/// `queues`: [`traffic`] on its machine, and the same with the device's
/// DMA map changed under the live queues (unmapped, other memory, half).
pub fn queues() -> Vec<Seed> {
    let mut seeds = traffic(&spec(TWO_QUEUES));
    let remapped: Vec<Seed> = seeds
        .iter()
        .flat_map(|(name, bytes)| {
            (1..DmaView::ALL.len() as u8).map(move |view| {
                let mut ops = decode_all(bytes);
                ops.insert(ops.len() / 2, Op::Remap { view });
                ops.push(Op::Remap { view: 0 });
                ops.push(Op::Poll);
                (format!("{name}-remap-{view}"), encode_all(&ops))
            })
        })
        .collect();
    seeds.extend(remapped);
    seeds
}

/// Frames every path of RX parses: TCP and UDP over IPv4 and IPv6, a VLAN
/// tag, ARP, an IPv4 fragment, a runt, 9000 bytes, 65,535 bytes and more
/// than the TAP reads at once.
fn rx_frames(mac: [u8; 6]) -> Vec<(&'static str, Vec<u8>)> {
    let tcp = Flow::tcp("10.0.0.1", 1234, "10.0.0.2", 80);
    let tcp6 = Flow::tcp("fe80::1", 4000, "fe80::2", 22);
    let udp = Flow::tcp("10.0.0.9", 53, "10.0.0.2", 5353).udp();
    let mut vlan = frame(mac, &tcp, &[3; 100]);
    vlan.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
    let mut fragment = frame(mac, &udp, &[4; 200]);
    fragment[20] = 0x20; // IPv4 more-fragments
    vec![
        ("tcp4", frame(mac, &tcp, &[1; 100])),
        ("tcp6", frame(mac, &tcp6, &[2; 1400])),
        ("udp4", frame(mac, &udp, &[5; 512])),
        ("vlan", vlan),
        ("arp", crate::support::frames::arp(mac)),
        ("fragment", fragment),
        ("runt", vec![0xff; 10]),
        ("jumbo-9000", frame(mac, &tcp, &[6; 9000 - 54])),
        ("max-65535", frame(mac, &tcp, &[7; 65_535 - 54])),
    ]
}

/// `backend`: each frame of [`rx_frames`] arriving in the TAP and pulled
/// by the event loop; a train of 64 frames; one longer than 65,535 bytes;
/// and [`traffic`] on the TAP machine.
pub fn backend() -> Vec<Seed> {
    let spec = crate::targets::backend_spec();
    let mut seeds: Vec<Seed> = rx_frames(spec.config.mac)
        .into_iter()
        .map(|(name, bytes)| {
            let len = bytes.len() as u16;
            let ops = [
                Op::Frames {
                    vport: 0,
                    count: 1,
                    len,
                    pattern: bytes[..bytes.len().min(crate::ops::MAX_BYTES)].to_vec(),
                },
                Op::PollBackend { budget: 64 },
                Op::Poll,
            ];
            (format!("rx-{name}"), encode_all(&ops))
        })
        .collect();
    let train = frame(spec.config.mac, &Flow::tcp("10.0.0.1", 7, "10.0.0.2", 8), &[8; 60]);
    let ops: Vec<Op> = (0..8)
        .map(|_| Op::Frames { vport: 0, count: 8, len: train.len() as u16, pattern: train.clone() })
        .chain([Op::PollBackend { budget: 32 }, Op::PollBackend { budget: 32 }, Op::Pump])
        .collect();
    seeds.push(("rx-train-64".into(), encode_all(&ops)));
    let ops =
        [Op::Frames { vport: 0, count: 1, len: u16::MAX, pattern: vec![0xab; 64] }, Op::PollBackend { budget: 1 }];
    seeds.push(("rx-cut-by-the-tap".into(), encode_all(&ops)));
    seeds.extend(traffic(&spec).into_iter().map(|(name, bytes)| (format!("tap-{name}"), bytes)));
    seeds
}

/// One [`crate::targets::decode_specs`] entry: kind byte, `a` (u32), `b`
/// (u16), status code (u32).
type SpecFields = (u8, u32, u16, u32);

/// Appends the bytes of one [`SpecFields`] entry.
fn spec_bytes(out: &mut Vec<u8>, (kind, a, b, code): SpecFields) {
    out.push(kind);
    out.extend_from_slice(&a.to_le_bytes());
    out.extend_from_slice(&b.to_le_bytes());
    out.extend_from_slice(&code.to_le_bytes());
}

/// The index of `command` in `command_names()` (what [`spec_bytes`]'s `a` picks).
fn command_index(command: Command) -> u32 {
    mana_device_api::inject::command_names().iter().position(|(_, c)| *c == command).unwrap_or(0) as u32
}

/// `inject`: each kind of fault with the requests of a whole 6.12 probe,
/// open and close, and the clock ticking (a second, then ten minutes)
/// after the open and at the end.
pub fn inject() -> Vec<Seed> {
    let requests = hwc().into_iter().find(|(name, _)| name.ends_with("6.12")).map(|(_, b)| b).unwrap_or_default();
    let mut ops = decode_all(&requests);
    let open_at = ops
        .iter()
        .position(|op| matches!(op, Op::Request(r) if r.get(4..8) == Some(&0x20007u32.to_le_bytes()[..])))
        .map_or(ops.len(), |i| i + 1);
    ops.insert(open_at, Op::Tick { ms: 1000 });
    ops.push(Op::Tick { ms: 600_000 });
    let tail = encode_all(&ops);
    let faults: Vec<(&str, Vec<SpecFields>)> = vec![
        ("status-create-queue-2", vec![(0, command_index(Command::CREATE_QUEUE), 2, 0xc000_009a)]),
        ("hwc-delay-query-max-resources", vec![(1, command_index(Command::QUERY_MAX_RESOURCES), 504, 0)]),
        ("hwc-delay-every-config-vport-rx", vec![(1, command_index(Command::MANA_CONFIG_VPORT_RX), 9, 0)]),
        ("spurious-irq-eq0-vector1", vec![(2, 0, 0, 0), (3, 1, 0, 0)]),
        ("owner-bits-eqe-12-cqe-3", vec![(4, 0, 12, 0), (5, 0, 3, 0)]),
        ("silent-vector-1", vec![(6, 1, 0, 0)]),
        ("rx-cqe-corrupt-1", vec![(7, 0, 1, 0)]),
        ("link-down-up-reset", vec![(8, 1, 0, 0), (8, 2, 1, 0), (8, 0, 2, 0)]),
    ];
    faults
        .into_iter()
        .map(|(name, specs)| {
            let mut out = vec![specs.len() as u8];
            for fields in specs {
                spec_bytes(&mut out, fields);
            }
            out.extend_from_slice(&tail);
            (name.to_owned(), out)
        })
        .collect()
}

/// `configs`: on every machine of [`crate::targets::CONFIGS`], frames to
/// every vPort, the event loop, and the 6.12 probe's requests again.
pub fn configs() -> Vec<Seed> {
    let mac = config().mac;
    let mut ops: Vec<Op> = rx_frames(mac)
        .into_iter()
        .take(4)
        .enumerate()
        .map(|(i, (_, frame))| Op::Receive { vport: i as u8, frame })
        .collect();
    ops.extend([Op::Pump, Op::Poll]);
    let requests = hwc().into_iter().find(|(name, _)| name.ends_with("6.12")).map(|(_, b)| b).unwrap_or_default();
    ops.extend(decode_all(&requests).into_iter().take(12));
    let tail = encode_all(&ops);
    (0..crate::targets::CONFIGS.len() as u8)
        .map(|index| {
            let mut bytes = vec![index];
            bytes.extend_from_slice(&tail);
            (format!("config-{index}"), bytes)
        })
        .collect()
}

/// `persistent`: the traffic and remaps of `queues` and the requests of
/// whole probes, opens and closes (which, replayed on one device again and
/// again, fill its tables up to their bounds).
pub fn persistent() -> Vec<Seed> {
    let mut seeds = queues();
    seeds.extend(hwc());
    seeds
}

/// `threads`: the traffic and remaps of `queues` (its machine is the one
/// this target replays), and `backend`'s frames arriving in the TAP.
pub fn threads() -> Vec<Seed> {
    let mut seeds = queues();
    seeds.extend(backend().into_iter().filter(|(name, _)| name.starts_with("rx-")));
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
        ("backend", backend()),
        ("inject", inject()),
        ("configs", configs()),
        ("persistent", persistent()),
        ("threads", threads()),
        ("msix", msix()),
        ("vfio_region", vfio_region()),
        ("vfio_wire", vfio_wire()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;

    #[test]
    fn a_recorded_probe_replayed_as_ops_leaves_the_device_as_the_driver_did() {
        let mut drv = Driver::new(Kernel::V6_12, config());
        drv.probe().expect("probe");
        let expected = drv.dev.snapshot();
        let (_, seed) = bar0().remove(1);
        let mut replay = Machine { drv: Driver::new(Kernel::V6_12, config()), tap_peer: None, pairs: Vec::new() };
        for op in decode_all(&seed) {
            op.apply(&mut replay);
        }
        let got = replay.drv.dev.snapshot();
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
            Op::Tick { ms: 1000 },
            Op::Remap { view: 2 },
            Op::Frames { vport: 1, count: 3, len: 65_535, pattern: vec![1, 2, 3] },
            Op::PollBackend { budget: 64 },
            Op::Poll,
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

    #[test]
    fn recorded_traffic_replayed_on_the_targets_machine_sends_and_receives() {
        for (spec, seeds) in [(spec(TWO_QUEUES), queues()), (crate::targets::backend_spec(), backend())] {
            let mut prepared = Prepared::build(&spec);
            for (name, seed) in seeds {
                let machine = prepared.rewound();
                for op in decode_all(&seed) {
                    op.apply(machine);
                }
                let snapshot = machine.drv.dev.snapshot();
                let traffic = snapshot.counters.traffic;
                let moved = traffic.tx.packets + traffic.rx.packets + traffic.rx.drops;
                if name.contains("remap") {
                    continue;
                }
                assert!(moved > 0 || name.contains("runt") || name.contains("arp"), "{name}: {traffic:?}");
                if !name.contains("runt") && !name.contains("fragment") {
                    assert!(snapshot.counters.guest_errors.is_empty(), "{name}: {:?}", snapshot.counters.guest_errors);
                }
            }
        }
    }

    #[test]
    fn the_inject_seeds_name_their_faults_and_the_timed_ones_strike() {
        for (name, seed) in inject() {
            let specs = crate::targets::decode_specs(&mut crate::input::Input::new(&seed));
            assert!(!specs.is_empty(), "{name}");
        }
        let (_, seed) = inject().into_iter().find(|(name, _)| name == "link-down-up-reset").expect("seed");
        let mut input = crate::input::Input::new(&seed);
        let specs = crate::targets::decode_specs(&mut input);
        let mut prepared = Prepared::build(&spec(crate::machine::Stage::HwcUp));
        let machine = prepared.rewound();
        machine.drv.dev.inject(&specs);
        for op in decode_all(input.take_up_to(usize::MAX)) {
            op.apply(machine);
        }
        let injected = machine.drv.dev.snapshot().counters.injected;
        for spec in ["link-down@0", "link-up@1", "reset@2"] {
            assert_eq!(injected.get(spec), Some(&1), "{injected:?}");
        }
    }

    #[test]
    fn most_config_machines_come_up_with_their_queues_open() {
        let opened = (0..crate::targets::CONFIGS.len() as u8)
            .filter(|&i| !Prepared::build(&crate::targets::config_spec(i)).rewound().pairs.is_empty())
            .count();
        assert!(opened >= 12, "{opened} of {} configurations opened queues", crate::targets::CONFIGS.len());
    }
}
