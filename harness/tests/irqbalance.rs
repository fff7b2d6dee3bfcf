//! irqbalance in the guest (`[scenario] irqbalance`, `run --irqbalance`): the driver's
//! placement is judged against the model before irqbalance starts, then Debian's
//! irqbalance 1.9.4 runs and the NIC's IRQs are sampled once a guest second. It
//! boots Debian's 6.12 (the minimal kernels have no AF_UNIX sockets, without which
//! irqbalance exits at start). Needs the cache that `cargo xtask setup` fills.

mod rig_support;

use harness::verdict::{CheckStatus, Status, IRQBALANCE_RAN};
use rig_support::{request, run_printed};

/// topologies/scen-irqbalance.toml (seed 002's machine) on Debian's 6.12: the
/// report's table is still seed 002's (irq_setup(), read before irqbalance
/// started), irqbalance ran through the sampling, sample 0 is the driver's
/// placement, and every smp_affinity_list irqbalance wrote lies on the NIC's node
/// 0: irqbalance(1) places a device's IRQs on the NUMA node sysfs gives for it
/// (`numa_node`). Whether it moved an IRQ within the few guest seconds is
/// reported, not asserted (its first scan comes later on a loaded host).
#[test]
fn irqbalance_runs_after_the_driver_and_keeps_the_irqs_on_the_nics_node_on_linux_6_12() {
    let o = run_printed(&request("scen-irqbalance", "6.12"), "scen-irqbalance on 6.12");
    assert_eq!(o.verdict.status, Status::Pass, "the driver's placement is seed 002's table");
    let ran = o.verdict.checks.iter().find(|c| c.name == IRQBALANCE_RAN).expect("irqbalance_ran check");
    assert_eq!(ran.status, CheckStatus::Pass, "{ran:?}");
    let ib = o.verdict.irqbalance.as_ref().expect("irqbalance report");
    assert!(ib.samples >= 2, "{ib:?}");
    assert_eq!(ib.irqs.len(), o.observed.vectors.len(), "every MANA IRQ is sampled");
    for irq in &ib.irqs {
        let v = o.observed.vectors.iter().find(|v| v.irq == irq.irq).expect("a MANA vector");
        assert_eq!(irq.driver, v.smp_affinity.to_string(), "sample 0 is the driver's placement: {irq:?}");
        let moved_from = irq.samples.iter().position(|s| s.moved);
        for s in irq.samples.iter().skip(moved_from.unwrap_or(irq.samples.len())) {
            assert_eq!(s.nodes, [0], "irqbalance keeps {} on the NIC's node: {s:?}", irq.name);
        }
    }
}
