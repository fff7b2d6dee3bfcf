//! Fault injection (`--inject`, device_model::inject) against the real `mana`
//! driver: one boot per injection, each on seed 000's 4-channel machine with
//! the minimal 6.12 kernel (TCG), asserting what the driver should do and the
//! `driver_survived` verdict with its console evidence. No timing assertions.
//! They need the cache that `cargo xtask setup` fills and the 6.12-min build.

mod rig_support;
mod support;

use harness::guest_protocol::{Unload, UnloadHandshake};
use harness::rig::RunOutcome;
use harness::verdict::{CheckStatus, Status, DRIVER_SURVIVED};
use rig_support::{request, run_printed, topology_path};

/// Seed 000 with 4 channels on 6.12-min, the device misbehaving as `specs` say.
fn run_injected(specs: &[&str]) -> RunOutcome {
    let mut req = request("seed-000-4ch", "6.12-min");
    req.inject = specs.iter().map(|s| s.parse().expect("a spec")).collect();
    run_printed(&req, &format!("{specs:?}"))
}

/// The driver survived: the check passed, the run passed, the module unloaded
/// (right after the rig's go-ahead at the agent's MANARIG-UNLOAD mark).
fn assert_survived(o: &RunOutcome) {
    let check = o.verdict.checks.iter().find(|c| c.name == DRIVER_SURVIVED).expect("driver_survived");
    assert_eq!(check.status, CheckStatus::Pass, "{check:#?}");
    assert_eq!(o.verdict.status, Status::Pass);
    assert_eq!(o.report.unload, Some(Unload::Exit(0)), "rmmod mana");
    assert_eq!(o.report.unload_handshake, Some(UnloadHandshake::Go), "the rig's go-ahead reached the agent");
}

/// The driver's kernel messages contain `needle`.
fn logged(o: &RunOutcome, needle: &str) -> bool {
    o.report.dmesg.iter().any(|l| l.contains(needle))
}

/// mana_gd_create_dma_region() gets the error status: the GDMA probe fails
/// with -EPROTO (-71), frees everything, and the module unloads.
#[test]
fn an_error_status_for_create_dma_region_fails_the_probe_cleanly_and_the_module_unloads() {
    let o = run_injected(&["status:create_dma_region=0xc000009a"]);
    assert_survived(&o);
    assert!(o.report.netdev.is_none(), "no netdev after a failed probe");
    assert!(logged(&o, "HWC: Failed hw_channel req: 0xc000009a"), "{:#?}", o.report.dmesg);
    assert!(logged(&o, "probe with driver mana failed with error -71"), "{:#?}", o.report.dmesg);
}

/// The first GDMA_CREATE_QUEUE (the first Ethernet EQ) fails: "Failed to
/// create EQ", the probe fails cleanly, the module unloads.
#[test]
fn an_error_status_for_create_queue_fails_the_probe_cleanly_and_the_module_unloads() {
    let o = run_injected(&["status:create_queue=0xc000009a"]);
    assert_survived(&o);
    assert!(logged(&o, "Failed to create EQ: -71"), "{:#?}", o.report.dmesg);
}

/// MANA_CONFIG_VPORT_TX fails in ndo_open: the probe succeeded (eth0
/// exists), `ip link set up` fails with "Failed to configure vPort", and the
/// module still unloads.
#[test]
fn an_error_status_for_config_vport_fails_the_link_up_and_the_module_still_unloads() {
    let o = run_injected(&["status:config_vport=0xc000000d"]);
    assert_survived(&o);
    assert_eq!(o.report.netdev.as_deref(), Some("eth0"));
    assert_ne!(o.report.carrier, Some(true), "no carrier after a failed open");
    assert!(logged(&o, "Failed to configure vPort: -71"), "{:#?}", o.report.dmesg);
}

/// GDMA_QUERY_MAX_RESOURCES answered 5 s late, past the 2 s HWC timeout the
/// device set: the driver times out ("HWC: Request timed out!"), fails the
/// probe, ignores the late response, and unloads.
#[test]
fn a_response_past_the_hwc_timeout_fails_the_probe_cleanly_and_the_module_unloads() {
    let o = run_injected(&["hwc-delay:query_max_resources=5000"]);
    assert_survived(&o);
    assert!(logged(&o, "HWC: Request timed out!"), "{:#?}", o.report.dmesg);
}

/// Spurious interrupts on the HWC EQ's vector after every response: the
/// driver finds no new EQE, re-arms, and the probe and the link come up as
/// without them.
#[test]
fn spurious_interrupts_on_the_hwc_eq_are_ignored_and_the_probe_and_link_come_up() {
    let o = run_injected(&["spurious-irq:eq=0"]);
    assert_survived(&o);
    assert_eq!(o.report.netdev.as_deref(), Some("eth0"));
    assert_eq!(o.report.carrier, Some(true));
}

/// Bad owner bits on an HWC CQE: mana_gd_read_cqe() WARNs (WARN_ON_ONCE, a
/// "WARNING:" with a call trace, quoted as evidence), the request times out,
/// the probe fails, the module unloads.
#[test]
fn a_cqe_with_bad_owner_bits_is_warned_about_the_probe_fails_and_the_module_unloads() {
    let o = run_injected(&["owner-bits:cqe@20"]);
    let check = o.verdict.checks.iter().find(|c| c.name == DRIVER_SURVIVED).expect("driver_survived");
    assert!(
        o.report.warnings.iter().any(|w| w.contains("mana_gd_poll_cq")),
        "the WARN_ON in mana_gd_read_cqe(): {:#?}",
        o.report.warnings
    );
    assert!(check.detail.iter().any(|d| d.contains("WARNING:")), "evidence: {check:#?}");
    assert_survived(&o);
}

/// MSI-X vector 1 (the first Ethernet EQ's) never fires: mana_gd_test_eq()
/// waits its 30 s for the test EQE ("test_eq timed out on queue 1"), the
/// probe fails cleanly and the module unloads.
#[test]
fn slow_a_vector_that_never_fires_times_out_the_eq_test_and_fails_the_probe_cleanly() {
    let o = run_injected(&["silent-vector:1"]);
    assert_survived(&o);
    assert!(logged(&o, "test_eq timed out on queue 1"), "{:#?}", o.report.dmesg);
    assert!(o.report.netdev.is_none());
}

/// A spec that names an unknown fault or command: one error line listing the
/// valid ones, exit 2, nothing started.
#[test]
fn an_unknown_inject_spec_is_one_error_line_and_exit_2() {
    let (code, out, err) =
        support::manarig(&["run", "topologies/seed-000-4ch.toml", "--kernel", "6.12-min", "--inject", "status:nap=1"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("unknown command \"nap\" (one of: allocate_resource_range, config_vport,"), "{err}");
    let (code, _, err) =
        support::manarig(&["run", "topologies/seed-000-4ch.toml", "--kernel", "6.12-min", "--inject", "stall:1"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown fault \"stall\" (one of: status, hwc-delay"), "{err}");
}

/// The topology file's `[nic] inject` entries are checked before anything
/// starts: a bad one names the file and the entry.
#[test]
fn a_bad_inject_entry_in_the_topology_file_names_the_file_and_the_entry() {
    let dir = std::env::temp_dir().join(format!("manarig-inject-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let text = std::fs::read_to_string(topology_path("seed-000-4ch")).expect("seed 000");
    let text = text.replace("max_queues = 4", "max_queues = 4\ninject = [\"owner-bits:wqe\"]");
    let file = dir.join("bad-inject.toml");
    std::fs::write(&file, text).expect("write");
    let path = file.to_string_lossy().into_owned();
    let (code, out, err) = support::manarig(&["run", &path, "--kernel", "6.12-min"]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("bad-inject.toml: nic.inject[0]: \"owner-bits:wqe\": expected owner-bits:eqe[@N]"), "{err}");
}

/// Bad owner bits on the 20th EQE (on the HWC EQ): 6.12's
/// mana_gd_process_eq_events() logs "EQ 0: overflow detected" and re-arms the
/// EQ without consuming the entry, so the device (an armed EQ with an entry
/// pending notifies again: device-model/src/queues/mod.rs) raises the vector
/// again: an interrupt storm until the pending request times out (the 2 s the
/// device set), the probe fails and the HWC is destroyed. The driver survives.
#[test]
fn an_eqe_with_bad_owner_bits_storms_the_hwc_eq_until_the_request_times_out_and_the_probe_fails_cleanly() {
    let o = run_injected(&["owner-bits:eqe@20"]);
    assert_survived(&o);
    assert!(logged(&o, "EQ 0: overflow detected"), "{:#?}", o.report.dmesg);
    assert!(logged(&o, "HWC: Request timed out!"), "{:#?}", o.report.dmesg);
}

/// The 3rd RX completion carries an unknown CQE type during traffic:
/// mana_process_rx_cqe() (drivers/net/ethernet/microsoft/mana/mana_en.c,
/// 6.12.117) logs "Unknown RX CQE type = 63" and returns without moving the RQ
/// on (neither `buf_index` nor the WQ tail), so later frames on that RQ come
/// with the previous buffer's data: flows hashed to it may fail verification
/// (a driver weakness this injection shows), so only survival is asserted.
/// Needs root (the traffic peer's network namespace).
#[test]
fn a_corrupt_rx_cqe_mid_traffic_is_logged_and_dropped_and_the_flows_still_complete() {
    let mut req = request("seed-000-4ch", "6.12-min");
    req.inject = vec!["rx-cqe-corrupt@3".parse().expect("a spec")];
    req.traffic = Some(harness::traffic::TrafficOptions::default());
    let o = run_printed(&req, "rx-cqe-corrupt@3 with traffic");
    assert_survived(&o);
    assert!(logged(&o, "Unknown RX CQE type = 63"), "{:#?}", o.report.dmesg);
    assert!(o.report.traffic.tool_status.is_some(), "the traffic ran: {:#?}", o.report.traffic);
}

/// `compare --inject`: both runs get the injection and are judged by
/// driver_survived, shown for each side on one line; a bad spec is one line,
/// exit 2, before any kernel is looked at.
#[test]
fn compare_injects_in_both_runs_and_shows_driver_survived_for_each() {
    let topology = topology_path("seed-000-4ch").display().to_string();
    let (code, _, err) = support::manarig(&["compare", &topology, "--before", "6.12-min", "--inject", "stall:1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown fault \"stall\" (one of: status, hwc-delay"), "{err}");
    let (code, out, err) = support::manarig(&[
        "compare",
        &topology,
        "--before",
        "6.1-min",
        "--after",
        "6.12-min",
        "--inject",
        "status:config_vport=0xc000000d",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("injecting in both runs: status:config_vport_tx=0xc000000d"), "{err}");
    assert!(
        out.contains(
            "driver_survived: before pass, after pass; with status:config_vport_tx=0xc000000d: the probe gave eth0"
        ),
        "{out}"
    );
}

/// Seed 000 on `kernel` with 8 flows of 2 MB each way (long enough under TCG
/// for an event 3 s after the vPort opens to come while they run) and `specs`.
fn run_with_long_traffic(kernel: &str, specs: &[&str]) -> RunOutcome {
    let mut req = request("seed-000-4ch", kernel);
    req.inject = specs.iter().map(|s| s.parse().expect("a spec")).collect();
    req.traffic = Some(harness::traffic::TrafficOptions {
        bytes: 2_000_000,
        limit: std::time::Duration::from_secs(30),
        ..harness::traffic::TrafficOptions::default()
    });
    run_printed(&req, &format!("{specs:?} on {kernel} with traffic"))
}

/// The driver_survived check's detail lines.
fn survival_detail(o: &RunOutcome) -> Vec<String> {
    o.verdict.checks.iter().find(|c| c.name == DRIVER_SURVIVED).map(|c| c.detail.clone()).unwrap_or_default()
}

/// `reset@3` mid-traffic on 6.12: the device posts GDMA_EQE_HWC_RESET_REQUEST
/// and forgets every queue, but 6.12's mana_gd_process_eqe() drops that event
/// (no reset handling; the run says so): the driver keeps ringing doorbells
/// of queues the device no longer has, no flow completes, and at rmmod
/// mana_dealloc_queues() waits its 120 s for TX completions, then the remove
/// path's HWC requests time out (2 s each, the timeout the device set). The
/// driver survives and unloads. Needs root (the traffic peer's namespace).
#[test]
fn slow_a_reset_mid_traffic_is_ignored_by_6_12_whose_flows_stop_and_which_still_unloads() {
    let o = run_with_long_traffic("6.12-min", &["reset@3"]);
    assert_survived(&o);
    assert_eq!(o.report.netdev.as_deref(), Some("eth0"));
    let detail = survival_detail(&o);
    assert!(detail.iter().any(|d| d.contains("mana has no reset handling")), "{detail:#?}");
    assert_ne!(o.report.traffic.tool_status, Some(0), "the flows cannot complete on forgotten queues");
    assert!(logged(&o, "HWC: Request timed out!"), "{:#?}", o.report.dmesg);
}

/// `reset@3` mid-traffic on 7.3: mana_gd_process_eqe() takes the
/// GDMA_EQE_HWC_RESET_REQUEST ("Recv MANA service type:135") and
/// mana_serv_reset() runs the reset cycle: it suspends the driver (whose
/// mana_dealloc_queues() waits its 120 s for TX completions the forgotten
/// queues never send, the NETDEV WATCHDOG meanwhile), waits 10 s, sets the
/// device up again from the SMC handshake on ("MANA reset cycle completed",
/// the vPort enabled a second time). The final rmmod, retried while the
/// cycle holds the module, then unloads it. Needs root and the Debian 7.3 kernel.
#[test]
fn slow_a_reset_mid_traffic_makes_7_x_run_its_reset_cycle_and_enable_the_vport_again() {
    let o = run_with_long_traffic("7.x", &["reset@3"]);
    assert_survived(&o);
    for line in ["Recv MANA service type:135", "MANA reset cycle start", "MANA reset cycle completed"] {
        assert!(logged(&o, line), "{line}: {:#?}", o.report.dmesg);
    }
    let enabled = o.report.dmesg.iter().filter(|l| l.contains("Enabled vPort")).count();
    assert_eq!(enabled, 2, "the vPort enabled again after the reset: {:#?}", o.report.dmesg);
    assert!(survival_detail(&o).iter().all(|d| !d.starts_with("note:")), "7.x handles the reset request");
}

/// `link-down@3` mid-traffic on 7.3: mana_hwc_init_event_handler() takes the
/// HWC_DATA_HW_LINK_DISCONNECT event and mana_link_state_handle() turns the
/// carrier off: the carrier before the final rmmod reads 0, the flows stop,
/// and the driver unloads. Needs root and the Debian 7.3 kernel.
#[test]
fn slow_a_link_down_mid_traffic_turns_7_x_s_carrier_off_and_the_driver_still_unloads() {
    let o = run_with_long_traffic("7.x", &["link-down@3"]);
    assert_survived(&o);
    assert_eq!(o.report.carrier_unload, Some(false), "carrier after the link-down");
    assert!(survival_detail(&o).iter().all(|d| !d.starts_with("note:")), "7.x handles link events");
}

/// The same on 6.12, which has no link event handling (its
/// mana_gd_process_eqe() drops GDMA_EQE_HWC_SOC_RECONFIG_DATA): the run says
/// so, the carrier stays on and every flow still completes.
#[test]
fn slow_a_link_down_mid_traffic_is_ignored_by_6_12_and_the_run_says_it_has_no_link_events() {
    let o = run_with_long_traffic("6.12-min", &["link-down@3"]);
    assert_survived(&o);
    assert_eq!(o.report.carrier_unload, Some(true), "6.12 ignores the link event");
    let detail = survival_detail(&o);
    assert!(detail.iter().any(|d| d.contains("mana has no link event handling")), "{detail:#?}");
    assert_eq!(o.report.traffic.tool_status, Some(0), "every flow verified");
}

/// `link-down@3` then `link-up@6` on 7.3: mana_link_state_handle() turns the
/// carrier off, then on again (with a notify_peers): it is on at the final
/// rmmod. Needs root and the Debian 7.3 kernel.
#[test]
fn slow_a_link_down_then_up_mid_traffic_gives_7_x_its_carrier_back() {
    let o = run_with_long_traffic("7.x", &["link-down@3", "link-up@6"]);
    assert_survived(&o);
    assert_eq!(o.report.carrier_unload, Some(true), "carrier after the link-up");
}
