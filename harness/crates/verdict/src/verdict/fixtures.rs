//! Test fixtures: topologies from `topologies/`, guest tables from the model or from a
//! seed's table, and small edits that make a guest differ.

use super::*;
use crate::cpulist::CpuMask;
use crate::model::{expected_table, ExpectedTable, KernelGen};
use crate::topology::Topology;

/// The PCI address used by the fixtures (QEMU's pxb-pcie bus 0x41 behind a root port).
pub(super) const BDF: &str = "0000:41:00.0";
/// First Linux IRQ number of the fixtures' vectors.
pub(super) const FIRST_IRQ: u32 = 24;

pub(super) fn topo(name: &str) -> Topology {
    let path = format!("{}/../../../topologies/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    Topology::load(path).unwrap_or_else(|e| panic!("{e}"))
}

/// topologies/NAME.toml with `[scenario] offline_after = OFFLINE_AFTER` (a CPU hotplug
/// after the probe), and the name of its last stage.
pub(crate) fn offlined_after(name: &str, offline_after: &str) -> (Topology, String) {
    let path = format!("{}/../../../topologies/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let scenario = crate::topology::ScenarioFile { offline_after: Some(offline_after.into()), ..Default::default() };
    let t = topo(name).with_scenario(&path, &scenario).unwrap_or_else(|e| panic!("{e}"));
    let last = t.to_qemu_numbering().last_stage().to_owned();
    (t, last)
}

pub(super) fn kernel(k: &str) -> KernelGen {
    k.parse().expect("kernel generation")
}

/// The table the guest should show (guest = QEMU CPU numbering).
pub(super) fn guest_table(t: &Topology, k: &str) -> ExpectedTable {
    expected_table(&t.to_qemu_numbering(), kernel(k))
}

/// A guest report written out by hand, not from the model: the NIC at [`BDF`] on
/// `nic_node`, MSI-X vector i with `smp_affinity_list` = `rows[i]`, named in
/// `kernel`'s scheme (`mana_hwc`, then `mana_q<i-1>` on 6.x, `mana_msi<i>` on 7.x:
/// gdma_main.c `mana_gd_setup_irqs()` / `mana_gd_setup_dyn_irqs()`), its mask as
/// `affinity_hint` except the indices in `no_hint`, IRQ numbers from [`FIRST_IRQ`]
/// up, each fired once on its mask's first CPU (of `nr_cpus`). The release is a
/// Debian kernel of that generation.
pub(super) fn guest_report(
    kernel: KernelGen,
    nic_node: Option<i32>,
    nr_cpus: u32,
    rows: &[&str],
    no_hint: &[usize],
) -> Observed {
    let release = match kernel {
        KernelGen::V6_1 => "6.1.0-37-cloud-amd64",
        KernelGen::V6_3 => "6.6.0-custom",
        KernelGen::V6_12 => "6.12.117+deb13-cloud-amd64",
        KernelGen::V7 => "7.3.4+deb14-cloud-amd64",
    };
    let vectors = rows
        .iter()
        .zip(FIRST_IRQ..)
        .enumerate()
        .map(|(i, (cpus, irq))| {
            let m = mask(cpus);
            let first = m.first().expect("non-empty mask");
            let mut counts = vec![0; nr_cpus as usize];
            counts[first as usize] = 1;
            let short = match (i, kernel) {
                (0, _) => "mana_hwc".to_owned(),
                (_, KernelGen::V7) => format!("mana_msi{i}"),
                _ => format!("mana_q{}", i - 1),
            };
            ObservedVector {
                irq,
                name: format!("{short}@pci:{BDF}"),
                affinity_hint: (!no_hint.contains(&i)).then(|| m.clone()),
                smp_affinity: m,
                effective: Some(CpuMask::single(first)),
                counts,
            }
        })
        .collect();
    Observed {
        kernel_release: release.to_owned(),
        kernel,
        model_basis: crate::model::ModelBasis::Release,
        accel: "tcg".to_owned(),
        nic_bdf: Some(BDF.to_owned()),
        nic_numa_node: nic_node,
        vectors,
        probe_ok: true,
        probe_unfinished: false,
        dmesg_mana: Vec::new(),
    }
}

/// One (topology, kernel) run: the topology, the model's table and a guest report.
pub(crate) struct Run {
    pub(super) topo: Topology,
    pub(super) table: ExpectedTable,
    pub(super) observed: Observed,
}

impl Run {
    /// The guest report starts as exactly what the model predicts: for tests that
    /// edit it into a wrong one (a fail path), or that are about something other
    /// than the table's correctness (formats, stages, baselines). A test of a pass
    /// path uses [`Run::seen`] with a table from a seed or the kernel's algorithm.
    pub(crate) fn new(name: &str, k: &str) -> Self {
        let topo = topo(name);
        let table = guest_table(&topo, k);
        let observed = Observed::as_model_predicts(&table, BDF, FIRST_IRQ);
        Self { topo, table, observed }
    }

    /// topologies/NAME.toml on kernel `k` with a guest report written out by hand
    /// ([`guest_report`]).
    pub(crate) fn seen(name: &str, k: &str, observed: Observed) -> Self {
        let topo = topo(name);
        let table = guest_table(&topo, k);
        assert_eq!(observed.kernel, table.kernel, "the report is for the run's kernel");
        Self { topo, table, observed }
    }

    pub(crate) fn judge(&self) -> Verdict {
        judge(&self.topo, &self.observed, &self.table)
    }

    pub(super) fn vector_mut(&mut self, short: &str) -> &mut ObservedVector {
        self.observed
            .vectors
            .iter_mut()
            .find(|v| v.name.split('@').next() == Some(short))
            .unwrap_or_else(|| panic!("no vector {short}"))
    }

    /// Set `smp_affinity_list` and `affinity_hint` of MSI-X vector `i` as the kernel shows
    /// them after `irq_set_affinity_and_hint(mask)`, with the vector fired once on the
    /// mask's first CPU (so its effective CPU has moved there).
    pub(super) fn set_affinity(&mut self, i: usize, cpulist: &str) {
        let m = mask(cpulist);
        let first = m.first().expect("non-empty mask");
        let v = &mut self.observed.vectors[i];
        v.effective = Some(CpuMask::single(first));
        v.counts = vec![0; self.table.nr_cpu_ids as usize];
        v.counts[first as usize] = 1;
        v.smp_affinity = m.clone();
        v.affinity_hint = Some(m);
    }

    /// Set every vector's effective CPU (in MSI-X order) and mark it fired once there.
    pub(super) fn set_effective(&mut self, cpus: &[u32]) {
        assert_eq!(cpus.len(), self.observed.vectors.len());
        for (v, &cpu) in self.observed.vectors.iter_mut().zip(cpus) {
            v.effective = Some(CpuMask::single(cpu));
            v.counts = vec![0; self.table.nr_cpu_ids as usize];
            v.counts[cpu as usize] = 1;
        }
    }
}

pub(super) fn mask(s: &str) -> CpuMask {
    CpuMask::parse_cpulist(s).expect("cpulist")
}

pub(super) fn check<'a>(v: &'a Verdict, name: &str) -> &'a Check {
    v.checks.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no check {name}"))
}

/// Every object key anywhere in `v` (for the schema-doc tests).
pub(super) fn json_keys(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => m.iter().for_each(|(k, v)| {
            out.insert(k.clone());
            json_keys(v, out);
        }),
        serde_json::Value::Array(a) => a.iter().for_each(|v| json_keys(v, out)),
        _ => {}
    }
}

/// A rig error with one cause, as the rig returns them: context, then its source.
#[derive(Debug, thiserror::Error)]
#[error("guest boot of seed-002 (#1) failed")]
pub(super) struct BootFailed(#[source] std::io::Error);

pub(super) fn rig_error() -> BootFailed {
    BootFailed(std::io::Error::other("QEMU exited with status 1 before the guest report"))
}

/// Validate KTAP version 1 (Documentation/dev-tools/ktap.rst): a version line, a plan
/// `1..N`, result lines `ok|not ok <n> [<description>][ # …]` numbered 1..N with no `#`
/// in the description, `#` diagnostic lines anywhere, subtests indented two more spaces
/// starting with their own version line and closed by the parent's result line, which is
/// `not ok` when a subtest failed. Returns the top-level results.
pub(super) fn parse_ktap(text: &str) -> Vec<bool> {
    fn indent_of(line: &str) -> usize {
        line.len() - line.trim_start_matches(' ').len()
    }
    fn result(content: &str) -> Option<(bool, usize, &str)> {
        let (ok, rest) = if let Some(r) = content.strip_prefix("not ok ") {
            (false, r)
        } else {
            (true, content.strip_prefix("ok ")?)
        };
        let (num, desc) = rest.split_once(' ').unwrap_or((rest, ""));
        let desc = desc.split_once(" # ").map_or(desc, |(d, _)| d);
        Some((ok, num.parse().ok()?, desc))
    }
    fn block(lines: &[&str], pos: &mut usize, depth: usize) -> Vec<bool> {
        let pad = depth * 2;
        assert_eq!(lines[*pos], format!("{}KTAP version 1", " ".repeat(pad)), "line {}", *pos + 1);
        *pos += 1;
        let mut plan = None;
        let mut results = Vec::new();
        let mut sub_failed = None;
        while *pos < lines.len() {
            let line = lines[*pos];
            let ind = indent_of(line);
            let content = &line[ind..];
            assert!(!line.ends_with(' '), "line {}: trailing blank", *pos + 1);
            if content.starts_with('#') {
                *pos += 1;
                continue;
            }
            if ind < pad {
                break;
            }
            if ind == pad + 2 && content == "KTAP version 1" {
                assert!(plan.is_some(), "line {}: subtest before the plan", *pos + 1);
                let sub = block(lines, pos, depth + 1);
                sub_failed = Some(sub.iter().any(|ok| !ok));
                continue;
            }
            assert_eq!(ind, pad, "line {}: bad indentation: {line:?}", *pos + 1);
            if let Some(n) = content.strip_prefix("1..") {
                assert!(plan.is_none(), "line {}: second plan", *pos + 1);
                plan = Some(n.parse::<usize>().expect("plan count"));
            } else if let Some((ok, n, desc)) = result(content) {
                assert!(plan.is_some(), "line {}: result before the plan", *pos + 1);
                assert_eq!(n, results.len() + 1, "line {}: numbering", *pos + 1);
                assert!(!desc.contains('#'), "line {}: '#' in description", *pos + 1);
                if let Some(failed) = sub_failed.take() {
                    assert!(!(failed && ok), "line {}: parent ok although a subtest failed", *pos + 1);
                }
                results.push(ok);
            } else {
                panic!("line {}: not a KTAP line: {line:?}", *pos + 1);
            }
            *pos += 1;
        }
        assert_eq!(Some(results.len()), plan, "plan count vs results");
        results
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut pos = 0;
    let top = block(&lines, &mut pos, 0);
    assert_eq!(pos, lines.len(), "unparsed lines from {}", pos + 1);
    top
}
