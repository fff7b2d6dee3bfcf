//! The report's selftest items (`manarig.selftests=FILE,…`,
//! guest-images/README.md): how the remote end's setup went and each test
//! program's output and exit, as the agent printed them. The output is read
//! as KTAP by `manarig_selftests::selftests::ktap`; this module only collects it.

/// What `manarig.selftests` did (empty without it).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct GuestSelftests {
    /// `selftest-setup: <status>`: the exit status of the remote end's setup
    /// (0: the second NIC is in netns `remote` with its addresses, and the
    /// MANA netdev has its own), None when it did not run.
    /// (Its error lines are the report's `stderr selftest-setup: …`.)
    pub setup: Option<i32>,
    /// One entry per test program, in the order they ran.
    pub runs: Vec<GuestSelftestRun>,
    /// The MANA netdev's receive counters after the last test
    /// (`selftest-netdev`), None when the report has none.
    pub netdev: Option<NetdevRxCounters>,
    /// The remote end's counters after the last test, read inside its netns
    /// (`selftest-remote`), None when the report has none.
    pub remote: Option<RemoteCounters>,
    /// Both ends' counters at each `MANARIG-SELFTEST <k>` mark
    /// (`selftest-netdev-at <k>`, `selftest-remote-at <k>`), in the order
    /// their first line came: mark 0 before the first program, mark k after
    /// the k-th. Empty for an agent without marks.
    #[serde(default)]
    pub marks: Vec<SelftestMarkCounters>,
}

/// Both ends' counters as the agent read them just before it printed mark
/// `mark` (`MANARIG-SELFTEST <mark>`): since the probe, as
/// /sys/class/net/NETDEV/statistics has them then. A program's own counters
/// are the difference of its two marks.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct SelftestMarkCounters {
    /// The mark: 0 before the first program, k after the k-th.
    pub mark: u32,
    /// The MANA netdev's (`selftest-netdev-at <mark> <netdev>`), None when
    /// the report has no such line.
    pub netdev: Option<NetdevRxCounters>,
    /// The remote end's (`selftest-remote-at <mark> <netdev>`), None when
    /// the report has no such line.
    pub remote: Option<RemoteCounters>,
}

/// A netdev's counters as /sys/class/net/NETDEV/statistics has them (the
/// driver's `get_stats64` plus the core's own drops), since the probe:
/// `selftest-netdev <netdev>: rx_packets=N rx_dropped=N rx_missed_errors=N
/// tx_packets=N`. A counter the guest could not read (`-`, or a report of an
/// agent that did not print it) is None.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct NetdevRxCounters {
    /// The netdev (`eth0`).
    pub netdev: String,
    /// `rx_packets`: frames the driver passed up.
    pub packets: Option<u64>,
    /// `rx_dropped`: frames the driver dropped (mana: CQE_RX_TRUNCATED) or
    /// the core did (no handler for the protocol, a full backlog).
    pub dropped: Option<u64>,
    /// `rx_missed_errors`: frames the NIC missed, as the driver reports it.
    pub missed: Option<u64>,
    /// `tx_packets`: frames the driver handed to the NIC.
    #[serde(default)]
    pub tx_packets: Option<u64>,
}

impl NetdevRxCounters {
    /// One `selftest-netdev` line: `id` is the netdev, `value` the
    /// `NAME=VALUE` pairs (names it does not know are left out, so that the
    /// agent may add some).
    ///
    /// # Errors
    /// What is wrong, for the report's error: a pair without `=`, a value
    /// that is neither a number nor `-`.
    pub fn parse(id: &str, value: &str) -> Result<Self, String> {
        let mut c = NetdevRxCounters { netdev: id.to_owned(), ..NetdevRxCounters::default() };
        for (name, n) in counter_pairs(value)? {
            match name {
                "rx_packets" => c.packets = n,
                "rx_dropped" => c.dropped = n,
                "rx_missed_errors" => c.missed = n,
                "tx_packets" => c.tx_packets = n,
                _ => {}
            }
        }
        Ok(c)
    }
}

/// The `NAME=VALUE` pairs of a counters line, each value a number or `-`
/// (None: the guest could not read it).
///
/// # Errors
/// A pair without `=`, a value that is neither a number nor `-`.
fn counter_pairs(value: &str) -> Result<Vec<(&str, Option<u64>)>, String> {
    value
        .split_whitespace()
        .map(|pair| {
            let (name, n) = pair.split_once('=').ok_or_else(|| format!("{pair:?} is not NAME=VALUE"))?;
            let n = match n {
                "-" => None,
                n => Some(n.parse::<u64>().map_err(|_| format!("{name}: {n:?} is not a number"))?),
            };
            Ok((name, n))
        })
        .collect()
}

/// The remote end's counters, read inside its netns after the last test:
/// its NIC's (the virtio-net netdev the MANA's frames reach through the
/// rig's bridge) and its UDP stack's, IPv4 and IPv6 together
/// (`selftest-remote <netdev>: rx_packets=N rx_dropped=N rx_missed_errors=N
/// tx_packets=N udp_in=N udp_no_ports=N udp_in_errors=N`). A frame the MANA
/// sent that `rx_packets` counts reached the remote end; a UDP datagram that
/// came after its receiver closed counts in `udp_no_ports`.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct RemoteCounters {
    /// The remote NIC's counters (`netdev` is its name in the netns).
    pub nic: NetdevRxCounters,
    /// `InDatagrams` (Udp, Udp6): datagrams a socket took.
    pub udp_in: Option<u64>,
    /// `NoPorts`: datagrams for a port no socket was bound to.
    pub udp_no_ports: Option<u64>,
    /// `InErrors`: datagrams dropped for a bad checksum or a full receive buffer.
    pub udp_in_errors: Option<u64>,
}

impl RemoteCounters {
    /// One `selftest-remote` line: `id` is the remote netdev, `value` the
    /// `NAME=VALUE` pairs (names it does not know are left out).
    ///
    /// # Errors
    /// As [`NetdevRxCounters::parse`].
    pub fn parse(id: &str, value: &str) -> Result<Self, String> {
        let mut c = RemoteCounters { nic: NetdevRxCounters::parse(id, value)?, ..RemoteCounters::default() };
        for (name, n) in counter_pairs(value)? {
            match name {
                "udp_in" => c.udp_in = n,
                "udp_no_ports" => c.udp_no_ports = n,
                "udp_in_errors" => c.udp_in_errors = n,
                _ => {}
            }
        }
        Ok(c)
    }
}

/// One test program's run.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct GuestSelftestRun {
    /// The program, relative to drivers/net (`queues.py`, `hw/csum.py`).
    pub file: String,
    /// Its output (stdout and stderr, one line each: `selftest <file>: <line>`).
    pub output: Vec<String>,
    /// How it ended (`selftest-exit <file>: <status>|timeout <seconds>`), None
    /// when the report has no exit line for it.
    pub exit: Option<SelftestExit>,
    /// Guest seconds it took.
    pub seconds: Option<f64>,
}

/// How a test program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SelftestExit {
    /// It exited with this status (ksft: 0 all passed or skipped, 1 a failure,
    /// 4 its library could not be imported).
    Status(i32),
    /// The agent stopped it at `manarig.selftest_timeout`.
    Timeout,
}

impl GuestSelftests {
    /// The counters at mark `mark`.
    pub fn mark(&self, mark: u32) -> Option<&SelftestMarkCounters> {
        self.marks.iter().find(|m| m.mark == mark)
    }

    /// One `selftest-netdev-at` (`remote` false) or `selftest-remote-at`
    /// line: `id` is `<mark> <netdev>`, `value` the `NAME=VALUE` pairs.
    pub(super) fn mark_line(&mut self, remote: bool, id: &str, value: &str) -> Result<(), String> {
        let (mark, netdev) = id.split_once(' ').ok_or_else(|| format!("{id:?} is not `<mark> <netdev>`"))?;
        let mark = mark.parse().map_err(|_| format!("mark {mark:?} is not a number"))?;
        let at = match self.marks.iter().position(|m| m.mark == mark) {
            Some(i) => &mut self.marks[i],
            None => {
                self.marks.push(SelftestMarkCounters { mark, ..SelftestMarkCounters::default() });
                let last = self.marks.len() - 1;
                &mut self.marks[last]
            }
        };
        match remote {
            false => at.netdev = Some(NetdevRxCounters::parse(netdev, value)?),
            true => at.remote = Some(RemoteCounters::parse(netdev, value)?),
        }
        Ok(())
    }

    /// The run of `file`, made when its first line arrives.
    pub(super) fn run_mut(&mut self, file: &str) -> &mut GuestSelftestRun {
        if let Some(i) = self.runs.iter().position(|r| r.file == file) {
            return &mut self.runs[i];
        }
        self.runs.push(GuestSelftestRun { file: file.to_owned(), ..GuestSelftestRun::default() });
        let last = self.runs.len() - 1;
        &mut self.runs[last]
    }

    /// One `selftest-exit` value: `<status>|timeout <seconds>`.
    pub(super) fn exit_line(&mut self, file: &str, value: &str) -> Result<(), String> {
        let (status, seconds) = value.trim().split_once(' ').unwrap_or((value.trim(), "-"));
        let exit = match status {
            "timeout" => SelftestExit::Timeout,
            n => SelftestExit::Status(n.parse().map_err(|_| format!("exit status {n:?} is not a number"))?),
        };
        let run = self.run_mut(file);
        run.exit = Some(exit);
        run.seconds = seconds.trim().parse().ok();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{GuestSelftests, NetdevRxCounters, RemoteCounters};

    #[test]
    fn counters_at_marks_gather_both_ends_by_mark_and_refuse_a_line_without_one() {
        let mut g = GuestSelftests::default();
        g.mark_line(false, "0 eth0", "rx_packets=10 rx_dropped=0 rx_missed_errors=0 tx_packets=9").expect("netdev 0");
        g.mark_line(true, "0 eth1", "rx_packets=9 udp_in_errors=0").expect("remote 0");
        g.mark_line(false, "1 eth0", "rx_packets=30 rx_dropped=1 rx_missed_errors=0 tx_packets=25").expect("netdev 1");
        assert_eq!(g.marks.iter().map(|m| m.mark).collect::<Vec<_>>(), [0, 1]);
        let zero = g.mark(0).expect("mark 0");
        assert_eq!(zero.netdev.as_ref().and_then(|c| c.packets), Some(10));
        assert_eq!(zero.remote.as_ref().map(|r| (r.nic.netdev.as_str(), r.udp_in_errors)), Some(("eth1", Some(0))));
        let one = g.mark(1).expect("mark 1");
        assert_eq!((one.netdev.as_ref().and_then(|c| c.dropped), one.remote.is_none()), (Some(1), true));
        assert!(g.mark(2).is_none());
        assert!(g.mark_line(false, "eth0", "rx_packets=1").expect_err("no mark").contains("<mark> <netdev>"));
        assert!(g.mark_line(false, "x eth0", "rx_packets=1").expect_err("bad mark").contains("mark \"x\""));
        assert!(g.mark_line(true, "2 eth1", "rx_packets=y").expect_err("bad value").contains("rx_packets"));
    }

    #[test]
    fn netdev_counters_read_every_pair_and_dashes_as_unknown() {
        let c = NetdevRxCounters::parse("eth0", "rx_packets=1204 rx_dropped=0 rx_missed_errors=- rx_new=7")
            .expect("a line the agent prints");
        assert_eq!(
            c,
            NetdevRxCounters {
                netdev: "eth0".into(),
                packets: Some(1204),
                dropped: Some(0),
                missed: None,
                tx_packets: None
            }
        );
    }

    #[test]
    fn remote_counters_read_the_nic_and_udp_pairs() {
        let c = RemoteCounters::parse(
            "eth1",
            "rx_packets=500 rx_dropped=0 rx_missed_errors=- tx_packets=480 udp_in=300 udp_no_ports=40 udp_in_errors=-",
        )
        .expect("a line the agent prints");
        assert_eq!((c.nic.netdev.as_str(), c.nic.packets, c.nic.tx_packets), ("eth1", Some(500), Some(480)));
        assert_eq!((c.udp_in, c.udp_no_ports, c.udp_in_errors), (Some(300), Some(40), None));
        assert!(RemoteCounters::parse("eth1", "udp_no_ports=x").expect_err("not a number").contains("udp_no_ports"));
    }

    #[test]
    fn netdev_counters_refuse_a_pair_without_a_number() {
        let not_a_number = NetdevRxCounters::parse("eth0", "rx_dropped=many").expect_err("not a number");
        assert!(not_a_number.contains("rx_dropped"), "{not_a_number}");
        let no_pair = NetdevRxCounters::parse("eth0", "rx_dropped").expect_err("no `=`");
        assert!(no_pair.contains("NAME=VALUE"), "{no_pair}");
    }
}
