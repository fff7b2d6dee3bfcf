//! `[scenario]`: the CPU state around the probe and the policies given to the guest
//! kernel on its command line.
//!
//! ```toml
//! [scenario]
//! maxcpus = 6                # kernel parameter: CPUs 6.. present but not online at boot
//! offline = "3"              # offlined through sysfs before mana loads
//! offline_after = "2"        # after the probe: offlined, the IRQ tables read again
//! online_after = "2-3"       # then onlined, the IRQ tables read again
//! irqaffinity = "0-1"        # kernel parameter: irq_default_affinity
//! isolcpus = "domain,4-5"    # kernel parameter (flags nohz, domain, managed_irq)
//! nohz_full = "6-7"          # kernel parameter
//! irqbalance = true          # after the probe: irqbalance runs, the IRQs sampled
//! ```
//!
//! CPU ids are the file's (see `cpu_numbering`); the kernel items are rendered in the
//! guest's numbering by [`Topology::scenario_cmdline`]. What is refused, and why, is in
//! [`ScenarioProblem`]; topologies/README.md documents the table.

use super::error::{Problem, TopologyError};
use super::numbering::{CpuNumbering, CpuShape};
use super::scenario_problem::ScenarioProblem;
use super::Topology;
use crate::cpulist::CpuMask;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The `[scenario]` table as written (every field optional).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// `maxcpus=N`: only the first N CPUs (the guest's ids) come online at boot.
    #[serde(default)]
    pub maxcpus: Option<i64>,
    /// Cpulist offlined through `/sys/devices/system/cpu/cpuN/online` before mana loads.
    #[serde(default)]
    pub offline: Option<String>,
    /// Cpulist offlined after the probe (the IRQ tables are read before and after).
    #[serde(default)]
    pub offline_after: Option<String>,
    /// Cpulist onlined after the probe and `offline_after` (tables read again).
    #[serde(default)]
    pub online_after: Option<String>,
    /// `irqaffinity=CPULIST`.
    #[serde(default)]
    pub irqaffinity: Option<String>,
    /// `isolcpus=[FLAG,...,]CPULIST`.
    #[serde(default)]
    pub isolcpus: Option<String>,
    /// `nohz_full=CPULIST`.
    #[serde(default)]
    pub nohz_full: Option<String>,
    /// Run Debian's irqbalance in the guest once the driver's placement has been
    /// read, and sample the NIC's IRQs while it runs.
    #[serde(default)]
    pub irqbalance: Option<bool>,
}

/// The flags `isolcpus=` takes (kernel/sched/isolation.c `housekeeping_isolcpus_setup()`,
/// Linux 5.6–7.x): without any, `domain`.
pub const ISOLCPUS_FLAGS: [&str; 3] = ["nohz", "domain", "managed_irq"];

/// `isolcpus=`: flags and CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Isolcpus {
    /// The flags as given (each one of [`ISOLCPUS_FLAGS`]); empty means `domain`.
    pub flags: Vec<String>,
    /// The isolated CPUs (file numbering).
    pub cpus: CpuMask,
}

impl Isolcpus {
    /// Whether scheduler domains leave these CPUs out (`domain`, or no flag at all).
    pub fn domain(&self) -> bool {
        self.flags.is_empty() || self.flags.iter().any(|f| f == "domain")
    }
}

/// A validated `[scenario]` (file numbering). The default is the plain boot: every CPU
/// online, no policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Scenario {
    /// `maxcpus=N`.
    pub maxcpus: Option<u32>,
    /// Offlined before mana loads.
    pub offline: CpuMask,
    /// Offlined after the probe, in ascending order.
    pub offline_after: CpuMask,
    /// Onlined after that, in ascending order.
    pub online_after: CpuMask,
    /// `irqaffinity=`.
    pub irqaffinity: Option<CpuMask>,
    /// `isolcpus=`.
    pub isolcpus: Option<Isolcpus>,
    /// `nohz_full=`.
    pub nohz_full: Option<CpuMask>,
    /// irqbalance runs in the guest after the driver's placement was read (last,
    /// after any hotplug step); its moves are reported, not modelled.
    pub irqbalance: bool,
}

/// One CPU hotplug step after the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuStep {
    /// `echo 0 > /sys/devices/system/cpu/cpuN/online`.
    Offline(u32),
    /// `echo 1 > /sys/devices/system/cpu/cpuN/online`.
    Online(u32),
}

fn invalid(path: &str, field: &str, problem: ScenarioProblem) -> TopologyError {
    TopologyError::Invalid {
        path: path.to_owned(),
        field: format!("scenario.{field}"),
        problem: Problem::Scenario(problem),
    }
}

/// Parse a cpulist field and check that its CPUs exist.
fn cpus(path: &str, field: &str, text: &str, ncpu: u32) -> Result<CpuMask, TopologyError> {
    let field_name = format!("scenario.{field}");
    let mask = CpuMask::parse_cpulist(text).map_err(|e| TopologyError::Invalid {
        path: path.to_owned(),
        field: field_name.clone(),
        problem: Problem::Cpulist(e),
    })?;
    let beyond = mask.andnot(&CpuMask::first_n(ncpu));
    if !beyond.is_empty() {
        return Err(invalid(path, field, ScenarioProblem::Beyond { cpus: beyond, ncpu }));
    }
    Ok(mask)
}

/// A non-empty policy cpulist that leaves some CPU out.
fn policy(path: &str, field: &str, text: &str, ncpu: u32) -> Result<CpuMask, TopologyError> {
    let mask = cpus(path, field, text, ncpu)?;
    if mask.is_empty() {
        return Err(invalid(path, field, ScenarioProblem::Empty));
    }
    if mask.count() == ncpu {
        return Err(invalid(path, field, ScenarioProblem::EveryCpu { cpus: mask }));
    }
    Ok(mask)
}

/// The file CPU ids of the guest's CPUs `0..n` (QEMU cpu index = Linux CPU id).
fn first_guest_cpus(shape: CpuShape, numbering: CpuNumbering, n: u32) -> CpuMask {
    (0..n).map(|idx| shape.cpu_id(numbering, shape.location_of_qemu_index(idx))).collect()
}

/// Validate `[scenario]` (absent = the default scenario). `path` only names the file in
/// errors; checks stop at the first problem, in field order.
pub(super) fn validate(
    path: &str,
    file: Option<ScenarioFile>,
    shape: CpuShape,
    numbering: CpuNumbering,
) -> Result<Scenario, TopologyError> {
    let Some(f) = file else { return Ok(Scenario::default()) };
    let ncpu = shape.total_cpus();
    let cpu0 = first_guest_cpus(shape, numbering, 1);
    let maxcpus = match f.maxcpus {
        None => None,
        Some(v) if (1..=i64::from(ncpu)).contains(&v) => Some(v as u32),
        Some(value) => return Err(invalid(path, "maxcpus", ScenarioProblem::MaxCpus { value, ncpu })),
    };
    let boot = first_guest_cpus(shape, numbering, maxcpus.unwrap_or(ncpu));
    let list =
        |field: &str, v: &Option<String>| v.as_deref().map_or(Ok(CpuMask::new()), |t| cpus(path, field, t, ncpu));
    let offline = list("offline", &f.offline)?;
    let offline_after = list("offline_after", &f.offline_after)?;
    let online_after = list("online_after", &f.online_after)?;
    let when_boot = match maxcpus {
        Some(n) => format!("at boot (maxcpus = {n})"),
        None => "at boot".to_owned(),
    };
    for (field, mask, online, when) in [
        ("offline", &offline, boot.clone(), when_boot),
        ("offline_after", &offline_after, boot.andnot(&offline), "when the probe ends".to_owned()),
    ] {
        if mask.intersects(&cpu0) {
            return Err(invalid(path, field, ScenarioProblem::CpuZero));
        }
        let not_online = mask.andnot(&online);
        if !not_online.is_empty() {
            return Err(invalid(path, field, ScenarioProblem::NotOnline { cpus: not_online, when }));
        }
    }
    let already = online_after.and(&boot.andnot(&offline).andnot(&offline_after));
    if !already.is_empty() {
        return Err(invalid(path, "online_after", ScenarioProblem::AlreadyOnline { cpus: already }));
    }
    let irqaffinity = f.irqaffinity.as_deref().map(|t| cpus(path, "irqaffinity", t, ncpu)).transpose()?;
    let isolcpus = f.isolcpus.as_deref().map(|t| isolcpus(path, t, ncpu)).transpose()?;
    let nohz_full = f.nohz_full.as_deref().map(|t| policy(path, "nohz_full", t, ncpu)).transpose()?;
    if let (Some(i), Some(n)) = (&isolcpus, &nohz_full) {
        // Both set HK_TYPE_TICK & co. with the nohz flag: housekeeping_setup() refuses
        // a second, different mask for a type it already has (Debian 6.12.117 read).
        if i.flags.iter().any(|f| f == "nohz") && i.cpus != *n {
            let problem = ScenarioProblem::NohzMismatch { isolcpus: i.cpus.clone(), nohz_full: n.clone() };
            return Err(invalid(path, "nohz_full", problem));
        }
    }
    let irqbalance = f.irqbalance.unwrap_or(false);
    if irqbalance {
        // irqbalance 1.9 exits at start with a single online CPU ("Balancing is
        // ineffective on systems with a single cpu"): nothing would be sampled.
        let left = boot.andnot(&offline).andnot(&offline_after).or(&online_after).count();
        if left < 2 {
            return Err(invalid(path, "irqbalance", ScenarioProblem::IrqbalanceOneCpu));
        }
    }
    Ok(Scenario { maxcpus, offline, offline_after, online_after, irqaffinity, isolcpus, nohz_full, irqbalance })
}

fn isolcpus(path: &str, text: &str, ncpu: u32) -> Result<Isolcpus, TopologyError> {
    // The flags come first, each followed by a comma; the cpulist starts at the
    // first item that begins with a digit (housekeeping_isolcpus_setup()).
    let mut rest = text;
    let mut flags = Vec::new();
    while let Some((head, tail)) = rest.split_once(',') {
        if head.starts_with(|c: char| c.is_ascii_digit()) {
            break;
        }
        if !ISOLCPUS_FLAGS.contains(&head) {
            return Err(invalid(path, "isolcpus", ScenarioProblem::IsolcpusFlag { flag: head.to_owned() }));
        }
        flags.push(head.to_owned());
        rest = tail;
    }
    if !rest.is_empty() && !rest.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(invalid(path, "isolcpus", ScenarioProblem::IsolcpusFlag { flag: rest.to_owned() }));
    }
    Ok(Isolcpus { flags, cpus: policy(path, "isolcpus", rest, ncpu)? })
}

impl Scenario {
    /// Whether the scenario changes anything from the plain boot.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The same scenario with every CPU id mapped through `f` (file → guest numbering).
    pub(super) fn map_cpus(&self, f: impl Fn(u32) -> u32) -> Self {
        let m = |c: &CpuMask| c.iter().map(&f).collect::<CpuMask>();
        Self {
            maxcpus: self.maxcpus,
            offline: m(&self.offline),
            offline_after: m(&self.offline_after),
            online_after: m(&self.online_after),
            irqaffinity: self.irqaffinity.as_ref().map(m),
            isolcpus: self.isolcpus.as_ref().map(|i| Isolcpus { flags: i.flags.clone(), cpus: m(&i.cpus) }),
            nohz_full: self.nohz_full.as_ref().map(m),
            irqbalance: self.irqbalance,
        }
    }

    /// The `[scenario]` table as file text (empty for the default scenario).
    pub fn to_toml(&self) -> String {
        if self.is_default() {
            return String::new();
        }
        let mut out = String::from("\n[scenario]\n");
        if let Some(n) = self.maxcpus {
            let _ = writeln!(out, "maxcpus = {n}");
        }
        for (key, mask) in
            [("offline", &self.offline), ("offline_after", &self.offline_after), ("online_after", &self.online_after)]
        {
            if !mask.is_empty() {
                let _ = writeln!(out, "{key} = \"{}\"", mask.to_cpulist());
            }
        }
        if let Some(m) = &self.irqaffinity {
            let _ = writeln!(out, "irqaffinity = \"{}\"", m.to_cpulist());
        }
        if let Some(i) = &self.isolcpus {
            let _ = writeln!(out, "isolcpus = \"{}\"", isolcpus_value(i));
        }
        if let Some(m) = &self.nohz_full {
            let _ = writeln!(out, "nohz_full = \"{}\"", m.to_cpulist());
        }
        if self.irqbalance {
            out.push_str("irqbalance = true\n");
        }
        out
    }
}

fn isolcpus_value(i: &Isolcpus) -> String {
    let mut v: String = i.flags.iter().map(|f| format!("{f},")).collect();
    v.push_str(&i.cpus.to_cpulist());
    v
}

impl Scenario {
    /// The scenario as file fields (file numbering).
    fn to_file(&self) -> ScenarioFile {
        let list = |m: &CpuMask| (!m.is_empty()).then(|| m.to_cpulist());
        ScenarioFile {
            maxcpus: self.maxcpus.map(i64::from),
            offline: list(&self.offline),
            offline_after: list(&self.offline_after),
            online_after: list(&self.online_after),
            irqaffinity: self.irqaffinity.as_ref().map(CpuMask::to_cpulist),
            isolcpus: self.isolcpus.as_ref().map(isolcpus_value),
            nohz_full: self.nohz_full.as_ref().map(CpuMask::to_cpulist),
            irqbalance: self.irqbalance.then_some(true),
        }
    }
}

impl Topology {
    /// The same machine with some `[scenario]` fields replaced (the command line's
    /// one-off `--maxcpus`, `--offline`, …: each `Some` field of `overrides` wins over
    /// the file's), validated as a file's `[scenario]` would be.
    ///
    /// # Errors
    /// The first invalid field, as [`TopologyError::Invalid`] naming `path` and
    /// `scenario.<field>`.
    pub fn with_scenario(&self, path: &str, overrides: &ScenarioFile) -> Result<Topology, TopologyError> {
        let mut merged = self.spec.scenario.to_file();
        let o = overrides.clone();
        merged.maxcpus = o.maxcpus.or(merged.maxcpus);
        merged.offline = o.offline.or(merged.offline);
        merged.offline_after = o.offline_after.or(merged.offline_after);
        merged.online_after = o.online_after.or(merged.online_after);
        merged.irqaffinity = o.irqaffinity.or(merged.irqaffinity);
        merged.isolcpus = o.isolcpus.or(merged.isolcpus);
        merged.nohz_full = o.nohz_full.or(merged.nohz_full);
        merged.irqbalance = o.irqbalance.or(merged.irqbalance);
        let scenario = validate(path, Some(merged), self.spec.shape, self.spec.numbering)?;
        Ok(Topology::assemble(super::Spec { scenario, ..self.spec.clone() }))
    }

    /// The `[scenario]` (the default when the file has none).
    pub fn scenario(&self) -> &Scenario {
        &self.spec.scenario
    }

    /// `cpu_online_mask` once boot is done: all CPUs, or with `maxcpus = N` the guest's
    /// CPUs 0..N−1 (`bringup_nonboot_cpus()` brings present CPUs up in id order until
    /// `setup_max_cpus` are online, kernel/cpu.c, Linux 6.1–7.x), in file numbering.
    pub fn boot_online(&self) -> CpuMask {
        let n = self.spec.scenario.maxcpus.unwrap_or(self.ncpu());
        first_guest_cpus(self.spec.shape, self.spec.numbering, n)
    }

    /// `cpu_online_mask` when mana probes: [`Topology::boot_online`] minus `offline`.
    pub fn probe_online(&self) -> CpuMask {
        self.boot_online().andnot(&self.spec.scenario.offline)
    }

    /// The hotplug steps after the probe, grouped by stage: `offline_after` (ascending),
    /// then `online_after` (ascending); a group is left out when its list is empty.
    /// Each group is named as the guest names its stage (`offline-after`, `online-after`).
    pub fn after_probe_steps(&self) -> Vec<(&'static str, Vec<CpuStep>)> {
        let s = &self.spec.scenario;
        let mut out = Vec::new();
        if !s.offline_after.is_empty() {
            out.push(("offline-after", s.offline_after.iter().map(CpuStep::Offline).collect()));
        }
        if !s.online_after.is_empty() {
            out.push(("online-after", s.online_after.iter().map(CpuStep::Online).collect()));
        }
        out
    }

    /// The name of the run's last CPU state (what the guest's report shows):
    /// `online-after`, `offline-after` or, without hotplug after the probe, `probe`.
    pub fn last_stage(&self) -> &'static str {
        self.after_probe_steps().last().map_or("probe", |(name, _)| name)
    }

    /// `cpu_online_mask` at a stage: `offline-after` and `online-after` after their steps
    /// (see [`Topology::after_probe_steps`]); any other name (`probe`, `first-probe`)
    /// is the probe's.
    pub fn online_at(&self, stage: &str) -> CpuMask {
        let s = &self.spec.scenario;
        let probe = self.probe_online();
        match stage {
            "offline-after" => probe.andnot(&s.offline_after),
            "online-after" => probe.andnot(&s.offline_after).or(&s.online_after),
            _ => probe,
        }
    }

    /// `irq_default_affinity`: all CPUs, or with `irqaffinity=` its CPUs plus the boot
    /// CPU (`irq_affinity_setup()` in kernel/irq/irqdesc.c always adds the CPU parsing
    /// it, Linux 4.x–7.x).
    pub fn irq_default_affinity(&self) -> CpuMask {
        match &self.spec.scenario.irqaffinity {
            Some(m) => m.or(&first_guest_cpus(self.spec.shape, self.spec.numbering, 1)),
            None => CpuMask::first_n(self.ncpu()),
        }
    }

    /// The kernel command-line items the scenario gives the guest (`maxcpus=6`,
    /// `irqaffinity=0-1`, `isolcpus=domain,4-5`, `nohz_full=6-7`), CPU ids in the
    /// guest's (QEMU) numbering.
    pub fn scenario_cmdline(&self) -> Vec<String> {
        let s = self.spec.scenario.map_cpus(|c| self.qemu_index(c));
        let mut out = Vec::new();
        if let Some(n) = s.maxcpus {
            out.push(format!("maxcpus={n}"));
        }
        if let Some(m) = &s.irqaffinity {
            out.push(format!("irqaffinity={}", m.to_cpulist()));
        }
        if let Some(i) = &s.isolcpus {
            out.push(format!("isolcpus={}", isolcpus_value(i)));
        }
        if let Some(m) = &s.nohz_full {
            out.push(format!("nohz_full={}", m.to_cpulist()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(scenario: &str) -> Result<Topology, TopologyError> {
        let text = format!(
            "name = \"t\"\n[source]\nkind = \"synthetic\"\nwording = \"w\"\n[cpus]\nsockets = 2\ncores = 2\nthreads = 2\n\
             [[numa.nodes]]\ncpus = \"0-3\"\nmemory_mib = 256\n[[numa.nodes]]\ncpus = \"4-7\"\nmemory_mib = 256\n\
             [nic]\nnuma_node = 0\n[expect]\nverdict = \"pass\"\nsource = \"s\"\n[scenario]\n{scenario}"
        );
        Topology::from_toml_str("t.toml", &text)
    }

    fn err(scenario: &str) -> String {
        topo(scenario).expect_err("refused").to_string()
    }

    #[test]
    fn maxcpus_and_offline_give_the_online_cpus_at_probe() {
        let t = topo("maxcpus = 6\noffline = \"3\"\noffline_after = \"2\"\nonline_after = \"2-3,6\"").expect("valid");
        assert_eq!(t.boot_online().to_cpulist(), "0-5");
        assert_eq!(t.probe_online().to_cpulist(), "0-2,4-5");
        assert_eq!(
            t.after_probe_steps(),
            vec![
                ("offline-after", vec![CpuStep::Offline(2)]),
                ("online-after", vec![CpuStep::Online(2), CpuStep::Online(3), CpuStep::Online(6)])
            ]
        );
        assert_eq!(t.scenario_cmdline(), ["maxcpus=6"]);
        assert_eq!(t.last_stage(), "online-after");
        assert_eq!(t.online_at("offline-after").to_cpulist(), "0-1,4-5");
        assert_eq!(t.online_at("online-after").to_cpulist(), "0-6");
    }

    #[test]
    fn policies_render_as_kernel_items_and_irqaffinity_keeps_the_boot_cpu() {
        let t =
            topo("irqaffinity = \"4-5\"\nisolcpus = \"managed_irq,domain,2-3\"\nnohz_full = \"6-7\"").expect("valid");
        assert_eq!(t.scenario_cmdline(), ["irqaffinity=4-5", "isolcpus=managed_irq,domain,2-3", "nohz_full=6-7"]);
        assert_eq!(t.irq_default_affinity().to_cpulist(), "0,4-5");
        assert!(t.scenario().isolcpus.as_ref().expect("isolcpus").domain());
        let plain = topo("isolcpus = \"2-3\"").expect("valid");
        assert!(plain.scenario().isolcpus.as_ref().expect("isolcpus").domain(), "no flag = domain");
    }

    #[test]
    fn impossible_scenarios_name_the_file_and_field() {
        assert_eq!(
            err("maxcpus = 9"),
            "t.toml: scenario.maxcpus: 9: must be 1..=8 (the machine has 8 CPUs; maxcpus=0 would boot without SMP)"
        );
        assert!(err("offline = \"0-1\"").starts_with("t.toml: scenario.offline: CPU 0 cannot go offline"));
        assert!(err("offline_after = \"0\"").starts_with("t.toml: scenario.offline_after: CPU 0"));
        assert_eq!(
            err("maxcpus = 4\noffline = \"5\""),
            "t.toml: scenario.offline: CPU 5 is not online at boot (maxcpus = 4)"
        );
        assert_eq!(
            err("offline = \"3\"\noffline_after = \"3\""),
            "t.toml: scenario.offline_after: CPU 3 is not online when the probe ends"
        );
        assert_eq!(
            err("online_after = \"3\""),
            "t.toml: scenario.online_after: CPU 3 is online already after the probe and offline_after"
        );
        assert_eq!(err("offline = \"9\""), "t.toml: scenario.offline: CPU 9 does not exist (the machine has 8 CPUs)");
        assert!(err("isolcpus = \"0-7\"").contains("scenario.isolcpus: names every CPU"));
        assert!(err("isolcpus = \"nohz_ful,2\"").contains("\"nohz_ful\" is not an isolcpus flag"));
        assert!(err("nohz_full = \"\"").contains("scenario.nohz_full: an empty cpulist"));
        assert!(err("maxcpu = 2").starts_with("t.toml:"), "unknown fields are refused");
        assert!(err("isolcpus = \"nohz,domain,2-3\"\nnohz_full = \"6-7\"")
            .contains("scenario.nohz_full: isolcpus with the nohz flag"));
        assert!(topo("isolcpus = \"domain,2-3\"\nnohz_full = \"6-7\"").is_ok(), "no shared housekeeping type");
    }

    #[test]
    fn command_line_overrides_win_and_are_validated_like_the_file() {
        let t = topo("maxcpus = 6").expect("valid");
        let o = ScenarioFile { offline: Some("3".into()), ..ScenarioFile::default() };
        let u = t.with_scenario("t.toml", &o).expect("valid");
        assert_eq!(u.probe_online().to_cpulist(), "0-2,4-5");
        let bad = ScenarioFile { maxcpus: Some(0), ..ScenarioFile::default() };
        let e = t.with_scenario("t.toml", &bad).expect_err("maxcpus 0");
        assert!(e.to_string().starts_with("t.toml: scenario.maxcpus: 0: must be 1..=8"), "{e}");
    }

    #[test]
    fn irqbalance_needs_two_cpus_online_after_the_probe() {
        assert!(topo("irqbalance = true").expect("valid").scenario().irqbalance);
        assert!(!topo("irqbalance = false").expect("valid").scenario().irqbalance);
        assert!(topo("maxcpus = 2\noffline_after = \"1\"\nirqbalance = true")
            .expect_err("one CPU left")
            .to_string()
            .starts_with("t.toml: scenario.irqbalance: needs at least two online CPUs after the probe"));
        let t = topo("maxcpus = 2").expect("valid");
        let o = ScenarioFile { irqbalance: Some(true), ..ScenarioFile::default() };
        assert!(t.with_scenario("t.toml", &o).expect("valid").scenario().irqbalance, "--irqbalance");
    }

    #[test]
    fn the_table_survives_to_toml_and_back() {
        let t = topo(
            "maxcpus = 6\noffline = \"3\"\noffline_after = \"2\"\nonline_after = \"2-3\"\nirqaffinity = \"1\"\n\
                      isolcpus = \"domain,4-5\"\nnohz_full = \"6-7\"\nirqbalance = true",
        )
        .expect("valid");
        let back = Topology::from_toml_str("t.toml", &t.to_toml()).expect("loads back");
        assert_eq!(back.scenario(), t.scenario());
    }
}
