//! The kernel's own drivers/net selftests against the emulated MANA
//! (`cargo xtask selftests`): the tests come from the pinned kernel's Debian
//! source, run in the guest with the remote end in netns `remote`, and every
//! case is a check judged against `guest-images/selftests/baseline-<series>.toml`.
//! Needs the cache that `cargo xtask setup` fills (the kernel sources are
//! downloaded on first use).

mod rig_support;

use harness::rig::SelftestsRequest;
use harness::verdict::{Check, CheckStatus};
use rig_support::{request, run_printed};

fn check<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no check {name}"))
}

/// Every selftest check passed or was explained by the baseline: no case,
/// program or setup left unexplained.
fn nothing_unexplained(checks: &[Check]) {
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| c.name.starts_with("selftests.") && c.status == CheckStatus::Fail)
        .map(|c| c.name.as_str())
        .collect();
    assert!(failed.is_empty(), "unexplained: {failed:?}");
}

fn selftest_run(kernel: &str, patterns: &[&str]) -> harness::rig::RunOutcome {
    let mut req = request("seed-002", kernel);
    req.selftests = Some(SelftestsRequest {
        patterns: patterns.iter().map(|p| (*p).to_owned()).collect(),
        ..SelftestsRequest::default()
    });
    run_printed(&req, &format!("seed-002 selftests {patterns:?} on {kernel}"))
}

/// The quick set on Debian's 7.3 (CI's): the remote end comes up; the
/// kernel's software Toeplitz over the key the driver programmed agrees with
/// the hash in every one of our RX CQEs for tcp/udp × v4/v6 (hw/toeplitz.py's
/// four base variants; on a busy host a variant may see too few frames in its
/// window, every one right); ICMP, 64 KB pings and TCP both ways work with checksum
/// offload off and on (ping.py's default cases); queue counts over netlink and
/// sysfs agree across `ethtool -L` and down/up (queues.py); the RSS table and
/// key set over netlink read back (hw/rss_api.py); the statistics mana does not
/// report skip as the baseline says (stats.py); threaded NAPI set while a
/// queue is gone reaches the NAPIs made after it (napi_threaded.py, with
/// forky's ethtool for `ethtool --json -l`); eth0's `rx_missed_errors` after
/// each program is a no-WQE count the device reported over MANA_QUERY_GF_STAT
/// (`selftests.rx_missed_errors`); nothing is left unexplained.
#[test]
fn kernel_selftests_quick_set_judges_rss_hashing_ping_and_queues_on_linux_7_x() {
    let o = selftest_run("7.x", &["quick"]);
    let c = &o.verdict.checks;
    assert_eq!(check(c, "selftests.setup").status, CheckStatus::Pass);
    assert_eq!(check(c, "selftests.napi_threaded.napi_init").status, CheckStatus::Pass);
    // Each base variant passes or, on a busy host, missed its window with
    // every frame it checked right and nothing dropped (the baseline's flaky
    // entry; its check is then a SKIP).
    for variant in ["tcp_ipv4", "tcp_ipv6", "udp_ipv4", "udp_ipv6"] {
        let t = check(c, &format!("selftests.toeplitz.test.{variant}"));
        assert!(
            t.status == CheckStatus::Pass || (t.status == CheckStatus::Skip && t.message.contains("too few frames")),
            "{t:?}"
        );
    }
    for case in ["ping.test_default_v4", "ping.test_default_v6"] {
        assert_eq!(check(c, &format!("selftests.{case}")).status, CheckStatus::Pass, "{case}");
    }
    for case in ["get_queues", "addremove_queues", "check_down"] {
        assert_eq!(check(c, &format!("selftests.queues.{case}")).status, CheckStatus::Pass, "{case}");
    }
    for case in ["test_rxfh_nl_set_indir", "test_rxfh_nl_set_key", "test_rxfh_indir_ntf"] {
        assert_eq!(check(c, &format!("selftests.rss_api.{case}")).status, CheckStatus::Pass, "{case}");
    }
    let pause = check(c, "selftests.stats.check_pause");
    assert_eq!(pause.status, CheckStatus::Skip, "explained by the baseline: {pause:?}");
    let missed = check(c, "selftests.rx_missed_errors");
    assert_eq!(missed.status, CheckStatus::Pass, "{missed:?}");
    let report = o.verdict.selftests.as_ref().expect("the selftests report");
    assert!(report.programs.iter().all(|p| p.complete), "every program ran to its end: {report:?}");
    nothing_unexplained(c);
}

/// The whole set on Debian's 7.3: hw/csum.py's RX verdicts on good and
/// corrupt TCP/UDP and its TX offload (including a zero UDP checksum sent as
/// 0xFFFF) pass, or (the baseline's flaky entries: a fixed receive window a
/// busy host's sender misses) fail only while csum.py's own counters show no
/// frame lost; napi_id.py finds one of the device's NAPIs behind a socket;
/// every software GRO case but PPPoE's coalesces, or for the largest train
/// (`large_max`, flaky) arrives whole, only flushed in parts, with nothing
/// dropped in gro.py; every program runs to its end and nothing is left
/// unexplained.
#[test]
fn slow_kernel_selftests_whole_set_on_linux_7_x() {
    let o = selftest_run("7.x", &[]);
    let report = o.verdict.selftests.as_ref().expect("the selftests report");
    let csum = report.programs.iter().find(|p| p.file == "hw/csum.py").expect("hw/csum.py ran");
    assert_eq!(csum.cases.len(), 12, "{csum:?}");
    // A SKIP is a failure the flaky entry explains: its conditions held.
    for case in &csum.cases {
        match case.status {
            CheckStatus::Pass => {}
            CheckStatus::Skip => {
                assert!(case.unmet.is_empty() && case.baseline_reason.is_some(), "{case:?}");
                assert!(csum.rx.losses().is_empty(), "{}: csum.py lost frames: {:?}", case.name, csum.rx);
            }
            CheckStatus::Fail => panic!("{}: {case:?}", case.name),
        }
    }
    assert_eq!(check(&o.verdict.checks, "selftests.napi_id.test_napi_id").status, CheckStatus::Pass);
    let gro = report.programs.iter().find(|p| p.file == "gro.py").expect("gro.py ran");
    let sw_failed: Vec<&str> = gro
        .cases
        .iter()
        .filter(|c| c.name.starts_with("gro.test.sw_") && !c.name.contains("pppoe"))
        .filter(|c| c.status != CheckStatus::Pass && !(c.name.ends_with("_large_max") && c.status == CheckStatus::Skip))
        .map(|c| c.name.as_str())
        .collect();
    assert!(sw_failed.is_empty(), "software GRO cases that did not coalesce: {sw_failed:?}");
    if gro.cases.iter().any(|c| c.name.ends_with("_large_max") && c.status == CheckStatus::Skip) {
        assert!(gro.rx.losses().is_empty(), "gro.py lost frames: {:?}", gro.rx);
    }
    assert!(report.programs.iter().all(|p| p.complete), "every program ran to its end: {report:?}");
    nothing_unexplained(&o.verdict.checks);
}

/// Debian's 6.12 with its own (fewer) tests: queues.py, stats.py, ping.py and
/// hw/csum.py, judged against baseline-6.12.toml. 6.12.117's hw/csum.py cannot
/// run (it reads `cfg.remote_ifname`, which its own env.py never sets): its
/// cases fail as the baseline says, before any packet.
#[test]
fn slow_kernel_selftests_on_linux_6_12_run_its_own_tests() {
    let o = selftest_run("6.12", &[]);
    let report = o.verdict.selftests.as_ref().expect("the selftests report");
    let files: Vec<&str> = report.programs.iter().map(|p| p.file.as_str()).collect();
    assert_eq!(files, ["queues.py", "stats.py", "ping.py", "hw/csum.py"]);
    assert!(report.source.starts_with("linux-source-6.12"), "{}", report.source);
    let csum = report.programs.iter().find(|p| p.file == "hw/csum.py").expect("hw/csum.py ran");
    assert!(csum.cases.iter().all(|c| c.status == CheckStatus::Skip), "explained by the baseline: {csum:?}");
    for case in ["queues.get_queues", "queues.addremove_queues", "ping.test_v4", "ping.test_v6", "ping.test_tcp"] {
        assert_eq!(check(&o.verdict.checks, &format!("selftests.{case}")).status, CheckStatus::Pass, "{case}");
    }
    nothing_unexplained(&o.verdict.checks);
}
