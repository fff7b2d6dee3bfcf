//! The device driven by an in-process model of Linux's `mana` driver
//! (tests/support): probe orders of Debian 6.1.192, 6.12.117 and 7.3.4,
//! ndo_open, teardown, and the bad input a buggy or hostile driver can send.
//!
//! Expected values cite their source: the driver code path (file/function)
//! or docs/mana-protocol.md (§ numbers), which summarises it.
// Tests fail by panicking; unwrap() on a driver step is the assertion.
#![allow(clippy::unwrap_used)]

mod support;

use device_model::bar::Bar0Handler;
use device_model::defs::*;
use mana_device_api::config::DeviceConfig;
use support::*;
use zerocopy::{FromZeros, IntoBytes};

fn config() -> DeviceConfig {
    DeviceConfig::default()
}

fn probed(kernel: Kernel) -> (Driver, Vec<u32>) {
    let mut drv = Driver::new(kernel, config());
    let eqs = drv.probe().expect("probe");
    (drv, eqs)
}

#[test]
fn bar0_registers_read_as_vf_layout_with_4_and_8_byte_accesses() {
    // mana_gd_init_vf_regs(): readq(0x08) db page offset, readl(0x10) & 0xFFFF
    // db page size, readq(0x18) SHM offset (docs/mana-protocol.md §1.2).
    let mut drv = Driver::new(Kernel::V6_12, config());
    assert_eq!(drv.dev.size(), 0x1_0000);
    assert_eq!(drv.readq(0x08), 0x1000);
    assert_eq!(drv.readl(0x08), 0x1000);
    assert_eq!(drv.readl(0x0C), 0);
    assert_eq!(drv.readl(0x10) & 0xFFFF, 0x1000);
    assert_eq!(drv.readq(0x18), 0x100);
    // shm_channel.c polls dword 7 before writing: owner bit clear at reset.
    assert_eq!(drv.smc_hdr(), 0);
}

#[test]
fn smc_establish_answers_0x81_and_posts_init_eqes_eq_id_db_first() {
    let mut drv = Driver::new(Kernel::V6_12, config());
    drv.establish_hwc().unwrap();
    let eq = drv.hwc_eq_id.unwrap();
    // mana_hwc_init_event_handler(): EQ_ID_DB (129) first, 9 × INIT_DATA (130), INIT_DONE (131).
    let mut expected = vec![129u8];
    expected.extend([130u8; 9]);
    expected.push(131);
    assert_eq!(drv.seen.eqe_types[&eq], expected);
    let types: Vec<u8> = drv.seen.init_data.iter().map(|&(t, _)| t).collect();
    // HWC_INIT_DATA_CQID..GPA_MKEY = 1..9 (hw_channel.h).
    assert_eq!(types, (1..=9).collect::<Vec<u8>>());
    let value = |t: u8| drv.seen.init_data.iter().find(|&&(ty, _)| ty == t).unwrap().1;
    assert_eq!(value(4), 1, "queue depth: HW_CHANNEL_VF_BOOTSTRAP_QUEUE_DEPTH");
    assert_eq!(value(5), 4096, "HW_CHANNEL_MAX_REQUEST_SIZE");
    assert_eq!(value(6), 4096, "HW_CHANNEL_MAX_RESPONSE_SIZE");
    assert!(value(7) > value(1), "MAX_NUM_CQS above the HWC CQ id (mana_hwc_establish_channel)");
    assert_eq!(drv.seen.eq_id_db, Some((eq as u16, 0)));
    // 11 EQEs, 5 per interrupt (mana_gd_process_eq_events): the device must
    // re-raise on the arm doorbell twice; every raise is on the HWC vector 0.
    assert_eq!(drv.irqs.all(), vec![0, 0, 0]);
}

#[test]
fn arm_doorbell_with_pending_events_raises_the_vector_again() {
    // Raw SMC handshake, then the EQ doorbells mana_gd_process_eq_events()
    // would ring, without running its handler.
    let mut drv = Driver::new(Kernel::V6_12, config());
    let rings = drv.alloc(4);
    assert_eq!(drv.smc_establish(rings, rings + 4096, rings + 8192, rings + 12288, 0), 0x81);
    // 11 init EQEs, one interrupt: the EQ started armed and disarmed itself.
    assert_eq!(drv.unserviced(), vec![0]);
    let first: Eqe = drv.read_obj(rings);
    let eq_id = HwcInitEqIdDb::from_bits(first.details[0].get()).eq_id();
    let ring = |drv: &mut Driver, consumed: u32, arm: bool| {
        // head starts at N = 256; tail_ptr = head % (N << 3).
        let db = EqDoorbell::new().with_id(eq_id).with_tail_ptr(256 + consumed).with_arm(arm);
        drv.writeq(0x1000 + 0xFF8, db.into_bits());
    };
    ring(&mut drv, 5, true);
    assert_eq!(drv.unserviced(), vec![0, 0], "6 pending at arm: fire again");
    ring(&mut drv, 10, true);
    assert_eq!(drv.unserviced(), vec![0, 0, 0], "1 pending at arm: fire again");
    ring(&mut drv, 11, true);
    assert_eq!(drv.unserviced().len(), 3, "none pending: re-armed, no interrupt");
    // Armed now: the next event (a test EQE through the HWC) interrupts once.
    let eq = drv.dev.snapshot().eqs[0].clone();
    assert!(eq.armed);
    // A non-arm doorbell disarms: nothing fires even with events pending later.
    ring(&mut drv, 11, false);
    assert!(!drv.dev.snapshot().eqs[0].armed);
    // A doorbell claiming more consumed than produced is ignored.
    ring(&mut drv, 12, true);
    assert!(!drv.dev.snapshot().eqs[0].armed);
    assert_eq!(drv.dev.snapshot().counters.guest_errors["doorbell"], 1);
}

#[test]
fn probe_6_12_order_succeeds_and_snapshot_shows_eqs_on_their_vectors() {
    let (drv, eqs) = probed(Kernel::V6_12);
    assert_eq!(eqs.len(), 4);
    let snap = drv.dev.snapshot();
    // HWC EQ on vector 0, BNIC EQ i on vector i+1 (docs/mana-protocol.md §5.2).
    let mut vectors: Vec<(u32, u16, u16)> = snap.eqs.iter().map(|e| (e.id, e.msix_index, e.owner.dev_type)).collect();
    vectors.sort_by_key(|&(_, v, _)| v);
    let msix: Vec<u16> = vectors.iter().map(|&(_, v, _)| v).collect();
    assert_eq!(msix, vec![0, 1, 2, 3, 4]);
    assert_eq!(vectors[0].2, 1, "HWC EQ owned by the HWC device");
    assert!(vectors[1..].iter().all(|&(_, _, owner)| owner == 2), "BNIC EQs owned by MANA");
    // MANA registered; MANA_IB registered then deregistered by mana_ib's unwind.
    assert_eq!(snap.devices.len(), 1);
    assert_eq!(snap.devices[0].dev_type, 2);
    let c = &snap.counters.commands;
    assert_eq!(c["GENERATE_TEST_EQE"], 5);
    assert_eq!(c["CREATE_QUEUE"], 4);
    assert_eq!(c["CREATE_DMA_REGION"], 4);
    assert_eq!(c["REGISTER_DEVICE"], 2);
    assert_eq!(c["DEREGISTER_DEVICE"], 1);
    assert_eq!(c["MANA_IB_GET_ADAPTER_CAP"], 1);
    assert_eq!(snap.counters.command_errors.get("MANA_IB_GET_ADAPTER_CAP"), Some(&1));
    assert_eq!(snap.counters.command_errors.len(), 1, "only the IB capability query fails");
    assert!(snap.counters.guest_errors.is_empty(), "{:?}", snap.counters.guest_errors);
    // Each probe EQ's test EQE raised its own vector.
    for v in 1..=4u16 {
        assert!(snap.vectors_raised[&v] >= 1, "vector {v} never raised");
    }
    // Queues own their regions: none left in the table (docs/mana-protocol.md §4.2).
    assert_eq!(snap.dma_regions, 0);
    serde_json::to_string(&snap).expect("snapshot serializes");
}

#[test]
fn probe_6_1_order_succeeds_with_an_eq_handler_that_always_rings() {
    let (drv, eqs) = probed(Kernel::V6_1);
    assert_eq!(eqs.len(), 4);
    assert!(drv.dev.snapshot().counters.guest_errors.is_empty());
}

#[test]
fn probe_7_3_order_answers_dev_config_before_register_device() {
    // 7.3: LIST_DEVICES before QUERY_MAX_RESOURCES, then QUERY_DEV_CONFIG V3
    // before REGISTER_DEVICE, no EQs at probe, QUERY_GF_STAT (docs/mana-protocol.md §4.1).
    let (mut drv, eqs) = probed(Kernel::V7_3);
    assert!(eqs.is_empty());
    let cfg = drv.query_dev_config(3).unwrap();
    // MTU 9000 (Azure's largest for MANA) plus the Ethernet header: the driver's max_mtu is 9000.
    assert_eq!(cfg.adapter_mtu.get(), 9014);
    let snap = drv.dev.snapshot();
    assert_eq!(snap.counters.commands["MANA_QUERY_DEV_CONFIG"], 3);
    assert_eq!(snap.counters.commands["MANA_QUERY_GF_STAT"], 1);
    assert_eq!(snap.eqs.len(), 1, "only the HWC EQ");
}

#[test]
fn query_dev_config_echoes_the_requested_response_version() {
    let (mut drv, _) = probed(Kernel::V6_12);
    for version in [2u16, 3] {
        let mut hdr = req_hdr(Command::MANA_QUERY_DEV_CONFIG, 88, 80, mana_dev());
        hdr.resp.msg_version = Le16::new(version);
        let mut req = hdr.as_bytes().to_vec();
        req.resize(88, 0);
        let resp = drv.send_raw(&req, 80).unwrap();
        let resp: QueryDevCfgResp = resp_as(&resp);
        // mana_query_device_cfg(): adapter_mtu is read when the version is 2 (6.x) / >= 2 (7.3).
        assert_eq!(resp.hdr.response.msg_version.get(), version);
        assert_eq!(resp.max_num_vports.get(), 1);
    }
}

#[test]
fn query_vport_config_reports_queues_indirection_mac_and_handle() {
    let (mut drv, _) = probed(Kernel::V6_12);
    let cfg = config();
    let vport = drv.query_vport(0).unwrap();
    assert_eq!(vport.max_num_sq.get(), cfg.max_queues);
    assert_eq!(vport.max_num_rq.get(), cfg.max_queues);
    // MANA_INDIRECT_TABLE_DEF_SIZE; 512 overflows CONFIG_VPORT_RX (docs/mana-protocol.md §9.8).
    assert_eq!(vport.num_indirection_ent.get(), 64);
    assert_eq!(vport.mac_addr, cfg.mac);
    assert_ne!(vport.vport.get(), 0);
    // vPort 1 does not exist with num_vports = 1.
    expect_err(drv.query_vport(1), "status").unwrap();
}

#[test]
fn open_creates_wq_objects_and_fence_posts_an_rx_object_fence_cqe() {
    let (mut drv, eqs) = probed(Kernel::V6_12);
    let pairs = drv.open(&eqs, 4).unwrap();
    assert_eq!(pairs.len(), 4);
    let snap = drv.dev.snapshot();
    // 4 × (SQ + RQ), each with a CQ whose parent is the queue's EQ (docs/mana-protocol.md §5.2).
    assert_eq!(snap.wqs.len(), 4 * 2 + 2, "plus the HWC SQ and RQ");
    for pair in &pairs {
        let cq = snap.cqs.iter().find(|c| c.id == pair.rq_cq.id).unwrap();
        assert_eq!(cq.parent_eq, pair.eq);
        let cq = snap.cqs.iter().find(|c| c.id == pair.sq_cq.id).unwrap();
        assert_eq!(cq.parent_eq, pair.eq);
        assert_eq!(drv.seen.rx_cqe_types[&pair.rq.id], vec![3], "CQE_RX_OBJECT_FENCE");
    }
    assert!(snap.counters.guest_errors.is_empty(), "{:?}", snap.counters.guest_errors);
    // mana_close(): steering off, fences, DESTROY_WQ_OBJ ×2n; then remove's EQ flush + disable.
    drv.close(&pairs).unwrap();
    for &eq in &eqs {
        drv.destroy_eq(eq).unwrap();
    }
    let snap = drv.dev.snapshot();
    assert_eq!(snap.eqs.len(), 1);
    assert_eq!(snap.cqs.len(), 1);
    assert!(snap.wq_objs.is_empty());
}

#[test]
fn open_and_close_in_the_7_3_order_creates_and_disables_eqs_at_open() {
    // 7.3: EQs are created at ndo_open (vector i+1), WQ objects use request
    // V3 / response V2, the RQ is 32 KiB with 1024 WQEs and the RX CQ 128 KiB;
    // close disables the EQs again (docs/mana-protocol.md §4.2, §5.3).
    let (mut drv, probe_eqs) = probed(Kernel::V7_3);
    assert!(probe_eqs.is_empty());
    let pairs = drv.open(&probe_eqs, 4).unwrap();
    let snap = drv.dev.snapshot();
    let mut vectors: Vec<u16> = snap.eqs.iter().map(|e| e.msix_index).collect();
    vectors.sort_unstable();
    assert_eq!(vectors, vec![0, 1, 2, 3, 4]);
    for pair in &pairs {
        assert_eq!(drv.seen.rx_cqe_types[&pair.rq.id], vec![3], "CQE_RX_OBJECT_FENCE");
    }
    drv.close(&pairs).unwrap();
    let snap = drv.dev.snapshot();
    assert_eq!(snap.eqs.len(), 1, "only the HWC EQ is left");
    assert!(snap.wq_objs.is_empty() && snap.dma_regions == 0);
    assert!(snap.counters.command_errors.keys().all(|k| k == "MANA_IB_GET_ADAPTER_CAP"));
    assert!(snap.counters.guest_errors.is_empty(), "{:?}", snap.counters.guest_errors);
    // Open again on fresh EQs, as `ip link set up` after `down` does.
    drv.open(&probe_eqs, 4).unwrap();
}

#[test]
fn owner_bits_stay_correct_over_several_laps_of_every_hwc_ring() {
    let mut drv = Driver::new(Kernel::V6_12, config());
    drv.establish_hwc().unwrap();
    drv.test_channel().unwrap();
    let eq = drv.hwc_eq_id.unwrap();
    // Each test EQE request puts 2 EQEs (TEST_EVENT, one COMPLETION: the CQ is
    // disarmed until the driver re-arms it) on the 256-entry HWC EQ and 2 CQEs
    // on the 64-entry HWC CQ, and uses 2 of the 128 SQ basic units: 300
    // requests wrap the EQ twice, the CQ 9 times, the SQ 4 times and the RQ
    // (1 BU per response) twice. The driver model checks owner bits on every read
    // (mana_gd_read_cqe, mana_gd_process_eq_events) and fails on overflow.
    for _ in 0..300 {
        drv.test_eq(eq, hwc_dev()).unwrap();
    }
    let snap = drv.dev.snapshot();
    let hwc_eq = snap.eqs.iter().find(|e| e.id == eq).unwrap();
    assert!(hwc_eq.events_posted > 2 * 256, "{} events", hwc_eq.events_posted);
    assert!(snap.cqs[0].completions_posted > 8 * 64);
    assert!(snap.counters.guest_errors.is_empty(), "{:?}", snap.counters.guest_errors);
}

#[test]
fn events_beyond_a_full_eq_wait_instead_of_overrunning_the_consumer() {
    let (mut drv, _) = probed(Kernel::V6_12);
    // A small EQ (4096 bytes = 256 entries) on vector 5, whose interrupts the
    // driver holds back (masked), so it consumes nothing.
    let eq = drv.create_eq(5, 4096, mana_dev()).unwrap();
    drv.masked.insert(5);
    for _ in 0..300 {
        let mut req = GenerateTestEqeReq::new_zeroed();
        req.hdr = req_hdr(Command::GENERATE_TEST_EQE, 44, 32, mana_dev());
        req.queue_index = Le32::new(eq);
        let resp = drv.send_raw(req.as_bytes(), 32).unwrap();
        assert_eq!(status(&resp), 0);
    }
    let before = drv.seen.test_events.len();
    // Delivering the interrupt now must show exactly 300 events, in order, with
    // no "EQ overflow detected": 256 in the ring, 44 written as room frees.
    drv.unmask(5).unwrap();
    let got = drv.seen.test_events[before..].iter().filter(|&&id| id == eq).count();
    assert_eq!(got, 300);
}

#[test]
fn mana_ib_is_listed_and_its_commands_fail_cleanly() {
    // The all-kernels choice of docs/mana-protocol.md §7: list MANA_IB (type 3), answer
    // REGISTER/DEREGISTER, fail every 0x3xxxx command.
    let mut drv = Driver::new(Kernel::V6_12, config());
    drv.establish_hwc().unwrap();
    drv.test_channel().unwrap();
    let list: ListDevicesResp = drv.general(Command::LIST_DEVICES, DevId::default()).unwrap();
    assert_eq!(list.num_of_devs.get(), 2);
    assert_eq!(&list.devs[..2], &[mana_dev(), ib_dev()]);
    drv.mana_ib_probe().unwrap();
    for code in [0x30002u32, 0x30004, 0x3FFFF] {
        let hdr = req_hdr(Command(code), 40, 64, ib_dev());
        let resp = drv.send_raw(hdr.as_bytes(), 64).unwrap();
        assert_eq!(status(&resp), 0xFFFF_FFFF, "code {code:#x}");
    }
}

#[test]
fn unknown_commands_fail_with_cmd_unsupported_and_a_header_only_response() {
    let (mut drv, _) = probed(Kernel::V6_12);
    // GDMA_STATUS_CMD_UNSUPPORTED (7.3 gdma.h) → -EOPNOTSUPP in 7.3, -EPROTO in 6.x.
    for (code, dev) in [(0x9999u32, DevId::default()), (0x2000C, mana_dev()), (0x2000A, mana_dev()), (22, mana_dev())] {
        let mut hdr = req_hdr(Command(code), 40, 440, dev);
        hdr.activity_id = Le32::new(77);
        let resp = drv.send_raw(hdr.as_bytes(), 440).unwrap();
        assert_eq!(resp.len(), 32, "header only");
        let rh: GdmaRespHdr = resp_as(&resp);
        assert_eq!(rh.status.get(), 0xFFFF_FFFF);
        assert_eq!(rh.response.msg_type.get(), code, "req.resp echoed");
        assert_eq!(rh.activity_id.get(), 77);
        assert_eq!(rh.dev_id, dev);
    }
    let snap = drv.dev.snapshot();
    assert_eq!(snap.counters.commands[mana_device_api::snapshot::UNKNOWN_COMMAND], 1);
    assert_eq!(snap.counters.commands["MANA_QUERY_PHY_STAT"], 1);
}

#[test]
fn malformed_requests_get_an_error_status_not_a_hang() {
    let (mut drv, _) = probed(Kernel::V6_12);
    // Shorter than gdma_req_hdr.
    let resp = drv.send_raw(&[0u8; 12], 32).unwrap();
    assert_ne!(status(&resp), 0);
    // GENERATE_TEST_EQE cut before queue_index.
    let hdr = req_hdr(Command::GENERATE_TEST_EQE, 40, 32, mana_dev());
    let resp = drv.send_raw(hdr.as_bytes(), 32).unwrap();
    assert_eq!(status(&resp), 0xC000_000D);
    // CREATE_DMA_REGION announcing 100 pages but carrying 2.
    let pages = drv.alloc_scattered(2);
    let mut req = dma_region_request(&pages, mana_dev());
    req[60..64].copy_from_slice(&100u32.to_le_bytes());
    let resp = drv.send_raw(&req, 40).unwrap();
    assert_ne!(status(&resp), 0);
    // The channel still works.
    let _: QueryMaxResourcesResp = drv.general(Command::QUERY_MAX_RESOURCES, DevId::default()).unwrap();
}

#[test]
fn oversized_request_sge_is_refused_and_the_channel_survives() {
    let (mut drv, _) = probed(Kernel::V6_12);
    // An SQ WQE whose SGE claims 8 KiB (HW_CHANNEL_MAX_REQUEST_SIZE is 4 KiB).
    let mut sq = drv.hwc_sq.clone().unwrap();
    let offset = u64::from(sq.head) * 32;
    let header = WqeHeader::new().with_num_sge(1).with_inline_oob_size_div4(6);
    let buf = drv.alloc(2);
    let hdr = req_hdr(Command::QUERY_MAX_RESOURCES, 40, 72, DevId::default());
    drv.write(buf, hdr.as_bytes());
    let sge = Sge { address: Le64::new(buf), mem_key: Le32::new(0), size: Le32::new(8192) };
    drv.write(sq.ring.addr(offset), header.as_bytes());
    drv.write(sq.ring.addr(offset + 32), sge.as_bytes());
    sq.head += 2;
    drv.ring_wq(&sq, true);
    drv.hwc_sq = Some(sq);
    drv.pump().unwrap();
    let resp = drv.seen.responses.last().unwrap().clone();
    assert_ne!(status(&resp), 0);
    let _: QueryMaxResourcesResp = drv.general(Command::QUERY_MAX_RESOURCES, DevId::default()).unwrap();
    assert_eq!(drv.dev.snapshot().counters.guest_errors["hwc request"], 1);
}

#[test]
fn dma_regions_with_bad_guest_addresses_are_refused() {
    let (mut drv, _) = probed(Kernel::V6_12);
    let good = drv.alloc(1);
    let cases: [(&str, Vec<u64>); 3] = [
        ("outside guest RAM", vec![good, RAM_SIZE as u64]),
        ("unaligned", vec![good + 8]),
        ("wrapping", vec![!4095u64]),
    ];
    for (what, pages) in cases {
        let req = dma_region_request(&pages, mana_dev());
        let resp = drv.send_raw(&req, 40).unwrap();
        assert_eq!(status(&resp), 0xC000_000D, "{what}");
    }
    // Zero pages, and a length beyond the pages.
    let mut req = dma_region_request(&[], mana_dev());
    let resp = drv.send_raw(&req, 40).unwrap();
    assert_ne!(status(&resp), 0, "zero pages");
    req = dma_region_request(&[good], mana_dev());
    req[40..48].copy_from_slice(&8192u64.to_le_bytes());
    let resp = drv.send_raw(&req, 40).unwrap();
    assert_ne!(status(&resp), 0, "length > pages");
    // Unknown handles.
    let mut destroy = DestroyDmaRegionReq::new_zeroed();
    destroy.hdr = req_hdr(Command::DESTROY_DMA_REGION, 48, 32, mana_dev());
    destroy.dma_region_handle = Le64::new(0xDEAD);
    let resp = drv.send_raw(destroy.as_bytes(), 32).unwrap();
    assert_ne!(status(&resp), 0);
    assert_eq!(drv.dev.snapshot().dma_regions, 0);
}

#[test]
fn dma_region_add_pages_completes_a_region_for_a_queue() {
    let (mut drv, _) = probed(Kernel::V6_12);
    let pages = drv.alloc_scattered(8);
    let mut req = dma_region_request(&pages[..3], mana_dev());
    req[56..60].copy_from_slice(&8u32.to_le_bytes()); // page_count 8, 3 listed
    req[40..48].copy_from_slice(&(8u64 * 4096).to_le_bytes());
    let resp = drv.send_raw(&req, 40).unwrap();
    assert_eq!(status(&resp), 0);
    let handle = resp_as::<CreateDmaRegionResp>(&resp).dma_region_handle.get();
    let queue = |drv: &mut Driver| {
        let mut cq = CreateQueueReq::new_zeroed();
        cq.hdr = req_hdr(Command::CREATE_QUEUE, 96, 36, mana_dev());
        cq.queue_type = Le32::new(4);
        cq.gdma_region = Le64::new(handle);
        cq.queue_size = Le32::new(32768);
        cq.eq_pci_msix_index = Le32::new(7);
        status(&drv.send_raw(cq.as_bytes(), 36).unwrap())
    };
    assert_ne!(queue(&mut drv), 0, "incomplete region refused");
    let mut add = DmaRegionAddPagesReq::new_zeroed();
    add.hdr = req_hdr(Command::DMA_REGION_ADD_PAGES, 56 + 40, 32, mana_dev());
    add.dma_region_handle = Le64::new(handle);
    add.page_addr_list_len = Le32::new(5);
    let mut bytes = add.as_bytes().to_vec();
    for p in &pages[3..] {
        bytes.extend_from_slice(&p.to_le_bytes());
    }
    assert_eq!(status(&drv.send_raw(&bytes, 32).unwrap()), 0);
    // One page too many now.
    assert_ne!(status(&drv.send_raw(&bytes[..56 + 8], 32).unwrap()), 0);
    assert_eq!(queue(&mut drv), 0);
}

#[test]
fn msix_indices_outside_the_table_are_refused() {
    let (mut drv, _) = probed(Kernel::V6_12);
    let table = config().msix_table_size;
    let pages = drv.alloc_scattered(8);
    let handle = drv.create_dma_region(&pages, mana_dev()).unwrap();
    let mut req = CreateQueueReq::new_zeroed();
    req.hdr = req_hdr(Command::CREATE_QUEUE, 96, 36, mana_dev());
    req.queue_type = Le32::new(4);
    req.gdma_region = Le64::new(handle);
    req.queue_size = Le32::new(32768);
    req.eq_pci_msix_index = Le32::new(u32::from(table));
    assert_eq!(status(&drv.send_raw(req.as_bytes(), 36).unwrap()), 0xC000_000D);
    req.eq_pci_msix_index = Le32::new(u32::MAX);
    assert_eq!(status(&drv.send_raw(req.as_bytes(), 36).unwrap()), 0xC000_000D);
    // The region was not consumed by the failed attempts.
    req.eq_pci_msix_index = Le32::new(u32::from(table) - 1);
    assert_eq!(status(&drv.send_raw(req.as_bytes(), 36).unwrap()), 0);
}

#[test]
fn smc_establish_with_a_bad_vector_or_unmapped_ring_fails_the_handshake() {
    let mut drv = Driver::new(Kernel::V6_12, config());
    let page = drv.alloc(4);
    // Vector >= MSI-X table size: status non-zero, owner bit clear (mana_smc_read_response → -EPROTO).
    let hdr = drv.smc_establish(page, page + 4096, page + 8192, page + 12288, config().msix_table_size);
    assert_eq!(hdr >> 31, 0);
    assert_ne!((hdr >> 8) & 0xFF, 0);
    // A ring outside guest RAM.
    let hdr = drv.smc_establish(RAM_SIZE as u64, page + 4096, page + 8192, page + 12288, 0);
    assert_ne!((hdr >> 8) & 0xFF, 0);
    assert!(drv.irqs.all().is_empty(), "no vector raised for an EQ that does not exist");
    assert!(drv.dev.snapshot().eqs.is_empty());
}

#[test]
fn destroy_hwc_then_reestablish_starts_from_scratch() {
    let (mut drv, eqs) = probed(Kernel::V6_12);
    drv.open(&eqs, 4).unwrap();
    // mana_smc_teardown_hwc(): 0x82 and everything forgotten.
    assert_eq!(drv.smc_destroy(), 0x82);
    let snap = drv.dev.snapshot();
    assert!(snap.hwc.is_none() && snap.eqs.is_empty() && snap.cqs.is_empty() && snap.wqs.is_empty());
    assert!(snap.devices.is_empty() && snap.wq_objs.is_empty() && snap.dma_regions == 0);
    assert_eq!(snap.counters.hwc_destroyed, 1);
    drv.forget_all();
    // A later probe re-establishes (rmmod + insmod).
    let eqs_again = drv.probe().unwrap();
    assert_eq!(eqs_again, eqs, "ids are handed out again from the start");
    assert_eq!(drv.dev.snapshot().counters.hwc_established, 2);
}

#[test]
fn reset_forgets_everything_and_the_smc_reads_idle() {
    let (mut drv, _) = probed(Kernel::V6_12);
    drv.dev.reset();
    assert_eq!(drv.smc_hdr(), 0);
    let snap = drv.dev.snapshot();
    assert!(snap.eqs.is_empty() && snap.devices.is_empty());
    assert_eq!(snap.counters.resets, 1);
    drv.forget_all();
    drv.probe().unwrap();
}

#[test]
fn doorbells_for_unknown_queues_or_bogus_positions_raise_nothing() {
    let mut drv = Driver::new(Kernel::V6_12, config());
    // Before any queue exists, every doorbell kind on every page.
    for page in 0..15u64 {
        for off in [0x000u64, 0x400, 0x800, 0x820, 0xFF8] {
            drv.writeq(0x1000 + page * 0x1000 + off, 0xFFFF_FFFF_FFFF_FFFF);
            drv.writeq(0x1000 + page * 0x1000 + off, 0x8000_0000_0000_0000);
        }
    }
    assert!(drv.irqs.all().is_empty());
    drv.establish_hwc().unwrap();
    let raised = drv.irqs.all().len();
    let eq = drv.hwc_eq_id.unwrap();
    // EQ consumer beyond the producer, CQ consumer beyond, SQ producer a lap ahead.
    let bogus_eq = EqDoorbell::new().with_id(eq as u16).with_tail_ptr(256 + 100).with_arm(true);
    drv.writeq(0x1FF8, bogus_eq.into_bits());
    let cq = drv.hwc_cq_id.unwrap();
    let bogus_cq = CqDoorbell::new().with_id(cq).with_tail_ptr(64 + 30).with_arm(true);
    drv.writeq(0x1800, bogus_cq.into_bits());
    let sq = drv.hwc_sq.clone().unwrap();
    let bogus_sq = WqDoorbell::new().with_id(sq.id).with_tail_ptr(8192);
    drv.writeq(0x1000, bogus_sq.into_bits());
    // 4-byte doorbell writes are not doorbells.
    drv.writel(0x1FF8, 0);
    assert_eq!(drv.irqs.all().len(), raised);
    let errors = drv.dev.snapshot().counters.guest_errors;
    assert!(errors["doorbell"] >= 3, "{errors:?}");
    // The channel still works.
    drv.test_channel().unwrap();
}

#[test]
fn no_vector_for_a_cq_whose_eq_was_disabled() {
    let (mut drv, eqs) = probed(Kernel::V6_12);
    let pairs = drv.open(&eqs, 4).unwrap();
    let pair = &pairs[0];
    drv.destroy_eq(pair.eq).unwrap();
    let vector = 1u16;
    let before = drv.dev.snapshot().vectors_raised.get(&vector).copied().unwrap_or(0);
    // FENCE on the RQ whose CQ's parent EQ is gone: the CQE is written, no
    // event, no interrupt (the device never raises for a missing EQ).
    let mut req = FenceRqReq::new_zeroed();
    req.hdr = req_hdr(Command::MANA_FENCE_RQ, 48, 32, mana_dev());
    req.wq_obj_handle = Le64::new(pair.rq_obj);
    let _: GdmaRespHdr = drv.bnic(req.as_bytes().to_vec()).unwrap();
    assert_eq!(drv.dev.snapshot().vectors_raised.get(&vector).copied().unwrap_or(0), before);
    // Test EQE on the disabled EQ is refused.
    expect_err(drv.test_eq(pair.eq, mana_dev()), "status").unwrap();
}

#[test]
fn wq_objects_need_a_known_vport_eq_and_regions() {
    let (mut drv, eqs) = probed(Kernel::V6_12);
    let pages = drv.alloc_scattered(2);
    let wq = drv.create_dma_region(&pages[..1], mana_dev()).unwrap();
    let cq = drv.create_dma_region(&pages[1..], mana_dev()).unwrap();
    let vport = drv.vport_handle().unwrap();
    let base = |eq: u32, vport: u64, wq_size: u32| {
        let mut req = CreateWqObjReq::new_zeroed();
        req.hdr = req_hdr(Command::MANA_CREATE_WQ_OBJ, 88, 48, mana_dev());
        req.vport = Le64::new(vport);
        req.wq_type = Le32::new(1);
        req.wq_gdma_region = Le64::new(wq);
        req.cq_gdma_region = Le64::new(cq);
        req.wq_size = Le32::new(wq_size);
        req.cq_size = Le32::new(4096);
        req.cq_parent_qid = Le32::new(eq);
        req.as_bytes().to_vec()
    };
    expect_err(drv.bnic::<CreateWqObjResp>(base(999, vport, 4096)), "status").unwrap();
    expect_err(drv.bnic::<CreateWqObjResp>(base(eqs[0], vport + 7, 4096)), "status").unwrap();
    expect_err(drv.bnic::<CreateWqObjResp>(base(eqs[0], vport, 8192)), "status").unwrap();
    let ok: CreateWqObjResp = drv.bnic(base(eqs[0], vport, 4096)).unwrap();
    assert_ne!(ok.wq_obj.get(), u64::MAX);
    // The regions now belong to the queue.
    expect_err(drv.bnic::<CreateWqObjResp>(base(eqs[0], vport, 4096)), "status").unwrap();
}

#[test]
fn random_bar0_traffic_never_panics_or_hangs() {
    let (mut drv, _) = probed(Kernel::V6_12);
    // Deterministic pseudo-random offsets, widths and values.
    let mut rng = manarig_model::random::Rng::new(0x9E37_79B9_7F4A_7C15);
    let mut next = || rng.next_u64();
    for _ in 0..20_000 {
        let r = next();
        let width = [1usize, 2, 4, 8][(r & 3) as usize];
        let offset = (next() % 0x1_0010) & !((width as u64) - 1);
        let value = next().to_le_bytes();
        if r & 0x10 == 0 {
            drv.dev.write(offset, &value[..width]);
        } else {
            let mut data = vec![0u8; width];
            drv.dev.read(offset, &mut data);
        }
    }
    // Whatever happened, the only vectors ever raised belong to EQs the
    // driver created (HWC on 0, probe EQs on 1..=4): a random doorbell can
    // re-fire an existing EQ but never invent one.
    let snap = drv.dev.snapshot();
    assert!(snap.eqs.iter().all(|e| e.msix_index < config().msix_table_size));
    assert!(snap.vectors_raised.keys().all(|&v| v <= 4), "{:?}", snap.vectors_raised);
    assert!(snap.counters.guest_errors.values().sum::<u64>() > 0, "bad writes were counted");
}

#[test]
fn random_hwc_requests_always_get_an_answer_and_the_channel_survives() {
    let (mut drv, _) = probed(Kernel::V6_12);
    // Only the HWC vector is serviced; whatever random requests do to other
    // EQs stays in the device (their interrupts are held back).
    drv.masked.extend(1..config().msix_table_size);
    let codes = [1u32, 2, 3, 4, 5, 10, 12, 13, 25, 26, 27, 0x54, 0x20001, 0x20002, 0x20003, 0x20004, 0x20005];
    let codes = [&codes[..], &[0x20006, 0x20007, 0x20008, 0x30001, 0xdead_beef]].concat();
    let mut rng = manarig_model::random::Rng::new(0x2545_F491_4F6C_DD1D);
    let mut next = move || rng.next_u64();
    for i in 0..2000 {
        let len = (next() % 600) as usize + 1;
        let mut req: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if i % 2 == 0 && len >= 40 {
            // A well-formed header for a real command, random body.
            let code = Command(codes[(next() % codes.len() as u64) as usize]);
            let dev = [DevId::default(), mana_dev(), ib_dev(), hwc_dev()][(next() % 4) as usize];
            let hdr = req_hdr(code, len, (next() % 5000) as usize, dev);
            req[..40].copy_from_slice(hdr.as_bytes());
        }
        let resp = drv.send_raw(&req, 4096).unwrap_or_else(|e| panic!("request {i}: {e:#}"));
        assert!(resp.len() >= 32);
    }
    let _: QueryMaxResourcesResp = drv.general(Command::QUERY_MAX_RESOURCES, DevId::default()).unwrap();
    let snap = drv.dev.snapshot();
    assert!(snap.eqs.iter().any(|e| e.owner.dev_type == 1), "the HWC EQ survived");
    assert!(snap.eqs.iter().all(|e| e.msix_index < config().msix_table_size));
}
