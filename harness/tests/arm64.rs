//! arm64 guests: Debian's arm64 cloud kernels under qemu-system-aarch64 (TCG,
//! QEMU's virt machine with GICv3 + ITS, UEFI and ACPI), the unmodified mana
//! driver probing the emulated MANA over vfio-user as on x86, and the IRQ
//! placement verdict against the model. The arm64 parts are provisioned into
//! `<cache>/arm64` on first use (`cargo xtask setup --arch arm64` does it
//! beforehand).

mod rig_support;

use harness::rig::RunOutcome;
use harness::topology::Arch;
use harness::verdict::Status;
use rig_support::{request, run_printed};

fn run(file: &str, kernel: &str) -> RunOutcome {
    let req = request(file, kernel);
    run_printed(&req, &format!("{file} on {kernel}"))
}

/// The verdict passes, the NIC sits on node 0, every vector fired, and the
/// ITS delivers each one where its affinity says: without SMT each queue
/// vector has one CPU, and `effective_affinity_list` is that CPU.
fn assert_cobalt_passes(o: &RunOutcome, what: &str) {
    assert_eq!(o.verdict.status, Status::Pass, "{what}");
    assert!(o.observed.kernel_release.ends_with("-cloud-arm64"), "{what}: {}", o.observed.kernel_release);
    assert_eq!(o.observed.nic_numa_node, Some(0), "{what}");
    assert_eq!(o.observed.vectors.len(), 17, "{what}: the HWC and 16 queues");
    for v in &o.observed.vectors {
        assert_eq!(v.smp_affinity.count(), 1, "{what}: {} has one CPU (no SMT)", v.name);
        assert_eq!(v.effective.as_ref(), Some(&v.smp_affinity), "{what}: {} effective = affinity", v.name);
    }
}

#[test]
fn the_cobalt_like_machine_passes_on_debians_arm64_6_12() {
    assert_cobalt_passes(&run("arm64/cobalt-16", "6.12"), "arm64 cobalt-16 on 6.12");
}

#[test]
fn the_cobalt_like_machine_passes_on_debians_arm64_7_x() {
    assert_cobalt_passes(&run("arm64/cobalt-16", "7.x"), "arm64 cobalt-16 on 7.x");
}

/// `--arch arm64` boots an x86 topology file as an arm64 guest: seed 002's
/// SMT machine keeps its sibling pairs (QEMU's virt machine shows threads
/// when asked), and the table is the x86 one.
#[test]
fn arch_arm64_boots_an_x86_topology_file_as_arm64() {
    let mut req = request("seed-002", "6.12");
    req.arch = Some(Arch::Arm64);
    let o = run_printed(&req, "seed-002 --arch arm64 on 6.12");
    assert_eq!(o.verdict.status, Status::Pass);
    assert!(o.observed.kernel_release.ends_with("-cloud-arm64"), "{}", o.observed.kernel_release);
}

/// `--traffic` on arm64: the guest end is the x86_64 `manarig-flows` under
/// `qemu-x86_64` (the arm64 kernel's sockets, TCP stack, driver and NIC);
/// twice the channel count of flows, every byte checked at both ends, each on
/// the RQ the RSS key and table predict, interrupting where the ITS delivers
/// its IRQ.
#[test]
fn traffic_flows_steer_and_interrupt_as_predicted_on_arm64_6_12() {
    let mut req = request("arm64/cobalt-16", "6.12");
    req.traffic = Some(harness::traffic::TrafficOptions::default());
    let o = run_printed(&req, "arm64 cobalt-16 --traffic on 6.12");
    assert_eq!(o.verdict.status, Status::Pass, "{:#?}", o.verdict.failures().collect::<Vec<_>>());
    for name in ["traffic_flows", "rss_steering", "traffic_interrupts"] {
        let c = o.verdict.checks.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no check {name}"));
        assert_eq!(c.status, harness::verdict::CheckStatus::Pass, "{name}: {}", c.message);
    }
    let t = o.verdict.traffic.as_ref().expect("traffic");
    let channels = o.queues.as_ref().expect("queue table").rows.len();
    assert_eq!(t.flows.len(), 2 * channels, "twice the channel count");
    assert!(t.flows.iter().any(|f| f.opener == "guest") && t.flows.iter().any(|f| f.opener == "host"));
    let outcome = o.traffic.as_ref().and_then(|t| t.peer.outcome.as_ref()).expect("both ends' results");
    assert!(outcome.guest.iter().chain(&outcome.host).all(|f| f.verified), "every flow verified at both ends");
    assert!(
        o.verdict.run.packages.iter().any(|p| p.name == "qemu-user" && p.part == "x86-user"),
        "the run names the emulator's package: {:?}",
        o.verdict.run.packages.iter().map(|p| &p.name).collect::<Vec<_>>()
    );
}

/// What arm64 cannot do yet is refused before anything starts, naming the option.
#[test]
fn a_soak_of_16_flows_a_round_on_arm64_is_refused_naming_the_flows_that_fit() {
    let mut req = request("arm64/cobalt-16", "6.12");
    req.traffic = Some(harness::traffic::TrafficOptions::default());
    req.soak = Some(harness::rig::soak::SoakOptions { minutes: 1, channels: Vec::new() });
    match harness::rig::run_one(&req) {
        Err(harness::rig::RunError::NotOnArm64 { what, why }) => {
            assert!(what.starts_with("a soak") && why.contains("--flows 4"), "{what}: {why}")
        }
        Err(e) => panic!("expected NotOnArm64, got {}", harness::text::chain(&e)),
        Ok(_) => panic!("a soak on arm64 ran"),
    }
}

/// A kernel the rig built (`-min`, `build:`) is an x86_64 kernel: refused on an
/// arm64 guest, naming why, before anything starts.
#[test]
fn a_kernel_the_rig_built_is_refused_on_arm64() {
    let mut req = request("arm64/cobalt-16", "6.12");
    req.custom_kernel = Some(harness::provision::KernelInstall {
        id: "build:0123abcd".into(),
        release: "6.12.117-manarig-min".into(),
        vmlinuz: "/nonexistent/bzImage".into(),
        modules: Vec::new(),
        compression: harness::provision::KoCompression::None,
        packages: Vec::new(),
    });
    match harness::rig::run_one(&req) {
        Err(harness::rig::RunError::NotOnArm64 { why, .. }) => assert!(why.contains("x86_64 kernels only"), "{why}"),
        Err(e) => panic!("expected NotOnArm64, got {}", harness::text::chain(&e)),
        Ok(_) => panic!("an x86 build ran on arm64"),
    }
}
