//! Where the frames between the MANA netdev and the remote end went in a
//! selftest run: over the whole run ([`RxAccount`], since the probe) and
//! per test program ([`ProgramRx`], the difference of the program's two
//! `MANARIG-SELFTEST` marks: the device's status the rig took at each, both
//! ends' counters the agent read just before it).
//!
//! The device's counters never restart (device-api `traffic::Totals`, kept
//! across queue teardown and resets). The guest's do: mana's `get_stats64`
//! sums `rx_packets` and `tx_packets` over the queues it has now
//! (drivers/net/ethernet/microsoft/mana/mana_en.c, `mana_get_stats64`,
//! 6.12.117 and 7.3.4), and each queue's stats start at zero when mana
//! creates it (`ip link set up`, `ethtool -L`, `ethtool -G`). So a guest
//! counter is a [`Delta`]: exact, or counted since it restarted (a lower
//! bound). A counter restarted when it went backwards, and `rx_packets` and
//! `tx_packets` also when the device created work queues
//! (`MANA_CREATE_WQ_OBJ`) between the marks, even if they went up.
//! `rx_dropped` (`ndev->stats` and the core's drops) and `rx_missed_errors`
//! (7.3: `hc_rx_discards_no_wqe`, the device's count as `MANA_QUERY_GF_STAT`
//! last gave it; 6.12: never set) live outside the queues.
//!
//! For a flaky entry's `needs = "no drops"` ([`ProgramRx::losses`]) a drop
//! counter that restarted in the program and counted 0 since is not a known
//! zero: frames may have been dropped before it restarted. The one exception
//! is eth0's `rx_missed_errors`, which counts the device's no-WQE discards:
//! when the device's own `no_wqe`, which never restarts and is not late,
//! was read, it speaks for those frames, and eth0's count (up to 2 s late
//! on 7.3, a program's drops can show in the next one's) is compared with
//! it instead ([`MissedCheck`], 7.x runs).

use super::selftest_missed::MissedCheck;
use crate::guest_protocol::{NetdevRxCounters, RemoteCounters, SelftestMarkCounters};
use mana_device_api::codes::Command;
use mana_device_api::snapshot::Counters;
use mana_device_api::traffic::Totals;
use serde::{Deserialize, Serialize};

/// Where the frames between the MANA netdev and the remote end went by the
/// end of the run (all of it, since the probe): the device's counters by
/// reason, from its status when the report began, the guest's own
/// (`selftest-netdev`), and the remote end's (`selftest-remote`: its NIC and
/// its UDP stack, inside its netns). The guest's `rx_packets` and
/// `tx_packets` count only since mana last created its queues.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RxAccount {
    /// The device's, None when its status at the report was not read.
    pub device: Option<DeviceRx>,
    /// The guest's, None when the report has no `selftest-netdev` line.
    pub guest: Option<NetdevRxCounters>,
    /// The remote end's, None when the report has no `selftest-remote` line.
    #[serde(default)]
    pub remote: Option<RemoteCounters>,
}

/// The device's received frames by what became of them (device-api
/// `traffic::Totals`, device-model `datapath::rx`), and those it sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DeviceRx {
    /// Written into an RQ buffer and completed with CQE_RX_OKAY.
    pub delivered: u64,
    /// Dropped: the RQ they were steered to had no WQE posted.
    pub no_wqe: u64,
    /// Dropped: the posted buffer could not take them (CQE_RX_TRUNCATED:
    /// too small or unusable; the driver counts these as `rx_dropped`).
    pub unusable_buffer: u64,
    /// Dropped: no RQ was chosen (vPort RX off, no RQ, a runt).
    pub unsteered: u64,
    /// Delivered, but their completion was lost to a full CQ backlog.
    pub cqe_lost: u64,
    /// Of `unsteered`, those that came while the driver had the port's RX
    /// off (before the first open, after a close): not lost by a receiving port.
    #[serde(default)]
    pub port_off: u64,
    /// Frames the device sent: handed to its packet backend (the TAP on the
    /// rig's bridge), one per TSO segment.
    #[serde(default)]
    pub sent: u64,
    /// Frames the device did not send: WQEs completed with an error CQE and
    /// frames the backend refused.
    #[serde(default)]
    pub tx_dropped: u64,
}

impl DeviceRx {
    /// From the device's totals.
    pub fn of(t: &Totals) -> Self {
        DeviceRx {
            delivered: t.rx.packets,
            no_wqe: t.rx_no_wqe,
            unusable_buffer: t.rx.drops.saturating_sub(t.rx_no_wqe),
            unsteered: t.rx_unsteered,
            cqe_lost: t.rx_cqe_lost,
            port_off: t.rx_port_off,
            sent: t.tx.packets,
            tx_dropped: t.tx.drops,
        }
    }

    /// What the device counted after `earlier` (its counters never restart).
    pub fn since(&self, earlier: &DeviceRx) -> DeviceRx {
        DeviceRx {
            delivered: self.delivered.saturating_sub(earlier.delivered),
            no_wqe: self.no_wqe.saturating_sub(earlier.no_wqe),
            unusable_buffer: self.unusable_buffer.saturating_sub(earlier.unusable_buffer),
            unsteered: self.unsteered.saturating_sub(earlier.unsteered),
            cqe_lost: self.cqe_lost.saturating_sub(earlier.cqe_lost),
            port_off: self.port_off.saturating_sub(earlier.port_off),
            sent: self.sent.saturating_sub(earlier.sent),
            tx_dropped: self.tx_dropped.saturating_sub(earlier.tx_dropped),
        }
    }

    /// Frames the device dropped, for any reason.
    pub fn dropped(&self) -> u64 {
        self.no_wqe + self.unusable_buffer + self.unsteered
    }

    /// Frames that found no RQ although the port was receiving (RX on, no
    /// RQ for them, or runts): `unsteered` without `port_off`.
    pub fn no_rq(&self) -> u64 {
        self.unsteered.saturating_sub(self.port_off)
    }

    /// The counters that show a lost frame, each named with its count
    /// (`device: no WQE posted 3`). Frames the device dropped while the
    /// driver had the port's RX off are not losses: no test's traffic is
    /// meant to cross a closed port.
    fn losses(&self) -> Vec<String> {
        [
            ("no WQE posted", self.no_wqe),
            ("unusable buffer", self.unusable_buffer),
            ("no RQ chosen on a receiving port", self.no_rq()),
            ("RX completions lost", self.cqe_lost),
            ("not sent", self.tx_dropped),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(what, n)| format!("device: {what} {n}"))
        .collect()
    }
}

/// The device's state at one `MANARIG-SELFTEST` mark, from its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeviceMark {
    /// Its frames since power-on.
    pub rx: DeviceRx,
    /// `MANA_CREATE_WQ_OBJ` requests it handled since power-on: one per SQ
    /// and RQ the driver created.
    pub queues_created: u64,
    /// `MANA_QUERY_GF_STAT` requests it answered since power-on: the
    /// driver's refreshes of the counters eth0's `rx_missed_errors` shows.
    pub gf_stat_queries: u64,
}

impl DeviceMark {
    /// From the device's counters (its status's `core.counters`).
    pub fn of(c: &Counters) -> Self {
        let handled = |command: Command| c.commands.get(command.name().unwrap_or_default()).copied().unwrap_or(0);
        DeviceMark {
            rx: DeviceRx::of(&c.traffic),
            queues_created: handled(Command::MANA_CREATE_WQ_OBJ),
            gf_stat_queries: handled(Command::MANA_QUERY_GF_STAT),
        }
    }
}

/// A counter's change between two readings: `n` exactly, or, when `reset`,
/// `n` counted since it restarted in between (a lower bound of the change).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    /// The change, or the count since the restart.
    pub n: u64,
    /// The counter restarted between the readings (it went backwards, or
    /// what it counts was re-created).
    pub reset: bool,
}

impl Delta {
    /// The change from `before` to `after`; `restarted`: the counter is
    /// known to have restarted in between even if it went up. None when a
    /// reading is unknown.
    pub fn between(before: Option<u64>, after: Option<u64>, restarted: bool) -> Option<Delta> {
        let (before, after) = (before?, after?);
        Some(match after.checked_sub(before) {
            Some(n) if !restarted => Delta { n, reset: false },
            _ => Delta { n: after, reset: true },
        })
    }

    /// `3`, or `≥3 since a restart`.
    pub fn text(d: Option<Delta>) -> String {
        match d {
            None => "-".to_owned(),
            Some(Delta { n, reset: false }) => n.to_string(),
            Some(Delta { n, reset: true }) => format!("≥{n} since a restart"),
        }
    }
}

/// A netdev's counters over one test program ([`NetdevRxCounters`]'
/// fields as [`Delta`]s).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NetdevDelta {
    /// The netdev (`eth0`, the remote's `eth1`).
    pub netdev: String,
    /// `rx_packets`.
    pub packets: Option<Delta>,
    /// `rx_dropped`.
    pub dropped: Option<Delta>,
    /// `rx_missed_errors`.
    pub missed: Option<Delta>,
    /// `tx_packets`.
    pub tx_packets: Option<Delta>,
}

impl NetdevDelta {
    /// From two readings; `queues_restarted`: `rx_packets` and `tx_packets`
    /// restarted in between (they sum per-queue stats).
    fn between(before: &NetdevRxCounters, after: &NetdevRxCounters, queues_restarted: bool) -> Self {
        NetdevDelta {
            netdev: after.netdev.clone(),
            packets: Delta::between(before.packets, after.packets, queues_restarted),
            dropped: Delta::between(before.dropped, after.dropped, false),
            missed: Delta::between(before.missed, after.missed, false),
            tx_packets: Delta::between(before.tx_packets, after.tx_packets, queues_restarted),
        }
    }
}

/// The remote end's counters over one test program.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RemoteDelta {
    /// Its NIC's.
    pub nic: NetdevDelta,
    /// UDP `InDatagrams`.
    pub udp_in: Option<Delta>,
    /// UDP `NoPorts`.
    pub udp_no_ports: Option<Delta>,
    /// UDP `InErrors`.
    pub udp_in_errors: Option<Delta>,
}

impl RemoteDelta {
    fn between(before: &RemoteCounters, after: &RemoteCounters) -> Self {
        RemoteDelta {
            nic: NetdevDelta::between(&before.nic, &after.nic, false),
            udp_in: Delta::between(before.udp_in, after.udp_in, false),
            udp_no_ports: Delta::between(before.udp_no_ports, after.udp_no_ports, false),
            udp_in_errors: Delta::between(before.udp_in_errors, after.udp_in_errors, false),
        }
    }
}

/// One test program's frames: the difference of its marks (`from`: the one
/// before it, `to`: the one after).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProgramRx {
    /// The mark before the program.
    pub from: u32,
    /// The mark after it.
    pub to: u32,
    /// The device's (exact: its counters never restart), None when its
    /// status was not read at both marks.
    pub device: Option<DeviceRx>,
    /// Work queues the driver created in between (`MANA_CREATE_WQ_OBJ`;
    /// more than 0: eth0's `rx_packets` and `tx_packets` restarted), None
    /// when the device's status was not read at both marks.
    pub queues_created: Option<u64>,
    /// The MANA netdev's, None when the report has its counters at neither
    /// or only one of the marks.
    pub guest: Option<NetdevDelta>,
    /// The remote end's, likewise.
    pub remote: Option<RemoteDelta>,
    /// eth0's `rx_missed_errors` at mark `to` against the device's no-WQE
    /// drops; None unless the kernel reports them there (7.x) and both
    /// readings were taken.
    #[serde(default)]
    pub missed: Option<MissedCheck>,
}

impl ProgramRx {
    /// The program between marks `from` and `to`: the guest's counters at
    /// each (`guest`, the report's) and the device's (`device`, the rig's;
    /// None: its status was not read). `missed_is_no_wqe`: the guest's
    /// kernel reports the device's no-WQE drops as `rx_missed_errors`
    /// (7.x), which [`ProgramRx::missed`] then compares.
    pub fn between(
        (from, to): (u32, u32),
        guest: (Option<&SelftestMarkCounters>, Option<&SelftestMarkCounters>),
        device: (Option<&DeviceMark>, Option<&DeviceMark>),
        missed_is_no_wqe: bool,
    ) -> ProgramRx {
        let missed = match (device, guest.1.and_then(|m| m.netdev.as_ref()?.missed)) {
            ((Some(a), Some(b)), Some(missed)) if missed_is_no_wqe => {
                Some(MissedCheck::new(missed, (a.rx.no_wqe, b.rx.no_wqe), (a.gf_stat_queries, b.gf_stat_queries)))
            }
            _ => None,
        };
        let (device, queues_created) = match device {
            (Some(a), Some(b)) => (Some(b.rx.since(&a.rx)), Some(b.queues_created.saturating_sub(a.queues_created))),
            _ => (None, None),
        };
        // Without the device's count, a queue re-creation cannot be ruled out.
        let queues_restarted = queues_created != Some(0);
        let (a, b) = guest;
        let pair = |f: fn(&SelftestMarkCounters) -> bool| a.zip(b).filter(|(a, b)| f(a) && f(b));
        let guest = pair(|m| m.netdev.is_some())
            .and_then(|(a, b)| Some(NetdevDelta::between(a.netdev.as_ref()?, b.netdev.as_ref()?, queues_restarted)));
        let remote = pair(|m| m.remote.is_some())
            .and_then(|(a, b)| Some(RemoteDelta::between(a.remote.as_ref()?, b.remote.as_ref()?)));
        ProgramRx { from, to, device, queues_created, guest, remote, missed }
    }

    /// The counters that show a frame between the MANA and the remote end
    /// was lost in this program, or that cannot show none, each named with
    /// its count (`device: no WQE posted 3`, `guest eth0: rx_dropped ≥2
    /// since a restart`); empty when every one was read and did not move.
    /// A drop counter that restarted and counted 0 since is not a known
    /// zero. eth0's `rx_missed_errors` counts the device's `no_wqe` frames,
    /// late: when the device's count is known it speaks for them alone.
    pub fn losses(&self) -> Vec<String> {
        let mut out = match &self.device {
            None => vec![format!("device: its counters were not read at marks {} and {}", self.from, self.to)],
            Some(d) => d.losses(),
        };
        let marks = format!("at marks {} and {}", self.from, self.to);
        match &self.guest {
            None => out.push(format!("guest: no counters {marks}")),
            Some(g) => {
                let side = format!("guest {}", g.netdev);
                out.extend(drop_loss(&side, "rx_dropped", g.dropped));
                if self.device.is_none() {
                    out.extend(drop_loss(&side, "rx_missed_errors", g.missed));
                }
            }
        }
        match &self.remote {
            None => out.push(format!("remote: no counters {marks}")),
            Some(r) => {
                let side = format!("remote {}", r.nic.netdev);
                for (what, d) in [
                    ("rx_dropped", r.nic.dropped),
                    ("rx_missed_errors", r.nic.missed),
                    ("UDP InErrors", r.udp_in_errors),
                ] {
                    out.extend(drop_loss(&side, what, d));
                }
            }
        }
        out
    }
}

/// A drop counter's loss over a program, if it shows one or cannot show none.
fn drop_loss(side: &str, what: &str, d: Option<Delta>) -> Option<String> {
    match d {
        None => Some(format!("{side}: {what} unknown")),
        Some(Delta { n: 0, reset: false }) => None,
        Some(Delta { n: 0, reset: true }) => Some(format!("{side}: {what} restarted, 0 since: not a known zero")),
        Some(d) => Some(format!("{side}: {what} {}", Delta::text(Some(d)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn netdev(name: &str, packets: u64, dropped: u64, missed: u64, tx: u64) -> NetdevRxCounters {
        NetdevRxCounters {
            netdev: name.into(),
            packets: Some(packets),
            dropped: Some(dropped),
            missed: Some(missed),
            tx_packets: Some(tx),
        }
    }

    fn remote(packets: u64, dropped: u64, udp_in_errors: u64) -> RemoteCounters {
        RemoteCounters {
            nic: netdev("eth1", packets, dropped, 0, packets),
            udp_in: Some(10),
            udp_no_ports: Some(0),
            udp_in_errors: Some(udp_in_errors),
        }
    }

    fn mark(k: u32, eth0: NetdevRxCounters, eth1: RemoteCounters) -> SelftestMarkCounters {
        SelftestMarkCounters { mark: k, netdev: Some(eth0), remote: Some(eth1) }
    }

    fn device(delivered: u64, no_wqe: u64, queues_created: u64) -> DeviceMark {
        DeviceMark {
            rx: DeviceRx { delivered, no_wqe, sent: delivered, ..DeviceRx::default() },
            queues_created,
            gf_stat_queries: 0,
        }
    }

    #[test]
    fn a_counter_that_went_up_changed_by_the_difference_and_one_that_went_back_restarted() {
        assert_eq!(Delta::between(Some(10), Some(25), false), Some(Delta { n: 15, reset: false }));
        assert_eq!(Delta::between(Some(900), Some(40), false), Some(Delta { n: 40, reset: true }));
        assert_eq!(Delta::between(Some(10), Some(25), true), Some(Delta { n: 25, reset: true }));
        assert_eq!(Delta::between(None, Some(25), false), None);
        assert_eq!(Delta::text(Delta::between(Some(900), Some(40), false)), "≥40 since a restart");
        assert_eq!(Delta::text(None), "-");
    }

    #[test]
    fn a_program_counts_the_difference_of_its_marks_on_all_three() {
        let a = mark(2, netdev("eth0", 100, 1, 0, 90), remote(95, 0, 0));
        let b = mark(3, netdev("eth0", 400, 1, 0, 350), remote(360, 0, 0));
        let rx = ProgramRx::between(
            (2, 3),
            (Some(&a), Some(&b)),
            (Some(&device(120, 4, 8)), Some(&device(420, 4, 8))),
            false,
        );
        assert_eq!(rx.device.map(|d| (d.delivered, d.no_wqe, d.sent)), Some((300, 0, 300)));
        assert_eq!(rx.queues_created, Some(0));
        let g = rx.guest.as_ref().expect("eth0 at both marks");
        assert_eq!(
            (g.packets, g.tx_packets),
            (Some(Delta { n: 300, reset: false }), Some(Delta { n: 260, reset: false }))
        );
        assert_eq!(rx.remote.as_ref().and_then(|r| r.nic.packets), Some(Delta { n: 265, reset: false }));
        assert!(rx.losses().is_empty(), "{:?}", rx.losses());
    }

    #[test]
    fn queues_created_between_the_marks_restart_eth0s_packet_counts_but_not_its_drops() {
        // `ethtool -L` in the program: 8 new queues; eth0 counted 50 frames since,
        // more than the 40 it had: no decrease shows the restart, the device does.
        let a = mark(0, netdev("eth0", 40, 2, 0, 30), remote(35, 0, 0));
        let b = mark(1, netdev("eth0", 50, 2, 0, 45), remote(90, 0, 0));
        let rx = ProgramRx::between(
            (0, 1),
            (Some(&a), Some(&b)),
            (Some(&device(40, 0, 8)), Some(&device(100, 0, 16))),
            false,
        );
        let g = rx.guest.as_ref().expect("eth0");
        assert_eq!(rx.queues_created, Some(8));
        assert_eq!((g.packets, g.tx_packets), (Some(Delta { n: 50, reset: true }), Some(Delta { n: 45, reset: true })));
        assert_eq!(g.dropped, Some(Delta { n: 0, reset: false }), "rx_dropped lives outside the queues");
        assert!(rx.losses().is_empty(), "{:?}", rx.losses());
    }

    #[test]
    fn a_drop_counter_that_restarted_is_a_known_zero_only_when_the_device_covers_its_frames() {
        // eth0's rx_missed_errors went back (a re-read of the device's count)
        // and the remote's rx_dropped too.
        let a = mark(4, netdev("eth0", 10, 0, 7, 10), remote(10, 3, 0));
        let b = mark(5, netdev("eth0", 20, 0, 0, 20), remote(20, 0, 0));
        let rx =
            ProgramRx::between((4, 5), (Some(&a), Some(&b)), (Some(&device(10, 0, 0)), Some(&device(20, 0, 0))), false);
        assert_eq!(rx.losses(), ["remote eth1: rx_dropped restarted, 0 since: not a known zero"]);
        // Without the device's counters, eth0's restarted rx_missed_errors is no zero either.
        let rx = ProgramRx::between((4, 5), (Some(&a), Some(&b)), (None, Some(&device(20, 0, 0))), false);
        assert_eq!(
            rx.losses(),
            [
                "device: its counters were not read at marks 4 and 5",
                "guest eth0: rx_missed_errors restarted, 0 since: not a known zero",
                "remote eth1: rx_dropped restarted, 0 since: not a known zero",
            ]
        );
        assert_eq!(rx.guest.and_then(|g| g.packets), Some(Delta { n: 20, reset: true }), "queue re-creation unknown");
    }

    #[test]
    fn eth0s_late_missed_count_is_no_loss_of_the_next_program_and_is_checked_against_the_device_on_7x() {
        // The previous program dropped 40 frames for want of a WQE; eth0
        // showed them only after mark 6 (the driver refreshes every 2 s).
        let a = mark(6, netdev("eth0", 10, 0, 0, 10), remote(10, 0, 0));
        let b = mark(7, netdev("eth0", 20, 0, 40, 20), remote(20, 0, 0));
        let (mut d6, mut d7) = (device(10, 40, 0), device(20, 40, 0));
        (d6.gf_stat_queries, d7.gf_stat_queries) = (10, 14);
        let rx = ProgramRx::between((6, 7), (Some(&a), Some(&b)), (Some(&d6), Some(&d7)), true);
        assert!(rx.losses().is_empty(), "{:?}", rx.losses());
        let missed = rx.missed.expect("7.x, both marks read");
        assert_eq!((missed.guest, missed.device_before, missed.device, missed.refreshed), (40, 40, 40, true));
        assert!(missed.holds());
        // 6.12 never sets rx_missed_errors: nothing to compare.
        assert_eq!(ProgramRx::between((6, 7), (Some(&a), Some(&b)), (Some(&d6), Some(&d7)), false).missed, None);
        assert_eq!(DeviceMark::of(&Counters::default()).gf_stat_queries, 0);
    }

    #[test]
    fn losses_name_each_side_by_reason_and_missing_marks() {
        let a = mark(0, netdev("eth0", 10, 0, 0, 10), remote(10, 0, 1));
        let b = mark(1, netdev("eth0", 20, 3, 0, 20), remote(20, 0, 4));
        let mut d1 = device(20, 5, 0);
        d1.rx.unsteered = 2;
        d1.rx.port_off = 1;
        let rx = ProgramRx::between((0, 1), (Some(&a), Some(&b)), (Some(&device(10, 1, 0)), Some(&d1)), false);
        assert_eq!(
            rx.losses(),
            [
                "device: no WQE posted 4",
                "device: no RQ chosen on a receiving port 1",
                "guest eth0: rx_dropped 3",
                "remote eth1: UDP InErrors 3"
            ]
        );
        let only_eth0 = SelftestMarkCounters { mark: 1, netdev: b.netdev.clone(), remote: None };
        let rx = ProgramRx::between(
            (0, 1),
            (Some(&a), Some(&only_eth0)),
            (Some(&device(10, 0, 0)), Some(&device(20, 0, 0))),
            false,
        );
        assert_eq!(rx.losses(), ["guest eth0: rx_dropped 3", "remote: no counters at marks 0 and 1"]);
        let rx =
            ProgramRx::between((0, 1), (Some(&a), None), (Some(&device(10, 0, 0)), Some(&device(20, 0, 0))), false);
        assert_eq!(rx.losses(), ["guest: no counters at marks 0 and 1", "remote: no counters at marks 0 and 1"]);
    }

    #[test]
    fn the_device_mark_counts_queue_creations_by_the_command_name() {
        let mut c = Counters::default();
        c.commands.insert("MANA_CREATE_WQ_OBJ".into(), 16);
        c.commands.insert("MANA_DESTROY_WQ_OBJ".into(), 8);
        c.traffic.rx.packets = 77;
        c.traffic.rx_no_wqe = 3;
        c.traffic.rx.drops = 3;
        let m = DeviceMark::of(&c);
        assert_eq!((m.queues_created, m.rx.delivered, m.rx.no_wqe, m.rx.unusable_buffer), (16, 77, 3, 0));
        assert_eq!(DeviceMark::of(&Counters::default()).queues_created, 0);
    }
}
