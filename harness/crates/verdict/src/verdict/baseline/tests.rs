//! Baselines on the model's tables: 6.1 (K0) against 6.12 on seed 002's and seed 001's
//! machines.

use super::*;
use crate::verdict::fixtures::Run;

fn baseline(file: &str, k0: &str, k1: &str) -> Baseline {
    let (before, after) = (Run::new(file, k0), Run::new(file, k1));
    compare(&before.judge(), &after.judge()).expect("same machine")
}

fn cpus(p: &Option<Placement>) -> String {
    p.as_ref().map_or("-".to_owned(), |p| p.cpus.to_cpulist())
}

#[test]
fn seed_002_from_6_1_to_6_12_moves_every_queue_to_a_sibling_group() {
    let b = baseline("seed-002", "6.1", "6.12");
    // 6.1: HWC 0, q0..q7 on 1 2 3 4 5 6 7 0; 6.12: HWC 0, q0..q7 on 0-1 2-3 0-1 2-3 4-5 6-7 4-5 6-7.
    assert_eq!(b.unchanged, 1, "the HWC stays on CPU 0");
    let moves: Vec<(Option<u32>, String, String)> =
        b.moved.iter().map(|m| (m.msix_index, cpus(&m.before), cpus(&m.after))).collect();
    let want = [
        (1, "1", "0-1"),
        (2, "2", "2-3"),
        (3, "3", "0-1"),
        (4, "4", "2-3"),
        (5, "5", "4-5"),
        (6, "6", "6-7"),
        (7, "7", "4-5"),
        (8, "0", "6-7"),
    ];
    let want: Vec<(Option<u32>, String, String)> =
        want.iter().map(|(i, x, y)| (Some(*i), (*x).to_owned(), (*y).to_owned())).collect();
    assert_eq!(moves, want);
    let q3 = &b.moved[3];
    let (before, after) = (q3.before.as_ref().expect("before"), q3.after.as_ref().expect("after"));
    assert_eq!((before.name.as_str(), &before.nodes[..], before.hop), ("mana_q3", &[1][..], Some(1)));
    assert_eq!((&after.nodes[..], &after.cores[..], after.hop), (&[0][..], &[1][..], Some(0)));
    // Effective CPUs (first of each mask): 6.1 puts IRQs on both threads of every core;
    // 6.12 on one thread of each.
    assert_eq!((b.before.cores_with_busy_siblings, b.after.cores_with_busy_siblings), (4, 0));
    assert_eq!((b.before.outside_nic_node, b.after.outside_nic_node), (4, 4));
    assert_eq!((b.before.vectors, b.after.vectors), (9, 9));
    let per_node = |m: &Metrics| m.per_node.iter().map(|n| n.irqs).collect::<Vec<_>>();
    assert_eq!((per_node(&b.before), per_node(&b.after)), (vec![5, 4], vec![5, 4]));
    assert!(b.checks().iter().all(|c| c.status == CheckStatus::Pass), "{:#?}", b.checks());
    let text = b.to_text();
    for want in [
        "baseline seed-002: 6.1 (6.1.192-3 (model)) vs patched 6.12 (6.12.117-1 (model))",
        "vectors moved: 8 (1 on the same CPUs)",
        "4      mana_q3  4 (node 1, core 2, hop 1; fired on 4)",
        "2-3 (node 0, core 1, hop 0; fired on 2)",
        "cores whose SMT siblings both took IRQs  4      0",
    ] {
        assert!(text.contains(want), "{want:?} in\n{text}");
    }
}

#[test]
fn going_back_from_6_12_to_6_1_fails_the_sibling_check() {
    let b = baseline("seed-002", "6.12", "6.1");
    let failed: Vec<String> =
        b.checks().into_iter().filter(|c| c.status == CheckStatus::Fail).map(|c| c.name).collect();
    assert_eq!(failed, ["baseline_busy_siblings"]);
    let c = b.checks().into_iter().find(|c| c.name == "baseline_busy_siblings").expect("check");
    assert_eq!(
        c.message,
        "seed-002: cores whose SMT siblings both took IRQs: 0 on 6.12, 4 on 6.1 (worse than the baseline)"
    );
}

#[test]
fn seed_001_from_6_1_to_6_12_stays_on_node_0_and_stops_sharing_cores() {
    let b = baseline("seed-001-azure-128", "6.1", "6.12");
    // 65 vectors on 128 CPUs: 6.1 gives CPUs 0..64 one each (CPU 64 on node 1); 6.12 puts
    // all 65, the HWC too (nvec <= CPUs), through irq_setup(): node 0's 32 groups twice,
    // the 65th on node 1 (64-65). Every vector moves.
    assert_eq!((b.before.vectors, b.after.vectors), (65, 65));
    assert_eq!((b.unchanged, b.moved.len()), (0, 65));
    let pairs = |i: usize| (cpus(&b.moved[i].before), cpus(&b.moved[i].after));
    assert_eq!(pairs(0), ("0".to_owned(), "0-1".to_owned()));
    assert_eq!(pairs(33), ("33".to_owned(), "2-3".to_owned()));
    assert_eq!(pairs(64), ("64".to_owned(), "64-65".to_owned()));
    assert_eq!((b.before.outside_nic_node, b.after.outside_nic_node), (1, 1));
    assert_eq!((b.before.cores_with_busy_siblings, b.after.cores_with_busy_siblings), (32, 0));
    assert_eq!((b.before.cores_with_irqs, b.after.cores_with_irqs), (33, 33));
    assert_eq!((b.before.most_on_one_core, b.after.most_on_one_core), (2, 2));
}

#[test]
fn observations_compare_like_verdicts_and_across_vector_naming_schemes() {
    let (before, after) = (Run::new("seed-002", "6.12"), Run::new("seed-002", "7.x"));
    let from_obs = compare_observed(&before.topo, &before.observed, &after.observed);
    let from_verdicts = compare(&before.judge(), &after.judge()).expect("same machine");
    assert_eq!(from_obs, from_verdicts);
    // 7.x names vector 4 mana_msi4, 6.12 mana_q3: matched by MSI-X index.
    let m4 = from_obs.moved.iter().find(|m| m.msix_index == Some(4)).expect("vector 4 moved");
    assert_eq!(m4.before.as_ref().map(|p| p.name.as_str()), Some("mana_q3"));
    assert_eq!(m4.after.as_ref().map(|p| p.name.as_str()), Some("mana_msi4"));
    let json = serde_json::to_string(&from_obs).expect("json");
    assert_eq!(serde_json::from_str::<Baseline>(&json).expect("back"), from_obs);
}

#[test]
fn a_vector_only_one_kernel_has_is_listed_as_added() {
    let before = Run::new("seed-002", "6.12");
    let mut after = Run::new("seed-002", "6.12");
    after.observed.vectors.pop();
    let b = compare(&before.judge(), &after.judge()).expect("same machine");
    assert_eq!(b.moved.len(), 1);
    assert_eq!((b.moved[0].msix_index, b.moved[0].after.is_none()), (Some(8), true));
    assert!(b.to_text().contains("8      mana_q7  6-7 (node 1, core 3, hop 1; fired on 6)  -"), "{}", b.to_text());
    assert_eq!(b.checks()[0].status, CheckStatus::Fail, "a lost vector is worse");
}

#[test]
fn different_machines_are_refused() {
    let (a, b) = (Run::new("seed-002", "6.12"), Run::new("r01-nic-node1", "6.12"));
    let e = compare(&a.judge(), &b.judge()).expect_err("different topologies");
    assert_eq!(
        e.to_string(),
        "baseline run seed-002@6.12 and patched run r01-nic-node1@6.12 are not of the same machine (topology seed-002 vs r01-nic-node1)"
    );
}
