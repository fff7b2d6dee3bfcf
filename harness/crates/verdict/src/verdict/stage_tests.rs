//! A rig run's stages (link and queue table at the first probe and at the report) in
//! every report format, and the queue checks. The queue tables are built the way
//! `rig::queues::queue_table` joins the device's EQs with the guest's IRQs.

use super::fixtures::*;
use super::*;

/// Seed 002's machine on Linux 6.12 after `ethtool -L eth0 combined 4` (seed 000's
/// experiment): the probe created 8 Ethernet EQs (ids 1-8) with eq_pci_msix_index
/// (i + 1) % 9 (mana_create_eq(), mana_en.c 6.12); channels 0-3 keep EQs 1-4, i.e.
/// vectors 1-4 = mana_q0..q3 on seed 002's sibling groups 0-1, 2-3, 0-1, 2-3; EQs 5-8
/// stay without queues. SQ/RQ ids are the device's (any distinct ids would do).
fn four_channels(run: &Run) -> QueueTable {
    let rows = (0..4u16)
        .map(|ch| {
            let i = usize::from(ch);
            let v = &run.observed.vectors[i + 1];
            QueueRow {
                channel: i,
                sqs: vec![10 + u32::from(ch)],
                rqs: vec![30 + u32::from(ch)],
                eq: u32::from(ch) + 1,
                msix_index: ch + 1,
                irq: Some(v.irq),
                name: Some(format!("mana_q{ch}")),
                cpus: Some(v.smp_affinity.clone()),
                effective: v.effective.clone(),
            }
        })
        .collect();
    QueueTable { rows, idle_eqs: vec![5, 6, 7, 8], vports: vec![VportQueues { vport: 0, sqs: 4, rqs: 4 }] }
}

/// The link as `/init` reports it; the guest times are illustrative (any increasing
/// values), the rest is what a clean run with `--channels 4` shows.
fn facts(table: Option<QueueTable>, rmmod: Option<i32>) -> StageFacts {
    StageFacts {
        link: StageLink {
            netdev: Some("eth0".to_owned()),
            ifup_s: Some(3.1),
            carrier: Some(true),
            carrier_s: Some(3.5),
            ifup_to_carrier_s: Some(0.6),
            ethtool_status: Some(0),
            ethtool_s: Some(4.0),
            channels: Some(4),
        },
        rmmod_status: rmmod,
        warnings: Vec::new(),
        table,
        online: None,
        vectors: None,
    }
}

/// `--reprobe` on seed 002 / 6.12 with 4 channels: the first probe and the re-probe
/// build the same tables, unless `second` changes the re-probe's queue table.
fn reprobe_run(second: impl FnOnce(&mut QueueTable)) -> Verdict {
    let run = Run::new("seed-002", "6.12");
    let first = run.judge();
    let mut v = run.judge();
    let mut t = four_channels(&run);
    second(&mut t);
    v.add_stages(vec![("first-probe", &first, facts(Some(four_channels(&run)), None))], facts(Some(t), Some(0)));
    v
}

/// The cells after `prefix` of the first line starting with it in the report's queue
/// table (after its title line).
fn row_cells<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    let line = text
        .lines()
        .skip_while(|l| !l.contains("Queues at the report ("))
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in the report's queue table:\n{text}"));
    line[prefix.len()..].split_whitespace().collect()
}

#[test]
fn reprobe_with_the_same_tables_passes_the_three_queue_checks() {
    let v = reprobe_run(|_| {});
    assert_eq!(v.status, Status::Pass, "{:#?}", v.failures().collect::<Vec<_>>());
    // judge()'s 15 checks (seed_002_on_6_12_as_the_model_predicts_passes), then the rig's.
    let names: Vec<&str> = v.checks[15..].iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["queue_irqs", "same_irq_table_as_first_probe", "same_queue_table_as_first_probe"]);
    assert!(v.checks[15..].iter().all(|c| c.status == CheckStatus::Pass));
    assert_eq!(
        check(&v, "queue_irqs").message,
        "every active channel's EQ vector has a guest IRQ (channels first-probe: 4, report: 4)"
    );
}

#[test]
fn a_reprobe_that_moves_a_channel_fails_naming_the_channel() {
    // The re-probe puts channel 1 (mana_q1) on 4-5 instead of 2-3.
    let v = reprobe_run(|t| t.rows[1].cpus = Some(mask("4-5")));
    assert_eq!(v.status, Status::Fail);
    let c = check(&v, "same_queue_table_as_first_probe");
    assert_eq!(c.status, CheckStatus::Fail);
    assert_eq!(
        c.message,
        "the queue table at the report differs from first-probe: channel 1: MSI-X 2, CPUs 2-3 at first-probe, MSI-X 2, CPUs 4-5 at the report"
    );
    // The IRQ tables themselves were the same.
    assert_eq!(check(&v, "same_irq_table_as_first_probe").status, CheckStatus::Pass);
}

#[test]
fn a_channel_whose_vector_has_no_guest_irq_fails_queue_irqs() {
    let v = reprobe_run(|t| {
        t.rows[3].irq = None;
        t.rows[3].name = None;
        t.rows[3].cpus = None;
        t.rows[3].effective = None;
    });
    let c = check(&v, "queue_irqs");
    assert_eq!(c.status, CheckStatus::Fail);
    assert_eq!(
        c.message,
        "1 active channel without a guest IRQ for its vector: report: channel 3 (EQ 4, MSI-X 4) has no guest IRQ for its vector"
    );
    assert_eq!(v.status, Status::Fail);
}

#[test]
fn a_first_probe_that_failed_makes_the_irq_tables_differ() {
    let mut run = Run::new("seed-002", "6.12");
    let report = run.judge();
    run.set_affinity(4, "4-5");
    let first = run.judge();
    assert_eq!(first.status, Status::Fail);
    let mut v = report;
    let t = four_channels(&Run::new("seed-002", "6.12"));
    v.add_stages(vec![("first-probe", &first, facts(Some(t.clone()), None))], facts(Some(t), Some(0)));
    let c = check(&v, "same_irq_table_as_first_probe");
    assert_eq!(c.status, CheckStatus::Fail);
    assert_eq!(
        c.message,
        "the IRQ table at the report differs from first-probe: verdict FAIL at first-probe, PASS at the report"
    );
    assert_eq!(c.detail, ["mana_q3: 4-5 at first-probe, 2-3 at the report"]);
    let stages = v.queues.as_ref().expect("stages");
    assert_eq!((stages[0].status, stages[1].status), (Status::Fail, Status::Pass));
}

#[test]
fn without_a_device_snapshot_the_queue_checks_are_skipped_and_the_table_not_known() {
    let mut v = Run::new("seed-002", "6.12").judge();
    v.add_stages(Vec::new(), facts(None, None));
    assert_eq!(v.status, Status::Pass);
    assert_eq!(check(&v, "queue_irqs").status, CheckStatus::Skip);
    let text = render(&v, Format::Human).expect("human");
    assert!(text.contains("\nQueues at the report: not known (the device status was not taken)\n"), "{text}");
    let value = serde_json::to_value(&v).expect("json");
    assert!(value["queues"][0]["table"].is_null(), "{value}");
}

#[test]
fn json_carries_each_stage_s_link_and_queue_table() {
    let v = reprobe_run(|_| {});
    let text = render(&v, Format::Json).expect("json");
    let back: Verdict = serde_json::from_str(&text).expect("schema");
    assert_eq!(back, v);
    let value: serde_json::Value = serde_json::from_str(&text).expect("json");
    let q = &value["queues"];
    assert_eq!((q[0]["stage"].as_str(), q[1]["stage"].as_str()), (Some("first-probe"), Some("report")));
    assert_eq!(q[1]["status"], "pass");
    assert_eq!(q[1]["rmmod_status"], 0);
    assert_eq!(q[1]["link"]["netdev"], "eth0");
    assert_eq!(q[1]["link"]["carrier"], true);
    assert_eq!(q[1]["link"]["channels"], 4);
    assert_eq!(q[1]["table"]["idle_eqs"], serde_json::json!([5, 6, 7, 8]));
    // Channel 3: EQ 4, MSI-X 4 = mana_q3, IRQ 28 (24 + 4), seed 002's 2-3.
    let row = &q[1]["table"]["rows"][3];
    assert_eq!(
        (row["channel"].as_u64(), row["eq"].as_u64(), row["msix_index"].as_u64(), row["irq"].as_u64()),
        (Some(3), Some(4), Some(4), Some(28))
    );
    assert_eq!((row["name"].as_str(), row["cpus"].as_str()), (Some("mana_q3"), Some("2-3")));
    // Without stages (not a rig run) the field is absent and existing fields are as before.
    let plain = serde_json::to_value(Run::new("seed-002", "6.12").judge()).expect("json");
    assert!(plain.get("queues").is_none(), "{plain}");
    assert_eq!(plain["checks"].as_array().map(Vec::len), Some(15));
}

#[test]
fn ktap_shows_the_queue_tables_as_diagnostics_and_the_queue_checks_as_subtests() {
    let v = reprobe_run(|_| {});
    let text = render(&v, Format::Ktap).expect("ktap");
    assert_eq!(parse_ktap(&text), [true]);
    assert!(text.contains("\n  # == stage first-probe: PASS\n"), "{text}");
    assert!(text.contains(
        "\n  # link: eth0 up at 3.10 s, carrier 1 at 3.50 s (0.60 s from the start of ip link set up, guest clock); ethtool -L exit 0 at 4.00 s, now 4 combined channels\n"
    ), "{text}");
    assert!(
        text.contains("\n  # Queues at the report (device view: SQ/RQ -> CQ -> EQ -> eq_pci_msix_index; guest IRQ):\n"),
        "{text}"
    );
    assert_eq!(row_cells(&text, "  # Channel "), ["SQ", "RQ", "EQ", "MSI-X", "IRQ", "Name", "CPUs", "Effective"]);
    assert_eq!(row_cells(&text, "  # 3 "), ["13", "33", "4", "4", "28", "mana_q3", "2-3", "2"]);
    assert!(text.contains("\n  # Ethernet EQs without queues: 5,6,7,8\n"), "{text}");
    assert!(text.contains("\n  # first-probe vs report: IRQ table same, queue table same\n"), "{text}");
    assert!(
        text.contains(
            "\n  ok 16 queue_irqs\n  ok 17 same_irq_table_as_first_probe\n  ok 18 same_queue_table_as_first_probe\n"
        ),
        "{text}"
    );

    let v = reprobe_run(|t| t.rows[1].cpus = Some(mask("4-5")));
    let text = render(&v, Format::Ktap).expect("ktap");
    assert_eq!(parse_ktap(&text), [false]);
    assert!(text.contains("\n  # first-probe vs report: IRQ table same, queue table DIFFERS\n"), "{text}");
    assert!(text.contains("\n  not ok 18 same_queue_table_as_first_probe\n"), "{text}");
}

#[test]
fn junit_puts_the_queue_tables_in_system_out_and_only_real_checks_in_test_cases() {
    let v = reprobe_run(|_| {});
    let xml = render(&v, Format::Junit).expect("junit");
    let report = quick_junit::Report::deserialize_from_str(&xml).expect("valid JUnit XML");
    let suite = &report.test_suites[0];
    // The 15 checks of judge() and the 3 queue checks; the tables are no test cases.
    assert_eq!((suite.tests, suite.failures), (18, 0));
    let names: Vec<&str> = suite.test_cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names[15..], ["queue_irqs", "same_irq_table_as_first_probe", "same_queue_table_as_first_probe"]);
    let out = suite.system_out.as_ref().expect("system-out").as_str();
    assert!(out.contains("Queues at stage first-probe (device view"), "{out}");
    assert_eq!(row_cells(out, "3 "), ["13", "33", "4", "4", "28", "mana_q3", "2-3", "2"]);
    assert!(out.contains("\nrmmod mana: exit 0\n"), "{out}");
}

/// A CPU hotplug whose only failure is at the `probe` stage (seed 002 / 6.12; the
/// probe's table moves mana_q3 to 4-5, the report's is the model's): the stage's
/// check fails, naming the stage's failed check, and the verdict line counts it.
#[test]
fn a_failing_hotplug_stage_is_a_failed_check_on_the_verdict_line() {
    let mut run = Run::new("seed-002", "6.12");
    let mut v = run.judge();
    run.set_affinity(4, "4-5");
    let at_probe = run.judge();
    assert_eq!((v.status, at_probe.status), (Status::Pass, Status::Fail));
    let probe = StageFacts { online: Some(mask("0-7")), ..facts(None, None) };
    v.add_stages(vec![("probe", &at_probe, probe)], facts(None, None));
    assert_eq!(v.status, Status::Fail);
    let c = check(&v, &stage_irq_table_check("probe"));
    assert_eq!(c.name, "irq_table_at_probe");
    assert_eq!(c.status, CheckStatus::Fail);
    assert_eq!(
        c.message,
        "at stage probe (online CPUs 0-7) the IRQ table is not the model's for that CPU state: 1 of 15 checks failed: mana_q3"
    );
    assert_eq!(c.detail.len(), 1);
    assert!(c.detail[0].starts_with("mana_q3: "), "{:?}", c.detail);
    let text = render(&v, Format::Human).expect("human");
    // judge()'s 15 checks, queue_irqs (skipped: no queue table) and the stage's.
    assert!(text.ends_with("verdict: FAIL (1 of 17 checks failed: irq_table_at_probe)\n"), "{text}");
    assert!(
        text.contains("\nprobe: IRQ table against the model for the CPUs online then: FAIL (irq_table_at_probe)\n"),
        "{text}"
    );
    let ktap = render(&v, Format::Ktap).expect("ktap");
    assert!(ktap.contains("  not ok 17 irq_table_at_probe\n"), "{ktap}");
}

/// The same stage as the model predicts: a passing check, as every check of the stage.
#[test]
fn a_hotplug_stage_as_the_model_predicts_passes_its_check() {
    let run = Run::new("seed-002", "6.12");
    let (mut v, at_probe) = (run.judge(), run.judge());
    v.add_stages(vec![("probe", &at_probe, facts(None, None))], facts(None, None));
    assert_eq!(v.status, Status::Pass);
    let c = check(&v, "irq_table_at_probe");
    assert_eq!(c.status, CheckStatus::Pass);
    assert_eq!(c.message, "at stage probe the IRQ table is the model's for that CPU state (15 of 15 checks passed)");
}

/// A verdict without the stage check (a document written before it existed) still
/// names the failed stage rather than saying that 0 checks failed.
#[test]
fn a_fail_without_a_failed_check_names_the_failed_stage() {
    let run = Run::new("seed-002", "6.12");
    let (mut v, at_probe) = (run.judge(), run.judge());
    v.add_stages(vec![("probe", &at_probe, facts(None, None))], facts(None, None));
    v.checks.retain(|c| c.name != "irq_table_at_probe");
    v.status = Status::Fail;
    v.queues.as_mut().expect("stages")[0].status = Status::Fail;
    let text = render(&v, Format::Human).expect("human");
    assert!(text.ends_with("verdict: FAIL (stage probe failed; none of 16 checks did)\n"), "{text}");
}

#[test]
fn human_shows_the_stages_before_the_verdict_line() {
    let v = reprobe_run(|_| {});
    let text = render(&v, Format::Human).expect("human");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.last().is_some_and(|l| l.starts_with("verdict: PASS (18 of 18 checks passed")), "{text}");
    let tail = &lines[lines.len() - 4..lines.len() - 1];
    assert_eq!(
        tail,
        ["rmmod mana: exit 0", "first-probe vs report: IRQ table same, queue table same", "kernel warnings: none"]
    );
}

#[test]
fn the_schema_doc_names_every_queues_field() {
    let value = serde_json::to_value(reprobe_run(|_| {})).expect("json");
    let mut all = std::collections::BTreeSet::from(["queues".to_owned()]);
    json_keys(&value["queues"], &mut all);
    let doc = include_str!("format/report-schema.md");
    let undocumented: Vec<&String> = all.iter().filter(|k| !doc.contains(&format!("`{k}`"))).collect();
    assert!(undocumented.is_empty(), "fields missing from report-schema.md: {undocumented:?}");
    for name in ["queue_irqs", "same_irq_table_as_first_probe", "same_queue_table_as_first_probe"] {
        assert!(doc.contains(&format!("`{name}`")), "check {name} missing from report-schema.md");
    }
}
