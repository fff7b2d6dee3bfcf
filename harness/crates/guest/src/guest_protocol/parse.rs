//! The agent's output (the console, or the report channel) → [`Transcript`]:
//! the markers ([`super::markers`]), the version check, and one item per line
//! (guest-images/README.md, "Report lines").

use super::assemble::{assemble, bad, Raw};
use super::interrupts::{parse_cpu_counts, parse_irq_counts};
use super::irqbalance::{IrqbalanceSample, IrqbalanceState};
use super::markers::{Marker, Version, REPORT_END, STAGE_END};
use super::report::{GuestReport, Stage, Transcript, Unload, UnloadHandshake};
use super::selftests::{NetdevRxCounters, RemoteCounters};
use super::soak::{SoakRound, SoakStepResult};
use super::ReportError;

/// The key of a report line: the word before `: ` (`kernel: …`), before the
/// line's id (`time init: …`, `f <path>: …`, `stderr ethtool: …`), or `link`
/// (`link <path>`, no colon).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// `kernel: <uname -r>`.
    Kernel,
    /// `cmdline: </proc/cmdline>`.
    Cmdline,
    /// `initenv: <NAME=VALUE>`: an entry of `/proc/1/environ` (a new key: older agents
    /// do not print it).
    InitEnv,
    /// `time <milestone>: <guest uptime s or ->`.
    Time,
    /// `load: mana|none`.
    Load,
    /// `settle: none | deadline | probe-returned fired=yes|no`.
    Settle,
    /// `insmod: <exit status or ->`.
    Insmod,
    /// `carrier: <1|0|->`.
    Carrier,
    /// From version 3 (a new key: older agents do not print it):
    /// `carrier-unload: <1|0|->`, the carrier again just before the final
    /// `rmmod mana` of a run with fault injection.
    CarrierUnload,
    /// `ethtool: <exit status or ->`.
    Ethtool,
    /// `channels: <combined channels or ->`.
    Channels,
    /// `netdev: <interface or ->`.
    Netdev,
    /// `rmmod: <exit status or ->`.
    Rmmod,
    /// `hotplug: <0|1|->` (a new key: older agents do not print it).
    Hotplug,
    /// `stderr <tool>: <line>`.
    Stderr,
    /// `f <path>: <line of the file>`.
    File,
    /// `link <path>` (a CPU's `nodeN` link).
    Link,
    /// `nic: <BDF> | none` (one line per NIC).
    Nic,
    /// `irqcount: IRQ CPU=COUNT,… | CHIP HWIRQ NAME`.
    IrqCount,
    /// `seen: <irqcount form>`.
    Seen,
    /// `dmesg: <line>`.
    Dmesg,
    /// `warning: <line>`.
    Warning,
    /// Version 1 only: `interrupts-header: CPU0 CPU1 …`.
    InterruptsHeader,
    /// Version 1 only: `interrupts: <raw /proc/interrupts line>`.
    Interrupts,
    /// From version 3: `addr: <exit status of ip addr add or ->`.
    Addr,
    /// From version 3: `ping: <exit status or -> [<ping's summary line>]`.
    Ping,
    /// From version 3: `traffic: <exit status of manarig-flows guest or ->`.
    Traffic,
    /// From version 3: `traffic-irq <before|after>: <irqcount form>`.
    TrafficIrq,
    /// From version 3: `traffic-softirq <before|after> <NET_RX|NET_TX>: CPU=COUNT,…`.
    TrafficSoftirq,
    /// From version 3: `traffic-stats <before|after>: NAME=VALUE …` (`ethtool -S`).
    TrafficStats,
    /// With `manarig.debug=1`: `debug: kmemleak=<scan points|absent>`.
    Debug,
    /// With `manarig.debug=1`: `kmemleak: <line of /sys/kernel/debug/kmemleak>`.
    Kmemleak,
    /// With `manarig.debug=1`: `klog: <kernel log line of a KASAN, lockdep, WARN or BUG report>`.
    Klog,
    /// From version 3: `unload: <exit status of the final rmmod | hung | ->`.
    Unload,
    /// `unload-handshake: go | timeout | -` (a new key: older agents do not
    /// print it): whether the host's go-ahead came at the final unload's mark.
    UnloadHandshake,
    /// With `manarig.irqbalance=S`: `irqbalance: stopped | killed | exited <rc> | absent | -`.
    Irqbalance,
    /// With `manarig.irqbalance=S`: `irqbalance-sample <k>: <uptime> <IRQ>=<smp>/<effective> …`.
    IrqbalanceSample,
    /// With `manarig.selftests`: `selftest-setup: <exit status of the remote end's setup>`.
    SelftestSetup,
    /// With `manarig.selftests`: `selftest <file>: <a line of the test's output>`.
    Selftest,
    /// With `manarig.selftests`: `selftest-exit <file>: <status>|timeout <guest seconds>`.
    SelftestExit,
    /// With `manarig.selftests`: `selftest-netdev <netdev>: rx_packets=N rx_dropped=N rx_missed_errors=N tx_packets=N`.
    SelftestNetdev,
    /// With `manarig.selftests`: `selftest-remote <netdev>: rx_packets=N … udp_no_ports=N udp_in_errors=N`.
    SelftestRemote,
    /// With `manarig.selftests` (a new key: older agents do not print it):
    /// `selftest-netdev-at <mark> <netdev>: <selftest-netdev's pairs>`, read
    /// just before `MANARIG-SELFTEST <mark>`.
    SelftestNetdevAt,
    /// With `manarig.selftests` (a new key): `selftest-remote-at <mark>
    /// <netdev>: <selftest-remote's pairs>`, read just before `MANARIG-SELFTEST <mark>`.
    SelftestRemoteAt,
    /// With `manarig.soak`: `soak <minute> <step>: <status|-> <uptime> <detail|->`.
    Soak,
    /// With `manarig.soak`: `soak-round <n>: <status> <uptime>`.
    SoakRound,
}

impl Key {
    /// Every key, in the order guest-images/README.md lists them.
    pub const ALL: [Key; 46] = [
        Key::Kernel,
        Key::Cmdline,
        Key::InitEnv,
        Key::Time,
        Key::Load,
        Key::Settle,
        Key::Insmod,
        Key::Carrier,
        Key::Ethtool,
        Key::Channels,
        Key::Netdev,
        Key::Rmmod,
        Key::Hotplug,
        Key::Stderr,
        Key::File,
        Key::Link,
        Key::Nic,
        Key::IrqCount,
        Key::Seen,
        Key::Dmesg,
        Key::Warning,
        Key::InterruptsHeader,
        Key::Interrupts,
        Key::Addr,
        Key::Ping,
        Key::Traffic,
        Key::TrafficIrq,
        Key::TrafficSoftirq,
        Key::TrafficStats,
        Key::Debug,
        Key::Kmemleak,
        Key::Klog,
        Key::Unload,
        Key::UnloadHandshake,
        Key::Irqbalance,
        Key::IrqbalanceSample,
        Key::CarrierUnload,
        Key::SelftestSetup,
        Key::Selftest,
        Key::SelftestExit,
        Key::SelftestNetdev,
        Key::SelftestRemote,
        Key::SelftestNetdevAt,
        Key::SelftestRemoteAt,
        Key::Soak,
        Key::SoakRound,
    ];

    /// The key as the line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Key::Kernel => "kernel",
            Key::Cmdline => "cmdline",
            Key::InitEnv => "initenv",
            Key::Time => "time",
            Key::Load => "load",
            Key::Settle => "settle",
            Key::Insmod => "insmod",
            Key::Carrier => "carrier",
            Key::CarrierUnload => "carrier-unload",
            Key::Ethtool => "ethtool",
            Key::Channels => "channels",
            Key::Netdev => "netdev",
            Key::Rmmod => "rmmod",
            Key::Hotplug => "hotplug",
            Key::Stderr => "stderr",
            Key::File => "f",
            Key::Link => "link",
            Key::Nic => "nic",
            Key::IrqCount => "irqcount",
            Key::Seen => "seen",
            Key::Dmesg => "dmesg",
            Key::Warning => "warning",
            Key::InterruptsHeader => "interrupts-header",
            Key::Interrupts => "interrupts",
            Key::Addr => "addr",
            Key::Ping => "ping",
            Key::Traffic => "traffic",
            Key::TrafficIrq => "traffic-irq",
            Key::TrafficSoftirq => "traffic-softirq",
            Key::TrafficStats => "traffic-stats",
            Key::Debug => "debug",
            Key::Kmemleak => "kmemleak",
            Key::Klog => "klog",
            Key::Unload => "unload",
            Key::UnloadHandshake => "unload-handshake",
            Key::Irqbalance => "irqbalance",
            Key::IrqbalanceSample => "irqbalance-sample",
            Key::SelftestSetup => "selftest-setup",
            Key::Selftest => "selftest",
            Key::SelftestExit => "selftest-exit",
            Key::SelftestNetdev => "selftest-netdev",
            Key::SelftestRemote => "selftest-remote",
            Key::SelftestNetdevAt => "selftest-netdev-at",
            Key::SelftestRemoteAt => "selftest-remote-at",
            Key::Soak => "soak",
            Key::SoakRound => "soak-round",
        }
    }

    /// Whether reports of `version` have this key.
    pub fn in_version(self, version: Version) -> bool {
        match self {
            Key::InterruptsHeader | Key::Interrupts => version == Version::V1,
            Key::Addr
            | Key::Ping
            | Key::Traffic
            | Key::TrafficIrq
            | Key::TrafficSoftirq
            | Key::TrafficStats
            | Key::Unload
            | Key::CarrierUnload => version >= Version::V3,
            _ => true,
        }
    }

    fn of(name: &str, version: Version) -> Option<Key> {
        Key::ALL.into_iter().find(|k| k.name() == name && k.in_version(version))
    }
}

/// Strip the serial port's line endings (it sends CR LF).
fn clean(line: &str) -> &str {
    line.trim_end_matches(['\r', '\n'])
}

/// Parse the agent's output: the last report, with the stages printed before it.
///
/// # Errors
/// [`ReportError`] when the report's begin or end line is missing, its version is
/// not one this parser reads, a stage before it has no end, or a line is malformed
/// (with its 1-based line number in `text`).
pub fn parse(text: &str) -> Result<Transcript, ReportError> {
    let lines: Vec<&str> = text.lines().map(clean).collect();
    let markers: Vec<(usize, Marker)> =
        lines.iter().enumerate().filter_map(|(i, l)| Marker::parse(l).map(|m| (i, m))).collect();
    let (begin, version) = markers
        .iter()
        .rev()
        .find_map(|(i, m)| match m {
            Marker::ReportBegin(v) => Some((*i, v)),
            _ => None,
        })
        .ok_or(ReportError::NoBegin)?;
    let version = Version::parse(version)?;
    let end_of = |from: usize, end: Marker, name: &'static str| {
        markers
            .iter()
            .find(|(i, m)| *i > from && *m == end)
            .map(|(i, _)| *i)
            .ok_or(ReportError::NoEnd { line: from + 1, end: name })
    };
    let end = end_of(begin, Marker::ReportEnd, REPORT_END)?;
    let report = parse_block(&lines, begin, end, version)?;
    let mut stages = Vec::new();
    for (i, m) in markers.iter().take_while(|(i, _)| *i < begin) {
        let Marker::StageBegin(name) = m else { continue };
        let stage_end = end_of(*i, Marker::StageEnd, STAGE_END).ok().filter(|e| *e < begin);
        let stage_end = stage_end.ok_or(ReportError::NoEnd { line: i + 1, end: STAGE_END })?;
        stages.push(Stage { name: name.clone(), report: parse_block(&lines, *i, stage_end, version)? });
    }
    Ok(Transcript { version, stages, report })
}

/// `key: value` status items: `-` (the step did not run) and non-numbers are None.
fn status(value: &str) -> Option<i32> {
    value.trim().parse().ok()
}

/// One `traffic-irq`, `traffic-softirq` or `traffic-stats` line into `t`
/// (`id` is the moment, `before` or `after`, and for softirqs the kind).
fn traffic_line(t: &mut super::report::GuestTraffic, kind: Key, id: &str, value: &str) -> Result<(), String> {
    let (moment, rest) = id.split_once(' ').unwrap_or((id, ""));
    let counts = match moment {
        "before" => &mut t.before,
        "after" => &mut t.after,
        other => return Err(format!("moment {other:?} is neither before nor after")),
    };
    match kind {
        Key::TrafficIrq => {
            let (irq, per_cpu, _) = parse_irq_counts(value, 0)?;
            counts.irqs.insert(irq, per_cpu);
        }
        Key::TrafficSoftirq => {
            let per_cpu = parse_cpu_counts(value.trim(), 0)?;
            match rest {
                "NET_RX" => counts.net_rx = per_cpu,
                "NET_TX" => counts.net_tx = per_cpu,
                other => return Err(format!("softirq {other:?} is neither NET_RX nor NET_TX")),
            }
        }
        _ => {
            for pair in value.split_whitespace().filter(|p| *p != "-") {
                let (name, n) = pair.split_once('=').ok_or_else(|| format!("{pair:?} is not NAME=VALUE"))?;
                let n: u64 = n.parse().map_err(|_| format!("{name}: {n:?} is not a number"))?;
                counts.stats.insert(name.to_string(), n);
            }
        }
    }
    Ok(())
}

/// Parse the items strictly between lines `begin` and `end` (0-based).
fn parse_block(lines: &[&str], begin: usize, end: usize, version: Version) -> Result<GuestReport, ReportError> {
    let mut r = GuestReport::default();
    let mut raw = Raw::default();
    for (idx, &line) in lines.iter().enumerate().take(end).skip(begin + 1) {
        if let Some(path) = line.strip_prefix("link ") {
            raw.links.push(path.to_string());
            continue;
        }
        // Kernel messages may interleave with /init's output on the console:
        // lines that are not `key: value` with a known key are skipped. (The key is
        // `irqcount`, not `irq`: the kernel prints `irq 9: nobody cared`.)
        let Some((key, value)) = line.split_once(": ") else { continue };
        let (kind, id) = key.split_once(' ').unwrap_or((key, ""));
        let Some(kind) = Key::of(kind, version) else { continue };
        match kind {
            Key::Kernel => r.kernel = value.to_string(),
            Key::Cmdline => r.cmdline = value.to_string(),
            Key::InitEnv => r.init_env.push(value.to_string()),
            Key::Load => r.load = value.to_string(),
            Key::Netdev => r.netdev = (value != "-").then(|| value.to_string()),
            Key::Settle => r.settle = value.to_string(),
            Key::Insmod => r.insmod_status = status(value),
            Key::Carrier => r.carrier = status(value).map(|c| c == 1),
            Key::CarrierUnload => r.carrier_unload = status(value).map(|c| c == 1),
            Key::Ethtool => r.ethtool_status = status(value),
            Key::Channels => r.channels = value.trim().parse().ok(),
            Key::Rmmod => r.rmmod_status = status(value),
            Key::Unload => r.unload = Unload::parse(value),
            Key::UnloadHandshake => r.unload_handshake = UnloadHandshake::parse(value),
            Key::Hotplug => r.hotplug_status = status(value),
            Key::Warning => r.warnings.push(value.to_string()),
            Key::Debug => r.debug = Some(value.to_string()),
            Key::Kmemleak => r.kmemleak.push(value.to_string()),
            Key::Klog => r.klog.push(value.to_string()),
            Key::Stderr => r.stderr.entry(id.to_string()).or_default().push(value.to_string()),
            Key::Time => {
                if let Ok(t) = value.parse::<f64>() {
                    r.times.insert(id.to_string(), t);
                }
            }
            Key::File => {
                raw.files.insert(id.to_string(), (idx + 1, value.to_string()));
            }
            Key::Nic if value == "none" => {}
            Key::Nic => {
                r.nic.get_or_insert_with(|| value.to_string());
                r.nics.push(value.to_string());
            }
            Key::InterruptsHeader => raw.header = Some(value.to_string()),
            Key::Interrupts => raw.interrupts.push((idx + 1, value.to_string())),
            Key::IrqCount => raw.irq_counts.push((idx + 1, value.to_string())),
            Key::Seen => r.seen.push(value.to_string()),
            Key::Dmesg => r.dmesg.push(value.to_string()),
            // `link` lines have no colon (above); one with a colon is not ours.
            Key::Link => {}
            Key::Addr => r.traffic.addr_status = status(value),
            Key::Ping => {
                let (rc, summary) = value.split_once(' ').unwrap_or((value, ""));
                r.traffic.ping_status = status(rc);
                r.traffic.ping_summary = summary.trim().to_string();
            }
            Key::Traffic => r.traffic.tool_status = status(value),
            Key::TrafficIrq | Key::TrafficSoftirq | Key::TrafficStats => {
                traffic_line(&mut r.traffic, kind, id, value).map_err(|what| bad(idx + 1, what, line))?;
            }
            Key::Irqbalance => r.irqbalance.state = IrqbalanceState::parse(value),
            Key::IrqbalanceSample => {
                let sample = IrqbalanceSample::parse(id, value).map_err(|what| bad(idx + 1, what, line))?;
                r.irqbalance.samples.push(sample);
            }
            Key::SelftestSetup => r.selftests.setup = status(value),
            Key::Selftest => r.selftests.run_mut(id).output.push(value.to_string()),
            Key::SelftestExit => r.selftests.exit_line(id, value).map_err(|what| bad(idx + 1, what, line))?,
            Key::SelftestNetdev => {
                let counters = NetdevRxCounters::parse(id, value).map_err(|what| bad(idx + 1, what, line))?;
                r.selftests.netdev = Some(counters);
            }
            Key::SelftestRemote => {
                let counters = RemoteCounters::parse(id, value).map_err(|what| bad(idx + 1, what, line))?;
                r.selftests.remote = Some(counters);
            }
            Key::SelftestNetdevAt | Key::SelftestRemoteAt => {
                let remote = kind == Key::SelftestRemoteAt;
                r.selftests.mark_line(remote, id, value).map_err(|what| bad(idx + 1, what, line))?;
            }
            Key::Soak => {
                let step = SoakStepResult::parse(id, value).map_err(|what| bad(idx + 1, what, line))?;
                r.soak.steps.push(step);
            }
            Key::SoakRound => {
                let round = SoakRound::parse(id, value).map_err(|what| bad(idx + 1, what, line))?;
                r.soak.rounds.push(round);
            }
        }
    }
    if r.kernel.is_empty() {
        return Err(bad(begin + 1, "no kernel: line", ""));
    }
    assemble(&mut r, &raw)?;
    Ok(r)
}
