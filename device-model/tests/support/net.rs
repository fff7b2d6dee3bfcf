//! The data-path half of the driver model: what
//! drivers/net/ethernet/microsoft/mana/mana_en.c does with SQs and RQs
//! (Linux 6.1–7.3): `mana_start_xmit()` (one WQE per skb: header, TX OOB,
//! SGEs with the device's `gpa_mkey`, SGEs may wrap the ring; one SQ
//! doorbell per WQE), `mana_poll_tx_cq()` (one CQE per WQE, FIFO; the SQ
//! tail moves by the WQE's size), `mana_alloc_rx_wqe()` / `mana_post_pkt_rxq()`
//! (one 1-SGE RQ WQE per buffer of `mtu + ETH_HLEN` bytes) and
//! `mana_poll_rx_cq()` / `mana_process_rx_cqe()` (RX_OKAY, TRUNCATED and
//! FENCE; a buffer is reposted for each data CQE and the RQ doorbell rung
//! once per poll).

use super::{Driver, DrvQueuePair, DrvWorkQueue};
use anyhow::{bail, ensure, Context, Result};
use device_model::defs::*;
use std::collections::{BTreeMap, VecDeque};
use zerocopy::{FromZeros, IntoBytes};

/// The key of Microsoft's RSS verification suite, which the model programs
/// instead of the driver's random one (`netdev_rss_key_fill()`) so that
/// hashes can be checked against the published table. Source: "Verifying
/// the RSS Hash Calculation",
/// learn.microsoft.com/windows-hardware/drivers/network/verifying-the-rss-hash-calculation.
pub const MS_RSS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b,
    0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac,
    0x01, 0xfa,
];
/// RX buffer size (`rxq->datasize` = mtu + ETH_HLEN for MTU 1500).
pub const RX_DATASIZE: u32 = 1514;
/// Bytes reserved per RX buffer (2 per page).
const RX_BUF_STRIDE: u64 = 2048;
/// XDP_PACKET_HEADROOM (include/uapi/linux/bpf.h): where the driver puts the
/// data in an RX buffer of a guest with pages above 4 KiB (MANA_XDP_MTU_MAX
/// is then far above the MTU, so the headroom is always reserved).
const XDP_PACKET_HEADROOM: u64 = 256;
/// TX frame arena size.
const TX_ARENA: u64 = 4 << 20;

/// A frame the model received.
#[derive(Debug, Clone)]
pub struct RxFrame {
    /// RQ id.
    pub rq: u32,
    /// `cqe_hdr.cqe_type`.
    pub cqe_type: u8,
    /// The frame (RX_OKAY only).
    pub bytes: Vec<u8>,
    /// `ppi[0].pkt_hash`.
    pub hash: u32,
    /// `rx_hashtype`.
    pub hash_type: u16,
    /// Checksum and VLAN flags.
    pub flags: RxCompFlags,
}

/// What `mana_start_xmit()` asks of the device for one skb.
#[derive(Debug, Clone, Default)]
pub struct TxOpts {
    /// Sizes of the SGEs the frame is split into (the rest goes in a last
    /// SGE); empty: one SGE.
    pub sges: Vec<usize>,
    /// `comp_tcp_csum`.
    pub tcp_csum: bool,
    /// `comp_udp_csum`.
    pub udp_csum: bool,
    /// `comp_iphdr_csum`.
    pub ip_csum: bool,
    /// GSO: MSS in `client_data_unit` (SGE 0 must then be the headers).
    pub mss: u16,
    /// VLAN tag to insert (long OOB), as a TCI.
    pub vlan: Option<u16>,
    /// A memory key other than the device's.
    pub mem_key: Option<u32>,
    /// SGE addresses to use instead of the arena copy (bad-input tests).
    pub addresses: Option<Vec<u64>>,
}

/// RX buffers of one RQ.
#[derive(Debug, Clone, Default)]
pub struct RxBufs {
    /// Buffer address per WQE slot.
    pub bufs: Vec<u64>,
    /// The driver's next buffer to complete (`rxq->buf_index`).
    pub tail: u32,
}

/// Data-path state of the model.
#[derive(Debug, Default, Clone)]
pub struct DataState {
    /// RX buffers per RQ id.
    pub rx: BTreeMap<u32, RxBufs>,
    /// Sizes (in basic units) of the WQEs in flight, per SQ id.
    pub inflight: BTreeMap<u32, VecDeque<u32>>,
    /// Frames received, in completion order.
    pub rx_frames: Vec<RxFrame>,
    /// TX CQE types per SQ id.
    pub tx_cqe_types: BTreeMap<u32, Vec<u8>>,
    /// Post SQ WQEs without ringing the doorbell (see [`Driver::ring_sq`]).
    pub defer_sq_doorbell: bool,
    arena: Option<(u64, u64)>,
}

impl Driver {
    /// `mana_alloc_rx_wqe()` + `mana_post_pkt_rxq()` for `count` buffers:
    /// one WQE (1 SGE of [`RX_DATASIZE`] bytes, the device's memory key)
    /// per buffer, each followed by an RQ doorbell.
    pub fn post_rx_buffers(&mut self, rq: &mut DrvWorkQueue, count: u32) {
        let bufs = self.rx_buffers(count);
        for &buf in &bufs {
            self.write_rx_wqe(rq, buf);
            rq.head = rq.head.wrapping_add(1);
            self.ring_wq(rq, false);
        }
        self.rqs.insert(rq.id, rq.clone());
        self.data.rx.insert(rq.id, RxBufs { bufs, tail: 0 });
    }

    /// `count` RX buffer addresses (the SGE's, after the headroom), as the
    /// driver lays them out for the guest's PAGE_SIZE (`mana_get_rxbuf_cfg()`):
    /// with 4 KiB pages, 2 KiB apart; with larger pages, 6.12 takes a whole
    /// guest page per buffer (alloc_size raised to PAGE_SIZE) and 7.3 packs
    /// PAGE_SIZE / 2 KiB page_pool fragments into each; the data starts
    /// XDP_PACKET_HEADROOM (256 bytes) into the buffer.
    fn rx_buffers(&mut self, count: u32) -> Vec<u64> {
        let count = u64::from(count);
        if self.guest_page == 4096 {
            let base = self.alloc((count * RX_BUF_STRIDE).div_ceil(4096));
            return (0..count).map(|i| base + i * RX_BUF_STRIDE).collect();
        }
        let stride = if self.kernel == super::Kernel::V7_3 { RX_BUF_STRIDE } else { self.guest_page };
        let base = self.alloc_coherent(count * stride);
        (0..count).map(|i| base + i * stride + XDP_PACKET_HEADROOM).collect()
    }

    fn write_rx_wqe(&self, rq: &DrvWorkQueue, buf: u64) {
        let offset = u64::from(rq.head) * 32;
        let header = WqeHeader::new().with_num_sge(1).with_inline_oob_size_div4(2);
        let sge = Sge { address: Le64::new(buf), mem_key: Le32::new(self.gpa_mkey), size: Le32::new(RX_DATASIZE) };
        self.write(rq.ring.addr(offset), header.as_bytes());
        self.write(rq.ring.addr(offset + 8), &[0u8; 8]);
        self.write(rq.ring.addr(offset + 16), sge.as_bytes());
    }

    /// `mana_process_rx_cqe()` for an Ethernet RX CQE of RQ `rq_id`;
    /// returns whether a buffer was consumed (and must be reposted).
    pub(super) fn rx_completed(&mut self, rq_id: u32, cqe: &Cqe) -> Result<bool> {
        let oob: ManaRxCompOob = super::resp_as(cqe.as_bytes());
        let cqe_type = ManaCqeType(oob.cqe_hdr.cqe_type());
        let mut frame = RxFrame {
            rq: rq_id,
            cqe_type: cqe_type.0,
            bytes: Vec::new(),
            hash: oob.ppi[0].pkt_hash.get(),
            hash_type: oob.flags.rx_hashtype(),
            flags: oob.flags,
        };
        match cqe_type {
            ManaCqeType::RX_OBJECT_FENCE => return Ok(false),
            ManaCqeType::RX_TRUNCATED => {}
            ManaCqeType::RX_OKAY => {
                let len = u32::from(oob.ppi[0].pkt_len.get());
                ensure!(len != 0, "RX pkt len=0, rq={rq_id}");
                ensure!(len <= RX_DATASIZE, "oversized RX packet: len={len}");
                let bufs = self.data.rx.get(&rq_id).context("RX buffers")?;
                let buf = bufs.bufs[(bufs.tail as usize) % bufs.bufs.len()];
                frame.bytes = self.read(buf, len as usize);
            }
            other => bail!("unknown RX CQE type {other:?}"),
        }
        self.data.rx_frames.push(frame);
        let bufs = self.data.rx.get_mut(&rq_id).context("RX buffers")?;
        let buf = bufs.bufs[(bufs.tail as usize) % bufs.bufs.len()];
        bufs.tail += 1;
        // Refill: the same buffer goes back at the producer (mana_post_pkt_rxq).
        let mut rq = self.rqs.get(&rq_id).cloned().context("RQ")?;
        self.write_rx_wqe(&rq, buf);
        rq.head = rq.head.wrapping_add(1);
        self.rqs.insert(rq_id, rq);
        Ok(true)
    }

    /// The RQ doorbell `mana_poll_rx_cq()` rings once after a poll.
    pub(super) fn ring_rq(&mut self, rq_id: u32) -> Result<()> {
        let rq = self.rqs.get(&rq_id).cloned().context("RQ")?;
        self.ring_wq(&rq, false);
        Ok(())
    }

    /// `mana_poll_tx_cq()` for one TX CQE of SQ `sq_id`.
    pub(super) fn tx_completed(&mut self, sq_id: u32, cqe: &Cqe) -> Result<()> {
        let oob: ManaTxCompOob = super::resp_as(cqe.as_bytes());
        ensure!(oob.cqe_hdr.client_type() == MANA_CQE_COMPLETION, "TX CQE client_type {}", oob.cqe_hdr.client_type());
        let inflight = self.data.inflight.entry(sq_id).or_default();
        ensure!(inflight.pop_front().is_some(), "TX CQE for SQ {sq_id} with nothing in flight");
        self.data.tx_cqe_types.entry(sq_id).or_default().push(oob.cqe_hdr.cqe_type());
        Ok(())
    }

    fn tx_copy(&mut self, frame: &[u8]) -> u64 {
        let (base, next) = match self.data.arena {
            Some(arena) => arena,
            None => (self.alloc(TX_ARENA / 4096), 0),
        };
        let len = frame.len() as u64;
        let at = if next + len > TX_ARENA { 0 } else { next };
        self.data.arena = Some((base, at + len.next_multiple_of(64)));
        self.write(base + at, frame);
        base + at
    }

    /// `mana_start_xmit()`: posts `frame` on the pair's SQ as `opts` says and
    /// rings the SQ doorbell; completions arrive through [`Driver::pump`].
    pub fn xmit(&mut self, pair: &DrvQueuePair, frame: &[u8], opts: &TxOpts) -> Result<()> {
        let sq_id = pair.sq.id;
        let addr = self.tx_copy(frame);
        let mut sizes = opts.sges.clone();
        let rest = frame.len() - sizes.iter().sum::<usize>().min(frame.len());
        if rest > 0 || sizes.is_empty() {
            sizes.push(rest);
        }
        let mut sges = Vec::new();
        let mut at = addr;
        for (i, &size) in sizes.iter().enumerate() {
            let address = opts.addresses.as_ref().and_then(|a| a.get(i).copied()).unwrap_or(at);
            sges.push(Sge {
                address: Le64::new(address),
                mem_key: Le32::new(opts.mem_key.unwrap_or(self.gpa_mkey)),
                size: Le32::new(size as u32),
            });
            at += size as u64;
        }
        let ipv6 = frame.get(12..14) == Some(&[0x86, 0xDD][..]);
        let offload = opts.tcp_csum || opts.udp_csum || opts.mss > 0;
        let mut oob = TxOob::new_zeroed();
        oob.s_oob = TxShortOob::new()
            .with_pkt_fmt(if opts.vlan.is_some() { MANA_LONG_PKT_FMT } else { MANA_SHORT_PKT_FMT })
            .with_is_outer_ipv4(offload && !ipv6)
            .with_is_outer_ipv6(offload && ipv6)
            .with_comp_iphdr_csum(opts.ip_csum)
            .with_comp_tcp_csum(opts.tcp_csum)
            .with_comp_udp_csum(opts.udp_csum)
            .with_vcq_num(pair.sq_cq.id)
            .with_trans_off(if opts.tcp_csum { super::frames::l4_offset(frame) as u16 } else { 0 })
            .with_vsq_frame(((sq_id >> 10) & 0x3FFF) as u16);
        if let Some(tci) = opts.vlan {
            oob.l_oob.vlan = TxLongOobVlan::new()
                .with_inject_vlan_pri_tag(true)
                .with_pcp((tci >> 13) as u8)
                .with_dei(tci & 0x1000 != 0)
                .with_vlan_id(tci & 0xFFF);
        }
        let oob_bytes = if opts.vlan.is_some() { oob.as_bytes() } else { oob.s_oob.as_bytes() };
        self.post_sq_wqe(pair, oob_bytes, &sges, opts.mss, sizes[0])
    }

    /// Writes one SQ WQE (header, `oob`, `sges`) at the producer and rings
    /// the doorbell, as `mana_gd_post_work_request()` +
    /// `mana_gd_wq_ring_doorbell()` do.
    pub fn post_sq_wqe(&mut self, pair: &DrvQueuePair, oob: &[u8], sges: &[Sge], mss: u16, sge0: usize) -> Result<()> {
        let sq_id = pair.sq.id;
        let mut sq = self.sqs.get(&sq_id).cloned().context("SQ")?;
        let header = WqeHeader::new()
            .with_num_sge(sges.len() as u8)
            .with_inline_oob_size_div4((oob.len() / 4) as u8)
            .with_client_oob_in_sgl(mss > 0)
            .with_last_vbytes(if mss > 0 { sge0 as u8 } else { 0 })
            .with_client_data_unit(mss);
        let size = (8 + oob.len() + 16 * sges.len()).div_ceil(32) as u32;
        let inflight = self.data.inflight.entry(sq_id).or_default();
        let used: u32 = inflight.iter().sum();
        ensure!(used + size <= (sq.ring.size / 32) as u32, "SQ {sq_id} full");
        inflight.push_back(size);
        let offset = u64::from(sq.head) * 32;
        self.write(sq.ring.addr(offset), header.as_bytes());
        self.write(sq.ring.addr(offset + 8), oob);
        for (i, sge) in sges.iter().enumerate() {
            // SGEs may wrap to the ring start (mana_gd_write_sgl()).
            let at = offset + 8 + oob.len() as u64 + 16 * i as u64;
            self.write(sq.ring.addr(at), sge.as_bytes());
        }
        sq.head = sq.head.wrapping_add(size);
        if !self.data.defer_sq_doorbell {
            self.ring_wq(&sq, true);
        }
        self.sqs.insert(sq_id, sq);
        Ok(())
    }

    /// Rings the SQ doorbell of `pair` with its current producer.
    pub fn ring_sq(&mut self, pair: &DrvQueuePair) -> Result<()> {
        let sq = self.sqs.get(&pair.sq.id).cloned().context("SQ")?;
        self.ring_wq(&sq, true);
        Ok(())
    }

    /// The MSI-X vector of the EQ `pair`'s queues report to.
    pub fn vector_of(&self, pair: &DrvQueuePair) -> u16 {
        self.eqs.get(&pair.eq).map_or(u16::MAX, |(vector, _)| *vector)
    }

    /// Frames received on RQ `rq_id` so far.
    pub fn received_on(&self, rq_id: u32) -> Vec<&RxFrame> {
        self.data.rx_frames.iter().filter(|f| f.rq == rq_id).collect()
    }

    /// `mana_cfg_vport_steering()` with everything spelled out: `table`
    /// (RX object handles) is sent when given, the key when given.
    pub fn steer(&mut self, steer: &Steer) -> Result<Vec<u8>> {
        let vport = self.vport_handle()?;
        let v7 = self.kernel == super::Kernel::V7_3;
        let n = steer.table.as_ref().map_or(64, Vec::len);
        let resp_size = if v7 { 40 } else { 32 };
        let mut req = vec![0u8; 120 + 8 * n];
        let mut s: CfgRxSteerReq = super::resp_as(&req);
        s.hdr = super::req_hdr(Command::MANA_CONFIG_VPORT_RX, req.len(), resp_size, super::mana_dev());
        s.hdr.req.msg_version = Le16::new(if v7 { 5 } else { 2 });
        if v7 {
            s.hdr.resp.msg_version = Le16::new(2);
            s.rss_hash_types = steer.hash_types.unwrap_or(NdisHashTypes::from_bits(Le16::new(0x3F)));
        } else if let Some(types) = steer.hash_types {
            s.rss_hash_types = types;
        }
        s.vport = Le64::new(vport);
        s.num_indir_entries = Le16::new(n as u16);
        s.indir_tab_offset = Le16::new(120);
        s.rx_enable = Le32::new(steer.rx.0);
        s.rss_enable = Le32::new(steer.rss.0);
        if let Some(obj) = steer.default_rxobj {
            s.update_default_rxobj = 1;
            s.default_rxobj = Le64::new(obj);
        }
        if let Some(key) = steer.key {
            s.update_hashkey = 1;
            s.hashkey = key;
        }
        if let Some(table) = &steer.table {
            s.update_indir_tab = 1;
            for (i, obj) in table.iter().enumerate() {
                req[120 + 8 * i..128 + 8 * i].copy_from_slice(&obj.to_le_bytes());
            }
        }
        req[..120].copy_from_slice(s.as_bytes());
        self.bnic_raw(req, resp_size)
    }
}

/// A MANA_CONFIG_VPORT_RX request.
#[derive(Debug, Clone)]
pub struct Steer {
    pub rx: TriState,
    pub rss: TriState,
    pub default_rxobj: Option<u64>,
    pub key: Option<[u8; 40]>,
    pub table: Option<Vec<u64>>,
    pub hash_types: Option<NdisHashTypes>,
}

impl Steer {
    /// What `mana_config_rss(apc, TRI_STATE_TRUE, true, true)` sends at
    /// open: RX and RSS on, default = RQ 0, the key, the default table
    /// (`ethtool_rxfh_indir_default()`: entry i → queue i % n) of 64 entries.
    pub fn open(rq_objs: &[u64]) -> Self {
        Self {
            rx: TriState::TRUE,
            rss: TriState::TRUE,
            default_rxobj: Some(rq_objs[0]),
            key: Some(MS_RSS_KEY),
            table: Some((0..64).map(|i| rq_objs[i % rq_objs.len()]).collect()),
            hash_types: None,
        }
    }
}
