//! `run --irqbalance`: how Debian's irqbalance moved the NIC's IRQs in the guest after
//! the driver placed them. Reported per IRQ, not judged against the model (irqbalance
//! is not the driver); one check says that it really ran and was sampled.
//!
//! irqbalance 1.9.x (Debian trixie's 1.9.4: irqbalance(1), `--help`) has no
//! `--hintpolicy` and never reads `/proc/irq/N/affinity_hint`: it places every IRQ it
//! balances by its own policy (a network device's IRQs per core, from the PCI class)
//! and writes `smp_affinity`, whatever hint the driver set.

use super::check::{Check, CheckStatus};
use crate::cpulist::CpuMask;
use crate::guest_protocol::{GuestIrq, GuestIrqbalance, GuestNode, IrqbalanceState};
use crate::text::plural;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The check's name.
pub const IRQBALANCE_RAN: &str = "irqbalance_ran";

/// One sample of one IRQ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqbalanceStep {
    /// Guest seconds since irqbalance started (sample 0, before it: ≤ 0).
    pub t: f64,
    /// `smp_affinity_list` (cpulist).
    pub affinity: String,
    /// `effective_affinity_list` (cpulist).
    pub effective: String,
    /// The nodes of the `smp_affinity_list` CPUs.
    pub nodes: Vec<u32>,
    /// Whether `smp_affinity_list` differs from the previous sample's.
    pub moved: bool,
}

/// One NIC IRQ under irqbalance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqbalanceIrq {
    /// Linux IRQ number.
    pub irq: u32,
    /// Its name in `/proc/interrupts` (`mana_q0@pci:…`), `-` if none.
    pub name: String,
    /// The driver's `affinity_hint` as a cpulist (None: unreadable or empty).
    pub hint: Option<String>,
    /// `smp_affinity_list` just before irqbalance started (sample 0): the driver's placement.
    pub driver: String,
    /// Every sample in order, sample 0 first.
    pub samples: Vec<IrqbalanceStep>,
    /// Guest seconds after irqbalance started at which `smp_affinity_list` first
    /// differed from the driver's (None: never).
    pub first_move_s: Option<f64>,
}

/// What irqbalance did to the NIC's IRQs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqbalanceReport {
    /// How it ended (`stopped`, `killed`, `exited N`, `absent`, `no-af-unix`; None: no
    /// `irqbalance:` line).
    pub state: Option<String>,
    /// Samples taken (sample 0 included).
    pub samples: usize,
    /// Guest seconds from its start to the last sample.
    pub sampled_s: f64,
    /// IRQs whose `smp_affinity_list` irqbalance changed at some sample.
    pub moved: usize,
    /// Per IRQ, in IRQ order.
    pub irqs: Vec<IrqbalanceIrq>,
    /// Its output (stdout and stderr, `stderr irqbalance:` lines).
    pub log: Vec<String>,
}

/// What the report is built from.
pub struct IrqbalanceInput<'a> {
    /// The agent's irqbalance items.
    pub run: &'a GuestIrqbalance,
    /// Guest uptime when irqbalance started (`time irqbalance`).
    pub started: Option<f64>,
    /// The NIC's vectors (names and hints) as the report shows them: before irqbalance.
    pub msix: &'a [GuestIrq],
    /// The guest's nodes (their CPUs).
    pub nodes: &'a BTreeMap<u32, GuestNode>,
    /// `stderr irqbalance:` lines.
    pub log: &'a [String],
}

fn nodes_of(cpus: &[u32], nodes: &BTreeMap<u32, GuestNode>) -> Vec<u32> {
    nodes.iter().filter(|(_, n)| n.cpus.iter().any(|c| cpus.contains(c))).map(|(id, _)| *id).collect()
}

/// Guest seconds to the uptime's own precision (`/proc/uptime`: hundredths), without
/// the float noise of a difference.
fn hundredths(s: f64) -> f64 {
    (s * 100.0).round() / 100.0
}

fn cpulist(cpus: &[u32]) -> String {
    crate::guest_protocol::format_cpulist(cpus)
}

/// The report and the `irqbalance_ran` check: Pass when irqbalance ran through the
/// sampling (the agent stopped it) and at least one sample was taken while it ran.
pub fn judge_irqbalance(input: &IrqbalanceInput<'_>) -> (IrqbalanceReport, Check) {
    let run = input.run;
    let start = input.started.unwrap_or_else(|| run.samples.first().map_or(0.0, |s| s.time));
    let mut irqs = Vec::new();
    let all: std::collections::BTreeSet<u32> = run.samples.iter().flat_map(|s| s.irqs.keys().copied()).collect();
    for irq in all {
        let vector = input.msix.iter().find(|v| v.irq == irq);
        let hint = vector
            .and_then(|v| v.hint.as_deref())
            .and_then(|h| CpuMask::parse_mask_string(h).ok())
            .filter(|m| !m.is_empty())
            .map(|m| m.to_cpulist());
        let mut samples = Vec::new();
        let mut previous: Option<&[u32]> = None;
        let mut first_move_s = None;
        let mut driver = None;
        for s in &run.samples {
            let Some(now) = s.irqs.get(&irq) else { continue };
            let t = hundredths(s.time - start);
            let driver = driver.get_or_insert_with(|| now.affinity.clone());
            if first_move_s.is_none() && now.affinity != *driver {
                first_move_s = Some(t);
            }
            samples.push(IrqbalanceStep {
                t,
                affinity: cpulist(&now.affinity),
                effective: cpulist(&now.effective),
                nodes: nodes_of(&now.affinity, input.nodes),
                moved: previous.is_some_and(|p| p != now.affinity.as_slice()),
            });
            previous = Some(&now.affinity);
        }
        irqs.push(IrqbalanceIrq {
            irq,
            name: vector.map_or_else(|| "-".to_owned(), |v| v.name.clone()),
            hint,
            driver: driver.as_deref().map(cpulist).unwrap_or_default(),
            samples,
            first_move_s,
        });
    }
    let moved = irqs.iter().filter(|i| i.first_move_s.is_some()).count();
    let sampled_s = run.samples.last().map_or(0.0, |s| hundredths(s.time - start));
    let report = IrqbalanceReport {
        state: run.state.map(|s| match s {
            IrqbalanceState::Stopped => "stopped".to_owned(),
            IrqbalanceState::Killed => "killed".to_owned(),
            IrqbalanceState::Exited(rc) => format!("exited {rc}"),
            IrqbalanceState::Absent => "absent".to_owned(),
            IrqbalanceState::NoAfUnix => "no-af-unix".to_owned(),
        }),
        samples: run.samples.len(),
        sampled_s,
        moved,
        irqs,
        log: input.log.to_vec(),
    };
    let while_running = run.samples.iter().filter(|s| s.index > 0).count();
    let check = match run.state {
        Some(s) if s.ran_throughout() && while_running > 0 && !report.irqs.is_empty() => Check::new(
            IRQBALANCE_RAN,
            CheckStatus::Pass,
            format!(
                "irqbalance ran {sampled_s:.1} guest s ({} while it ran, {s}); it moved {moved} \
                 of {} (reported, not judged: irqbalance is not the driver)",
                plural(while_running, "sample"),
                plural(report.irqs.len(), "NIC IRQ")
            ),
        ),
        Some(s) => Check::new(
            IRQBALANCE_RAN,
            CheckStatus::Fail,
            format!(
                "irqbalance {s}; {} of {} while it ran",
                plural(while_running, "sample"),
                plural(report.irqs.len(), "NIC IRQ")
            ),
        ),
        None => Check::new(IRQBALANCE_RAN, CheckStatus::Fail, "the guest did not report an irqbalance run"),
    };
    let mut check = check;
    if check.status == CheckStatus::Fail {
        check.detail = input.log.iter().rev().take(5).rev().cloned().collect();
    }
    (report, check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest_protocol::IrqbalanceSample;

    fn node(cpus: &[u32]) -> GuestNode {
        GuestNode { cpus: cpus.to_vec(), mem_kib: 0, distance: Vec::new() }
    }

    fn moved_once() -> (IrqbalanceReport, Check) {
        let lines = ["10.0 24=0/0 25=1/1", "11.0 24=0/0 25=1/1", "12.0 24=2/2 25=1/1"];
        let samples = lines
            .iter()
            .enumerate()
            .map(|(k, l)| IrqbalanceSample::parse(&k.to_string(), l).expect("sample"))
            .collect();
        let run = GuestIrqbalance { state: Some(IrqbalanceState::Stopped), samples };
        let nodes = BTreeMap::from([(0, node(&[0, 1])), (1, node(&[2, 3]))]);
        let msix = [GuestIrq {
            irq: 24,
            name: "mana_hwc@pci:7".into(),
            affinity: Some(vec![0]),
            hint: Some("00000001".into()),
            effective: Some(vec![0]),
            counts: Vec::new(),
        }];
        let input = IrqbalanceInput { run: &run, started: Some(10.5), msix: &msix, nodes: &nodes, log: &[] };
        judge_irqbalance(&input)
    }

    #[test]
    fn a_move_is_marked_at_the_sample_that_shows_it_with_its_nodes() {
        let (report, check) = moved_once();
        assert_eq!(check.status, CheckStatus::Pass, "{}", check.message);
        assert_eq!(report.moved, 1);
        let irq = &report.irqs[0];
        assert_eq!((irq.driver.as_str(), irq.hint.as_deref(), irq.first_move_s), ("0", Some("0"), Some(1.5)));
        assert_eq!(irq.samples[2].nodes, vec![1]);
        assert!(irq.samples[2].moved && !irq.samples[1].moved);
        assert_eq!(report.irqs[1].first_move_s, None);
    }

    #[test]
    fn the_schema_doc_names_every_irqbalance_field() {
        let value = serde_json::to_value(moved_once().0).expect("json");
        let mut all = std::collections::BTreeSet::from(["irqbalance".to_owned(), IRQBALANCE_RAN.to_owned()]);
        super::super::fixtures::json_keys(&value, &mut all);
        let doc = include_str!("format/report-schema.md");
        let undocumented: Vec<&String> = all.iter().filter(|k| !doc.contains(&format!("`{k}`"))).collect();
        assert!(undocumented.is_empty(), "fields missing from report-schema.md: {undocumented:?}");
    }

    #[test]
    fn an_irqbalance_that_exited_at_start_fails_the_check() {
        let run = GuestIrqbalance { state: Some(IrqbalanceState::Exited(1)), samples: Vec::new() };
        let log = ["Balancing is ineffective on systems with a single cpu.  Shutting down".to_owned()];
        let input = IrqbalanceInput { run: &run, started: None, msix: &[], nodes: &BTreeMap::new(), log: &log };
        let (_, check) = judge_irqbalance(&input);
        assert_eq!(check.status, CheckStatus::Fail);
        assert!(check.message.contains("exited by itself with status 1"), "{}", check.message);
        assert_eq!(check.detail, log);
    }
}
