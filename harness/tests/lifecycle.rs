//! The driver's life cycle in a real guest, beyond the probe: the link coming
//! up, `ethtool -L` re-creating the queues on fewer channels, and `rmmod` +
//! a second load. Each test boots a guest with the emulated MANA NIC (TCG)
//! and asserts what a user of the rig would check; no timing assertions.
//! They need the cache that `cargo xtask setup` fills.

mod rig_support;

use harness::rig::queues::QueueTable;
use harness::rig::RunOutcome;
use harness::verdict::Status;
use rig_support::{request, run_printed};

fn run(file: &str, kernel: &str, reprobe: bool) -> RunOutcome {
    // `6.12`, `6.1`, `7.x` (pinned Debian kernels) or `6.12-min` (the minimal build).
    let mut req = request(file, kernel);
    req.reprobe = reprobe;
    run_printed(&req, &format!("{file} on {kernel}"))
}

/// (MSI-X index, smp_affinity_list) of each active channel, in channel order.
fn channel_vectors(t: &QueueTable) -> Vec<(u16, String)> {
    t.rows.iter().map(|r| (r.msix_index, r.cpus.as_ref().map(ToString::to_string).unwrap_or_default())).collect()
}

/// The link came up (carrier 1 after `ip link set up`), `ethtool -L combined 4`
/// succeeded and left 4 channels, no RQ fence timed out (mana_fence_rq() waits
/// 10 s for the fence CQE and then logs "Failed to fence RQ"), and the kernel
/// logged no warning.
fn assert_link_and_channels(o: &RunOutcome, what: &str) {
    let r = &o.report;
    assert_eq!(r.netdev.as_deref(), Some("eth0"), "{what}: no netdev");
    assert_eq!(r.carrier, Some(true), "{what}: no carrier after ip link set up");
    assert_eq!(r.ethtool_status, Some(0), "{what}: ethtool -L failed");
    assert_eq!(r.channels, Some(4), "{what}: ethtool -l shows another channel count");
    assert!(!r.dmesg.iter().any(|l| l.contains("Failed to fence RQ")), "{what}: {:#?}", r.dmesg);
    assert!(r.warnings.is_empty(), "{what}: kernel warnings: {:#?}", r.warnings);
}

/// Seed 000 (Case 1): with 4 channels set by ethtool on the default 9-vector
/// table, channels 0-3 use EQs with eq_pci_msix_index 1-4 ((i + 1) %
/// num_msix_usable: mana_create_eq(), mana_en.c 6.12), whose irq_setup()
/// affinities are the sibling groups 0-1, 2-3, 4-5, 6-7.
#[test]
fn link_up_then_ethtool_sets_four_channels_on_seed_000_case_1_vectors_on_linux_6_12() {
    let o = run("seed-000-ethtool", "6.12", false);
    assert_eq!(o.verdict.status, Status::Pass);
    assert_link_and_channels(&o, "6.12");
    let t = o.queues.as_ref().expect("queue table");
    let want = [(1, "0-1"), (2, "2-3"), (3, "4-5"), (4, "6-7")].map(|(i, c)| (i, c.to_string()));
    assert_eq!(channel_vectors(t), want);
}

/// Linux 6.1: the same channels and vectors, but one CPU per vector:
/// cpumask_local_spread(i, node) for MSI-X index i (mana_gd_setup_irqs(),
/// gdma_main.c 6.1), so vectors 1-4 are CPUs 1-4 (seed 000 Case 2, shifted
/// by the HWC's vector on CPU 0).
#[test]
fn link_up_then_ethtool_sets_four_channels_one_cpu_per_vector_on_linux_6_1() {
    let o = run("seed-000-ethtool", "6.1", false);
    assert_eq!(o.verdict.status, Status::Pass);
    assert_link_and_channels(&o, "6.1");
    let t = o.queues.as_ref().expect("queue table");
    let want = [(1, "1"), (2, "2"), (3, "3"), (4, "4")].map(|(i, c)| (i, c.to_string()));
    assert_eq!(channel_vectors(t), want);
}

/// Linux 7.x: ethtool -L destroys and re-creates the EQs (they belong to the
/// port: mana_alloc_queues()); without MSI-X sharing each takes the first
/// free vector of the bitmap (mana_gd_get_gic()), so vectors 1-4 again.
/// With 9 usable vectors > 8 CPUs the queue vectors were spread one per CPU
/// (mana_irq_setup_linear(), gdma_main.c 7.3): CPUs 0-3.
#[test]
fn link_up_then_ethtool_recreates_eqs_on_four_channels_on_linux_7() {
    let o = run("seed-000-ethtool", "7.x", false);
    assert_eq!(o.verdict.status, Status::Pass);
    assert_link_and_channels(&o, "7.x");
    let t = o.queues.as_ref().expect("queue table");
    let want = [(1, "0"), (2, "1"), (3, "2"), (4, "3")].map(|(i, c)| (i, c.to_string()));
    assert_eq!(channel_vectors(t), want);
    assert!(t.idle_eqs.is_empty(), "7.x destroys the EQs of dropped channels: {t:?}");
}

/// insmod → up → ethtool -L 4 → (report stage) → rmmod → insmod → up →
/// ethtool -L 4 → report: rmmod succeeds, the second probe passes like the
/// first with the same IRQ and queue tables, and reading every
/// affinity_hint before and after rmmod leaves no warning in the kernel log
/// (free_irq() WARNs about a hint left set).
fn reprobe_is_clean(kernel: &str) {
    let o = run("seed-000-ethtool", kernel, true);
    assert_eq!(o.report.rmmod_status, Some(0), "rmmod mana");
    assert_eq!(o.stages.len(), 1, "one first-probe stage");
    let first = &o.stages[0];
    assert_eq!(first.name, "first-probe");
    assert_eq!(first.verdict.status, Status::Pass, "first probe");
    assert_eq!(o.verdict.status, Status::Pass, "re-probe");
    assert_link_and_channels(&o, "re-probe");
    assert_eq!(first.report.carrier, Some(true), "first probe: carrier");
    let cpus = |v: &harness::verdict::Verdict| {
        v.vectors
            .iter()
            .map(|r| (r.name.clone(), r.observed.as_ref().map(|o| o.smp_affinity_list.to_string())))
            .collect::<Vec<_>>()
    };
    assert_eq!(cpus(&first.verdict), cpus(&o.verdict), "IRQ tables of the two probes");
    let (a, b) = (first.queues.as_ref().expect("first queue table"), o.queues.as_ref().expect("queue table"));
    assert_eq!(channel_vectors(a), channel_vectors(b), "queue tables of the two probes");
    assert_eq!(b.rows.len(), 4);
}

#[test]
fn rmmod_and_reprobe_keep_the_irq_and_queue_tables_without_kernel_warnings_on_linux_6_12() {
    reprobe_is_clean("6.12");
}

#[test]
fn rmmod_and_reprobe_keep_the_irq_and_queue_tables_without_kernel_warnings_on_linux_6_1() {
    reprobe_is_clean("6.1");
}

#[test]
fn rmmod_and_reprobe_keep_the_irq_and_queue_tables_without_kernel_warnings_on_linux_7() {
    reprobe_is_clean("7.x");
}

#[test]
fn rmmod_and_reprobe_keep_the_irq_and_queue_tables_without_kernel_warnings_on_linux_6_12_min() {
    // The minimal kernel needs CONFIG_MODULE_UNLOAD for `rmmod mana`.
    reprobe_is_clean("6.12-min");
}

/// (name without `@pci:…`, smp_affinity_list, affinity_hint) of each MANA IRQ.
fn irqs(o: &harness::guest_protocol::GuestReport) -> Vec<(String, String, String)> {
    o.msix
        .iter()
        .map(|i| {
            let name = i.name.split('@').next().unwrap_or_default().to_owned();
            let cpus = i.affinity.as_deref().map(harness::guest_protocol::format_cpulist).unwrap_or_default();
            (name, cpus, i.hint.clone().unwrap_or_default())
        })
        .collect()
}

/// topologies/scen-cpu-hotplug.toml on the minimal 6.12: with CPUs 0-2,4-6 online at
/// the probe (maxcpus=7, CPU 3 offlined first) MANA allocates 7 vectors and
/// irq_setup() uses the online sibling groups {0-1}, {2}, {4-5}, {6}; offlining CPU 2
/// gives the two vectors on {2} every online CPU (migrate_one_irq()); onlining 3 and
/// 7 moves nothing back, but the hint of the vector on {6}, a pointer to CPU 6's
/// sibling map, now reads 6-7.
#[test]
fn cpus_offline_at_probe_and_hotplugged_after_it_on_linux_6_12_min() {
    let o = run("scen-cpu-hotplug", "6.12-min", false);
    assert_eq!(o.verdict.status, Status::Pass);
    let names: Vec<&str> = o.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["probe", "offline-after"]);
    let cpus = |r: &harness::guest_protocol::GuestReport| irqs(r).into_iter().map(|(_, c, _)| c).collect::<Vec<_>>();
    assert_eq!(cpus(&o.stages[0].report), ["0", "0-1", "2", "0-1", "2", "4-5", "6"]);
    let after = ["0", "0-1", "0-1,4-6", "0-1", "0-1,4-6", "4-5", "6"];
    assert_eq!(cpus(&o.stages[1].report), after);
    assert_eq!(cpus(&o.report), after);
    assert_eq!(o.report.cpus.keys().copied().collect::<Vec<_>>(), [0, 1, 3, 4, 5, 6, 7]);
    assert_eq!(o.stages[0].report.cpu_state.present.as_deref(), Some(&[0, 1, 2, 3, 4, 5, 6, 7][..]));
    // affinity_hint is a hex mask: CPU 6's sibling map gained CPU 7 (0xc0).
    assert_eq!(irqs(&o.report)[6].2.trim_start_matches('0'), "c0");
    let check = o.verdict.checks.iter().find(|c| c.name == harness::verdict::CPU_STATE_CHECK).expect("cpu_state check");
    assert_eq!(check.status, harness::verdict::CheckStatus::Pass, "{check:?}");
}

/// topologies/scen-cpu-policies.toml on Debian's 6.12 (built with CONFIG_CPU_ISOLATION
/// and CONFIG_NO_HZ_FULL; the minimal kernel has neither: the next test): the
/// guest took irqaffinity=4-5, isolcpus=managed_irq,domain,2-3 and nohz_full=6-7
/// (nothing but the kernel's HOME and TERM in /init's environment), and
/// with the NIC on a memory-only node MANA leaves its queue vectors at
/// irq_default_affinity = 0,4-5 (the boot CPU is added), HWC on CPU 4.
#[test]
fn irqaffinity_places_the_vectors_mana_leaves_alone_and_isolcpus_does_not_on_linux_6_12() {
    let o = run("scen-cpu-policies", "6.12", false);
    assert_eq!(o.verdict.status, Status::Pass);
    let cpus = irqs(&o.report).into_iter().map(|(_, c, _)| c).collect::<Vec<_>>();
    assert_eq!(cpus[0], "4");
    assert!(cpus[1..].iter().all(|c| c == "0,4-5"), "{cpus:?}");
    let cs = &o.report.cpu_state;
    assert_eq!(cs.isolated.as_deref(), Some(&[2, 3][..]));
    assert_eq!(cs.nohz_full.as_deref(), Some(&[6, 7][..]));
    assert_eq!(cs.default_smp_affinity.as_deref(), Some(&[0, 4, 5][..]));
    assert_eq!(o.report.init_env, ["HOME=/", "TERM=linux"]);
}

/// The same file on the minimal 6.12 (no CONFIG_CPU_ISOLATION, no CONFIG_NO_HZ_FULL):
/// the kernel takes irqaffinity= (the same IRQ table) and hands isolcpus= and
/// nohz_full= to /init as environment variables (init/main.c unknown_bootoption());
/// `isolated` is empty and there is no `nohz_full` file. `cpu_state` passes and names
/// both as ignored, with that evidence.
#[test]
fn a_kernel_without_cpu_isolation_ignores_isolcpus_and_nohz_full_and_cpu_state_says_so_on_linux_6_12_min() {
    let o = run("scen-cpu-policies", "6.12-min", false);
    assert_eq!(o.verdict.status, Status::Pass);
    let cpus = irqs(&o.report).into_iter().map(|(_, c, _)| c).collect::<Vec<_>>();
    assert!(cpus[1..].iter().all(|c| c == "0,4-5"), "{cpus:?}");
    let cs = &o.report.cpu_state;
    assert_eq!((cs.isolated.as_deref(), cs.nohz_full.as_deref()), (Some(&[][..]), None));
    assert_eq!(o.report.init_env, ["HOME=/", "TERM=linux", "isolcpus=managed_irq,domain,2-3", "nohz_full=6-7"]);
    let check = o.verdict.checks.iter().find(|c| c.name == harness::verdict::CPU_STATE_CHECK).expect("cpu_state check");
    assert_eq!(check.status, harness::verdict::CheckStatus::Pass, "{check:?}");
    for note in [
        "isolcpus=managed_irq,domain,2-3 ignored: this kernel was built without CONFIG_CPU_ISOLATION",
        "nohz_full=6-7 ignored: this kernel was built without CONFIG_NO_HZ_FULL",
    ] {
        assert!(check.message.contains(note), "{}", check.message);
    }
}
