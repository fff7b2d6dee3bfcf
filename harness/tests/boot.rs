//! Boot tests: one per (machine, kernel). Each boots the machine in QEMU (TCG)
//! on a provisioned Debian kernel, loads mana in the guest, and checks that
//! the guest's observed topology equals the declared one (CPUs, SMT sibling
//! groups, nodes, distances, the NIC slot's numa_node).
//!
//! They need the cache that `cargo xtask setup` fills (`cargo xtask test` runs
//! setup first) and fail with that instruction when it is missing.

use harness::provision::{self, Provisioned};
use harness::qemu::{boot, machines, BootRequest, MachineSpec, NicPlacement};
use std::time::Duration;

fn provisioned() -> Provisioned {
    let cache = provision::cache_dir(None).unwrap_or_else(|e| panic!("{e}"));
    provision::load(&cache).unwrap_or_else(|e| panic!("{e}"))
}

/// Boot `spec` on kernel `id` and return the outcome, or fail with the rig's error.
fn boot_on(spec: &MachineSpec, id: &str, tweak: impl FnOnce(&mut BootRequest<'_>)) -> harness::qemu::BootOutcome {
    let p = provisioned();
    let kernel = p.kernel(id).unwrap_or_else(|e| panic!("{e}"));
    let mut req = BootRequest::new(spec, kernel, &p.busybox.binary);
    req.agent.load_mana = true;
    req.deadline = Duration::from_secs(900);
    tweak(&mut req);
    boot(&p.qemu, &req).unwrap_or_else(|e| panic!("boot on kernel {id}: {e}"))
}

fn assert_observed_equals_declared(spec: &MachineSpec, id: &str) {
    let out = boot_on(spec, id, |_| {});
    let diffs = harness::guest_topology::compare(spec, &out.report, &harness::cpulist::CpuMask::first_n(spec.vcpus()));
    assert!(
        diffs.is_empty(),
        "kernel {id} ({}): observed topology differs:\n{}",
        out.report.kernel,
        diffs.iter().map(|d| format!("  {d}\n")).collect::<String>()
    );
    // The module was loaded and insmod returned (no MANA device yet: no probe).
    assert_eq!(out.report.load, "mana");
    assert_eq!(out.report.insmod_status, Some(0), "insmod of mana failed on kernel {id}");
}

macro_rules! boot_tests {
    ($($name:ident: $machine:expr, $kernel:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_observed_equals_declared(&$machine, $kernel);
        }
    )*};
}

// Seed 002 (docs/seeds.md): 2 sockets × 2 cores × 2 threads, node 0 = CPUs 0-3,
// node 1 = CPUs 4-7, distance 20, NIC slot on node 0.
// R17 (topologies/r17-diameter.toml): -smp 8, nodes 0-1, 2-3, 4-5, 6-7, distances
// 0-1 = 12, 0-2 = 20, 0-3 = 22, 1-2 = 22, 1-3 = 24, 2-3 = 12.
boot_tests! {
    seed_002_on_linux_6_1: machines::seed_002(256), "6.1";
    seed_002_on_linux_6_12: machines::seed_002(256), "6.12";
    seed_002_on_linux_7: machines::seed_002(256), "7";
    r17_on_linux_6_1: machines::r17(128), "6.1";
    r17_on_linux_6_12: machines::r17(128), "6.12";
    r17_on_linux_7: machines::r17(128), "7";
}

/// R23 (topologies/r23-no-node.toml) placement (a): a slot on pcie.0 gives the
/// guest numa_node -1 (NUMA_NO_NODE); `compare` checks the root port's value.
#[test]
fn nic_slot_on_pcie0_has_no_numa_node_on_linux_6_12() {
    let mut spec = machines::seed_002(256);
    spec.nic = NicPlacement::NoNode;
    assert_observed_equals_declared(&spec, "6.12");
}

/// A CPU-only node (seed 002's node 1 without memory) and a memory-only node
/// 2 (30 away from both): Linux must show node 1 with CPUs 4-7 and no memory,
/// node 2 with memory and no CPUs, and the full 3×3 distance matrix.
#[test]
fn cpu_only_and_memory_only_nodes_on_linux_6_12() {
    let mut spec = machines::seed_002(256);
    spec.nodes[1].mem_mib = 0;
    spec.nodes.push(harness::qemu::NodeSpec { cpus: vec![], mem_mib: 256 });
    spec.distances = vec![vec![10, 20, 30], vec![20, 10, 30], vec![30, 30, 10]];
    assert_observed_equals_declared(&spec, "6.12");
}

/// The MSI-X part of the report, exercised with a device whose driver is built
/// into Debian's cloud kernels: QEMU's NVMe controller (1b36:0010) in the NIC
/// slot. Its queue vectors are managed-affinity (irq_create_affinity_masks),
/// one per CPU here, so every online CPU must appear in some vector's
/// smp_affinity_list, and the device sits on node 0 like the slot.
#[test]
fn msix_vectors_of_the_slot_device_are_reported_on_linux_6_12() {
    let spec = machines::seed_002(256);
    let out = boot_on(&spec, "6.12", |req| {
        req.extra_devices.push("nvme,serial=manarig,bus=rp0".into());
        req.agent.nic = Some(harness::guest_protocol::PciId { vendor: 0x1b36, device: Some(0x0010) });
    });
    let r = &out.report;
    let nic = r.nic.as_deref().expect("the NVMe device is found as the slot device");
    assert_eq!(r.pci[nic].numa_node, 0, "slot on node 0 (seed 002)");
    assert!(r.msix.len() >= 2, "admin + I/O vectors: {:?}", r.msix);
    let mut covered: Vec<u32> = r.msix.iter().skip(1).flat_map(|v| v.affinity.clone().unwrap_or_default()).collect();
    covered.sort_unstable();
    covered.dedup();
    assert_eq!(covered, (0..8).collect::<Vec<_>>(), "I/O vectors cover all CPUs");
    assert!(r.msix.iter().all(|v| v.name.starts_with("nvme0q")), "{:?}", r.msix);
}

/// `--accel auto` always ends with a result: on a host where KVM really runs
/// guests the run is KVM's; where KVM's guest stays silent, hangs, panics or
/// QEMU dies under it (the build machines), the run says why in one line and is
/// TCG's. Either way seed 002 passes.
#[test]
fn accel_auto_ends_with_a_verdict_and_says_which_accelerator_ran() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_manarig"))
        .args(["run", "topologies/seed-002.toml", "--kernel", "6.12-min", "--accel", "auto", "--format", "json"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("run manarig");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let accel = v["run"]["accel"].as_str().expect("accel").to_owned();
    let kvm_ran = accel.starts_with("kvm");
    let fell_back = stderr.contains("--accel auto: ") && stderr.contains("running the guest again under TCG");
    assert!(kvm_ran != fell_back, "KVM ran ({accel}) xor the run fell back with a reason: {stderr}");
    assert!(kvm_ran || accel.starts_with("tcg"), "{accel}");
}

/// The final unload's handshake on both ports the agent reports on: on the
/// console the go-ahead reaches /dev/console through QEMU's stdin, on ttyS1
/// through the report channel's `report.in`; either way the agent gets it (and
/// does not echo it) and its rmmod runs (no MANA device here: mana loads without a probe and unloads
/// at once).
#[test]
fn the_unload_go_ahead_reaches_the_agent_on_the_console_and_on_ttys1_on_linux_6_12() {
    use harness::guest_protocol::{ReportChannel, Unload, UnloadHandshake};
    for channel in [ReportChannel::Console, ReportChannel::Ttys1] {
        let out = boot_on(&machines::seed_002(256), "6.12", |req| {
            req.agent.unload = true;
            req.agent.report = channel;
        });
        let r = &out.report;
        assert_eq!((r.unload_handshake, r.unload), (Some(UnloadHandshake::Go), Some(Unload::Exit(0))), "{channel:?}");
        assert!(r.times["unload-go"] >= r.times["unload-mark"], "{channel:?}: {:?}", r.times);
        // The agent turned the port's echo off before the mark.
        assert!(!out.console.contains(harness::guest_protocol::GO_AHEAD), "{channel:?}: echoed:\n{}", out.console);
    }
}
