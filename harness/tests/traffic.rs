//! Packets through the emulated MANA NIC in a real guest (`run --traffic`):
//! ping across the netdev, TCP transfers checked byte for byte in both
//! directions, many flows steered by the RSS state the driver programmed and
//! interrupting where their IRQs' effective affinity says; and nothing left
//! behind afterwards (no process, no namespace, no TAP), also after a
//! SIGKILL of the rig in the middle of the traffic.
//!
//! Each test boots a guest under TCG with a peer in a private network
//! namespace: they need root (unshare CLONE_NEWNET, a TAP) and the cache
//! `cargo xtask setup` fills; the binaries `mana-device` and `manarig-flows`
//! are the workspace's (`cargo nextest run --workspace` builds them).

mod rig_support;

use harness::rig::RunOutcome;
use harness::traffic::TrafficOptions;
use harness::verdict::{CheckStatus, Status};
use rig_support::{request, run_printed, topology_path};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn run(file: &str, kernel: &str, traffic: TrafficOptions) -> RunOutcome {
    let mut req = request(file, kernel);
    req.traffic = Some(traffic);
    run_printed(&req, &format!("{file} on {kernel}"))
}

fn check_status(o: &RunOutcome, name: &str) -> CheckStatus {
    let c = o.verdict.checks.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no check {name}"));
    assert!(c.status != CheckStatus::Fail, "{name}: {}\n  {}", c.message, c.detail.join("\n  "));
    c.status
}

/// The multi-flow run: twice the channel count, every flow verified, on the RQ
/// the key and table predict, interrupting on its IRQ's effective CPUs.
fn many_flows_steer_and_interrupt_as_predicted(kernel: &str) {
    let o = run("seed-002", kernel, TrafficOptions::default());
    assert_eq!(o.verdict.status, Status::Pass, "{:#?}", o.verdict.failures().collect::<Vec<_>>());
    for name in ["traffic_flows", "rss_steering", "traffic_interrupts"] {
        assert_eq!(check_status(&o, name), CheckStatus::Pass, "{name} on {kernel}");
    }
    let t = o.verdict.traffic.as_ref().expect("traffic");
    let channels = o.queues.as_ref().expect("queue table").rows.len();
    assert_eq!(t.flows.len(), 2 * channels, "twice the channel count");
    let reached: std::collections::BTreeSet<Option<usize>> = t.flows.iter().map(|f| f.channel).collect();
    assert_eq!(reached.len(), channels, "every channel got a flow: {reached:?}");
    assert!(t.flows.iter().any(|f| f.opener == "guest") && t.flows.iter().any(|f| f.opener == "host"));
    assert!(t.summary.interrupts > 0 && t.summary.net_rx > 0, "{:?}", t.summary);
}

/// The guest pings the peer (3 echo requests, 3 replies) before the flows.
#[test]
fn ping_crosses_the_mana_netdev_to_the_peer_in_its_namespace_on_linux_6_12_min() {
    let o = run("seed-002", "6.12-min", TrafficOptions { flows: Some(1), bytes: 1, ..TrafficOptions::default() });
    let g = &o.report.traffic;
    assert_eq!(g.addr_status, Some(0), "ip addr add");
    assert_eq!(g.ping_status, Some(0), "ping: {}", g.ping_summary);
    assert!(g.ping_summary.contains("3 packets transmitted, 3 packets received"), "{}", g.ping_summary);
}

/// Two flows, one opened by each end, 512 KiB each way (TSO on the guest's
/// sends, many windows): every byte checked by the receiver, the SHA-256s of
/// both ends equal.
#[test]
fn a_tcp_transfer_arrives_intact_in_both_directions_on_linux_6_12_min() {
    let bytes = 512 * 1024;
    let o = run("seed-002", "6.12-min", TrafficOptions { flows: Some(2), bytes, limit: Duration::from_secs(60) });
    assert_eq!(check_status(&o, "traffic_flows"), CheckStatus::Pass);
    let outcome = o.traffic.as_ref().and_then(|t| t.peer.outcome.as_ref()).expect("both ends' results");
    for (h, g) in outcome.host.iter().zip(&outcome.guest) {
        assert!(h.verified && g.verified, "{h:?} {g:?}");
        assert_eq!((h.sent, h.received, g.sent, g.received), (bytes, bytes, bytes, bytes));
        assert_eq!(h.sent_sha256, g.received_sha256, "peer -> guest");
        assert_eq!(g.sent_sha256, h.received_sha256, "guest -> peer");
    }
    let openers: Vec<&str> =
        o.verdict.traffic.as_ref().expect("traffic").flows.iter().map(|f| f.opener.as_str()).collect();
    assert_eq!(openers, ["host", "guest"]);
}

#[test]
fn many_flows_land_on_the_rqs_rss_predicts_and_interrupt_on_their_effective_cpus_on_linux_6_12_min() {
    many_flows_steer_and_interrupt_as_predicted("6.12-min");
}

#[test]
fn many_flows_land_on_the_rqs_rss_predicts_and_interrupt_on_their_effective_cpus_on_linux_6_1() {
    many_flows_steer_and_interrupt_as_predicted("6.1");
}

#[test]
fn many_flows_land_on_the_rqs_rss_predicts_and_interrupt_on_their_effective_cpus_on_linux_7() {
    many_flows_steer_and_interrupt_as_predicted("7.x");
}

/// `manarig` (the CLI) beside this test's executable.
fn manarig() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_manarig"))
}

/// Every process's (pid, parent pid, command name, network namespace link).
fn processes() -> Vec<(u32, u32, String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid …: comm may hold spaces, so split after the last ')'.
        let Some((head, rest)) = stat.rsplit_once(')') else { continue };
        let comm = head.split_once('(').map_or("", |(_, c)| c).to_string();
        let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        let ns = std::fs::read_link(entry.path().join("ns/net")).map(|p| p.display().to_string()).unwrap_or_default();
        out.push((pid, ppid, comm, ns));
    }
    out
}

/// The descendants of `root` (pid, command name, network namespace).
fn descendants(root: u32) -> Vec<(u32, String, String)> {
    let all = processes();
    let mut found = vec![root];
    let mut out = Vec::new();
    let mut i = 0;
    while i < found.len() {
        for (pid, ppid, comm, ns) in &all {
            if *ppid == found[i] && !found.contains(pid) {
                found.push(*pid);
                out.push((*pid, comm.clone(), ns.clone()));
            }
        }
        i += 1;
    }
    out
}

/// Waits until `done` holds, checking every 50 ms, at most `within`.
fn wait_for(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Established TCP connections in the network namespace of process `pid`
/// (its /proc/PID/net/tcp, state 01), the control connection included.
fn established(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/net/tcp"))
        .map(|t| t.lines().skip(1).filter(|l| l.split_whitespace().nth(3) == Some("01")).count())
        .unwrap_or(0)
}

/// The rig's children in the middle of a traffic run: (peer pid, its network
/// namespace, every descendant pid). A rig that ends before its flows were
/// seen fails the test at once (its flows were shorter than the polling).
fn mid_traffic(child: &mut std::process::Child) -> (u32, String, Vec<u32>) {
    let mut peer = None;
    wait_for(Duration::from_secs(600), "the peer's flows", || {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("manarig ended ({status}) before its peer's flows were seen: make the flows longer");
        }
        let kids = descendants(child.id());
        peer = kids.iter().find(|(_, comm, _)| comm == "manarig-flows").map(|(pid, _, ns)| (*pid, ns.clone()));
        // The control connection and at least one flow.
        peer.as_ref().is_some_and(|(pid, _)| established(*pid) >= 2)
    });
    let (pid, ns) = peer.expect("the peer");
    let ours = std::fs::read_link("/proc/self/ns/net").map(|p| p.display().to_string()).unwrap_or_default();
    assert_ne!(ns, ours, "the peer runs in a namespace of its own");
    let all: Vec<u32> = descendants(child.id()).iter().map(|(p, _, _)| *p).collect();
    (pid, ns, all)
}

/// After the rig is gone: none of its processes is left, nothing is in the
/// peer's namespace any more (so the kernel has freed it, and the TAP with
/// it: the TAP lived only in that namespace and only as long as a process held
/// its descriptor), and the host's namespace never had a TAP of ours.
fn nothing_left(pids: &[u32], ns: &str) {
    wait_for(Duration::from_secs(30), "the rig's processes to go", || {
        pids.iter().all(|p| !Path::new(&format!("/proc/{p}")).exists())
    });
    let in_ns: Vec<(u32, String)> =
        processes().into_iter().filter(|(_, _, _, n)| n == ns).map(|(pid, _, comm, _)| (pid, comm)).collect();
    assert!(in_ns.is_empty(), "processes still in the peer's namespace {ns}: {in_ns:?}");
    let links = std::fs::read_to_string("/proc/net/dev").expect("/proc/net/dev");
    assert!(!links.lines().any(|l| l.trim_start().starts_with(&format!("{}:", harness::traffic::TAP))), "{links}");
}

fn start_manarig(bytes: u64) -> std::process::Child {
    std::process::Command::new(manarig())
        .args(["run", &topology_path("seed-002").display().to_string(), "--kernel", "6.12-min", "--traffic", "2"])
        .args(["--traffic-bytes", &bytes.to_string(), "--format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("manarig runs")
}

#[test]
fn a_traffic_run_leaves_no_process_namespace_or_tap_behind() {
    // Flows of a few seconds: 256 KiB took 0.27 s, shorter than this test's
    // scan of /proc on a loaded host can be sure to catch.
    let mut child = start_manarig(4 * 1024 * 1024);
    let (_, ns, pids) = mid_traffic(&mut child);
    let status = child.wait().expect("manarig ends");
    assert!(status.success(), "manarig run --traffic: {status}");
    nothing_left(&pids, &ns);
}

#[test]
fn a_sigkill_of_the_rig_in_the_middle_of_the_traffic_leaves_no_process_namespace_or_tap_behind() {
    // Enough bytes that the flows are still running when the signal comes.
    let mut child = start_manarig(64 * 1024 * 1024);
    let (_, ns, pids) = mid_traffic(&mut child);
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("reaped");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
    nothing_left(&pids, &ns);
}

#[test]
fn a_ctrl_c_in_the_middle_of_the_traffic_stops_the_run_and_leaves_no_process_namespace_or_tap_behind() {
    let mut child = start_manarig(64 * 1024 * 1024);
    let (_, ns, pids) = mid_traffic(&mut child);
    // SAFETY: kill(2) on our own child, not yet reaped.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("manarig did not stop within 60 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!status.success(), "an interrupted run is not a pass: {status}");
    nothing_left(&pids, &ns);
}

/// A two-minute soak (`cargo xtask soak --minutes 2`) of seed 002 on
/// Debian 6.12 with 16 flows a round: every minute `ethtool -L` (4, then 2
/// channels), link-down and link-up raised by the device, `rmmod` and a new
/// probe, while the rounds run; the device process flat (minute 1 to 2),
/// every byte of every round verified, every disruption come through, traffic
/// in both minutes, no kernel warning.
#[test]
fn slow_a_two_minute_soak_keeps_the_device_flat_and_verifies_every_byte_across_its_disruptions() {
    use harness::rig::soak::{SoakOptions, DEFAULT_ROUND_BYTES, ROUND_LIMIT};
    use harness::verdict::soak::SOAK_CHECKS;
    let mut req = request("seed-002", "6.12");
    req.traffic = Some(TrafficOptions { flows: Some(16), bytes: DEFAULT_ROUND_BYTES, limit: ROUND_LIMIT });
    req.soak = Some(SoakOptions { minutes: 2, channels: vec![4, 2] });
    let o = run_printed(&req, "a two-minute soak of seed-002 on 6.12");
    for name in SOAK_CHECKS {
        assert_eq!(check_status(&o, name), CheckStatus::Pass, "{name}");
    }
    assert_eq!(o.verdict.status, Status::Pass, "{:#?}", o.verdict.failures().collect::<Vec<_>>());
    let soak = o.verdict.soak.as_ref().expect("the soak's figures");
    assert_eq!(soak.samples.iter().map(|s| s.minute).collect::<Vec<_>>(), [0, 1, 2]);
    let flat = soak.flatness.as_ref().expect("judged");
    assert_eq!((flat.judged_from_minute, flat.judged), (1, 2));
    for d in &soak.disruptions {
        assert_eq!((d.planned, d.done, d.ok), (2, 2, 2), "{d:?}");
    }
    let t = &soak.traffic;
    assert!(t.rounds >= 2 && t.rounds_verified == t.rounds && t.rounds_dropped == 0, "{t:?}");
    assert_eq!(t.flows_verified, 16 * t.rounds);
    assert_eq!(t.bytes_to_guest, u64::from(t.flows) * DEFAULT_ROUND_BYTES);
    assert!(t.per_minute.iter().all(|&n| n > 0), "{t:?}");
    // Back to the driver's count after the last re-probe: the report's table is judged as in any run.
    assert_eq!(o.report.channels, Some(8));
}
