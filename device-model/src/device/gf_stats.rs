//! MANA_QUERY_GF_STAT: the GDMA function's traffic counters, as
//! `mana_query_gf_stats()` asks for them (drivers/net/ethernet/microsoft/mana/
//! mana_en.c: Linux 6.1.192 and 6.12.117 at each `ethtool -S`, 7.3.4 every
//! 2 s from `mana_gf_stats_work_handler()`).
//!
//! The counters come from the device's totals (device-api
//! `traffic::Totals`, [`crate::datapath`]), which never restart, as a real
//! function's do not across the driver's resets. What the device counts:
//! - `rx_discards_nowqe`: frames steered to an RQ with no WQE posted
//!   (`Totals::rx_no_wqe`; 7.3 shows it as eth0's `rx_missed_errors`);
//! - `rx_err_vport_disabled`: frames for a vPort whose RX the driver had
//!   not turned on, or had turned off (`Totals::rx_port_off`);
//! - `hc_rx_bytes`, `hc_tx_bytes` and the unicast / multicast / broadcast
//!   split of frames and bytes (`Totals::rx`, `tx`, `rx_by_destination`,
//!   `tx_by_destination`): frames written into RQ buffers and frames handed
//!   to the packet backend, without FCS.
//!
//! The `tx_err_*` counters stay 0 and out of `reported_stats`: the device
//! enforces no VLAN, EtherType, source MAC or protection-domain policy and
//! has no notion of a disabled function; the WQEs it cannot send (longer
//! than the MTU, a bad OOB or vPort offset) complete with an error CQE,
//! which the driver counts as `tx_cqe_err`, and the device counts them all
//! together (`Totals::tx.errors`), not by kind.
#![forbid(unsafe_code)]

use crate::defs::{GfStatFlags, Le64, QueryGfStatReq, QueryGfStatResp};
use mana_device_api::traffic::Totals;
use zerocopy::FromZeros;

/// The counters the device fills ([`gf_stats`] fills these when asked).
pub fn counted() -> GfStatFlags {
    GfStatFlags::new()
        .with_rx_discards_no_wqe(true)
        .with_rx_errors_vport_disabled(true)
        .with_hc_rx_bytes(true)
        .with_hc_rx_ucast_packets(true)
        .with_hc_rx_ucast_bytes(true)
        .with_hc_rx_mcast_packets(true)
        .with_hc_rx_mcast_bytes(true)
        .with_hc_rx_bcast_packets(true)
        .with_hc_rx_bcast_bytes(true)
        .with_hc_tx_bytes(true)
        .with_hc_tx_ucast_packets(true)
        .with_hc_tx_ucast_bytes(true)
        .with_hc_tx_mcast_packets(true)
        .with_hc_tx_mcast_bytes(true)
        .with_hc_tx_bcast_packets(true)
        .with_hc_tx_bcast_bytes(true)
}

/// The response to `req`: each counter the device counts and `req` asks
/// for, from `totals`; `reported_stats` names them. The header is left
/// zero (the framing fills it).
pub fn gf_stats(req: &QueryGfStatReq, totals: &Totals) -> QueryGfStatResp {
    let asked = req.req_stats;
    let reported = GfStatFlags::from_bits(counted().into_bits() & asked.into_bits());
    let (rx, tx) = (&totals.rx_by_destination, &totals.tx_by_destination);
    let value = |wanted: bool, n: u64| Le64::new(if wanted { n } else { 0 });
    let r = reported;
    QueryGfStatResp {
        reported_stats: reported,
        rx_discards_nowqe: value(r.rx_discards_no_wqe(), totals.rx_no_wqe),
        rx_err_vport_disabled: value(r.rx_errors_vport_disabled(), totals.rx_port_off),
        hc_rx_bytes: value(r.hc_rx_bytes(), totals.rx.bytes),
        hc_rx_ucast_pkts: value(r.hc_rx_ucast_packets(), rx.unicast.packets),
        hc_rx_ucast_bytes: value(r.hc_rx_ucast_bytes(), rx.unicast.bytes),
        hc_rx_bcast_pkts: value(r.hc_rx_bcast_packets(), rx.broadcast.packets),
        hc_rx_bcast_bytes: value(r.hc_rx_bcast_bytes(), rx.broadcast.bytes),
        hc_rx_mcast_pkts: value(r.hc_rx_mcast_packets(), rx.multicast.packets),
        hc_rx_mcast_bytes: value(r.hc_rx_mcast_bytes(), rx.multicast.bytes),
        hc_tx_bytes: value(r.hc_tx_bytes(), totals.tx.bytes),
        hc_tx_ucast_pkts: value(r.hc_tx_ucast_packets(), tx.unicast.packets),
        hc_tx_ucast_bytes: value(r.hc_tx_ucast_bytes(), tx.unicast.bytes),
        hc_tx_bcast_pkts: value(r.hc_tx_bcast_packets(), tx.broadcast.packets),
        hc_tx_bcast_bytes: value(r.hc_tx_bcast_bytes(), tx.broadcast.bytes),
        hc_tx_mcast_pkts: value(r.hc_tx_mcast_packets(), tx.multicast.packets),
        hc_tx_mcast_bytes: value(r.hc_tx_mcast_bytes(), tx.multicast.bytes),
        ..QueryGfStatResp::new_zeroed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mana_device_api::traffic::{ByDestination, FrameCount, Traffic};

    fn totals() -> Totals {
        let by = |u: u64, m: u64, b: u64| ByDestination {
            unicast: FrameCount { packets: u, bytes: 100 * u },
            multicast: FrameCount { packets: m, bytes: 100 * m },
            broadcast: FrameCount { packets: b, bytes: 100 * b },
        };
        Totals {
            rx: Traffic { packets: 10, bytes: 1000, drops: 9, errors: 1 },
            tx: Traffic { packets: 6, bytes: 600, drops: 2, errors: 2 },
            rx_no_wqe: 8,
            rx_port_off: 3,
            rx_unsteered: 5,
            rx_by_destination: by(7, 2, 1),
            tx_by_destination: by(4, 0, 2),
            ..Totals::default()
        }
    }

    #[test]
    fn the_reported_bits_are_the_statistics_flags_of_the_counters_the_device_keeps() {
        // STATISTICS_FLAGS_* (include/net/mana/mana.h, 7.3.4): bits 0-8 the RX
        // counters, 19-25 the TX bytes and packets; 9-18 and 26 the TX errors.
        assert_eq!(counted().into_bits().get(), 0x1ff | 0x3f8_0000);
        let every =
            QueryGfStatReq { req_stats: GfStatFlags::from_bits(Le64::new((1 << 27) - 1)), ..Default::default() };
        let resp = gf_stats(&every, &totals());
        assert_eq!(resp.reported_stats.into_bits().get(), counted().into_bits().get());
        let got = [
            resp.rx_discards_nowqe,
            resp.rx_err_vport_disabled,
            resp.hc_rx_bytes,
            resp.hc_rx_ucast_pkts,
            resp.hc_rx_ucast_bytes,
            resp.hc_rx_bcast_pkts,
            resp.hc_rx_bcast_bytes,
            resp.hc_rx_mcast_pkts,
            resp.hc_rx_mcast_bytes,
            resp.hc_tx_bytes,
            resp.hc_tx_ucast_pkts,
            resp.hc_tx_ucast_bytes,
            resp.hc_tx_bcast_pkts,
            resp.hc_tx_bcast_bytes,
            resp.hc_tx_mcast_pkts,
            resp.hc_tx_mcast_bytes,
        ]
        .map(Le64::get);
        assert_eq!(got, [8, 3, 1000, 7, 700, 1, 100, 2, 200, 600, 4, 400, 2, 200, 0, 0]);
        assert_eq!((resp.tx_err_inval_oob.get(), resp.tx_err_gdma.get()), (0, 0), "not a notion of the device");
    }

    #[test]
    fn counters_not_asked_for_stay_zero_and_unreported() {
        let only_no_wqe = QueryGfStatReq {
            req_stats: GfStatFlags::new().with_rx_discards_no_wqe(true).with_tx_errors_gdma_error(true),
            ..Default::default()
        };
        let resp = gf_stats(&only_no_wqe, &totals());
        assert_eq!(resp.reported_stats.into_bits().get(), 1);
        assert_eq!((resp.rx_discards_nowqe.get(), resp.hc_rx_bytes.get(), resp.hc_tx_bytes.get()), (8, 0, 0));
    }
}
