//! The report `/init` (guest-images/init.sh) prints on the serial console
//! between `MANARIG-REPORT-BEGIN 1` and `MANARIG-REPORT-END`, parsed.
//!
//! One item per line, `key: value` or `key id: field=value field=value …`.
//! Values come from sysfs and procfs: CPU topology from
//! `/sys/devices/system/cpu/cpuN/topology/`, nodes from
//! `/sys/devices/system/node/nodeN/{cpulist,distance,meminfo}`, PCI from
//! `/sys/bus/pci/devices/`, MSI-X from `msi_irqs/` and `/proc/irq/N/`.

use std::collections::BTreeMap;

/// First line of the report (with the format version).
pub const BEGIN: &str = "MANARIG-REPORT-BEGIN";
/// Last line of the report.
pub const END: &str = "MANARIG-REPORT-END";
/// Format version `/init` writes and this parser reads.
pub const VERSION: &str = "1";
/// First line of a stage: the same items as the report, printed before a
/// later step changes them (`MANARIG-STAGE-BEGIN first-probe` before `rmmod`).
pub const STAGE_BEGIN: &str = "MANARIG-STAGE-BEGIN";
/// Last line of a stage.
pub const STAGE_END: &str = "MANARIG-STAGE-END";

/// One guest CPU (sysfs `topology/`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GuestCpu {
    /// `physical_package_id`.
    pub package: i64,
    /// `die_id` (None if the kernel does not expose it).
    pub die: Option<i64>,
    /// `core_id`.
    pub core: i64,
    /// `thread_siblings_list`, expanded.
    pub siblings: Vec<u32>,
    /// NUMA node (from the `nodeN` link), -1 if none.
    pub node: i64,
}

/// One guest NUMA node.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GuestNode {
    /// `cpulist`, expanded (empty for a memory-only node).
    pub cpus: Vec<u32>,
    /// `MemTotal` of the node in KiB.
    pub mem_kib: u64,
    /// `distance` row, in node-id order of the nodes the guest has online.
    pub distance: Vec<u32>,
}

/// One PCI function.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GuestPci {
    /// `vendor` (e.g. 0x1414).
    pub vendor: u16,
    /// `device`.
    pub device: u16,
    /// `class` (24 bits).
    pub class: u32,
    /// `numa_node`, -1 for NUMA_NO_NODE.
    pub numa_node: i64,
    /// Bound driver name, if any.
    pub driver: Option<String>,
}

/// One MSI-X vector of the NIC.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GuestIrq {
    /// Linux IRQ number.
    pub irq: u32,
    /// Action name from /proc/interrupts (e.g. `mana_q0@pci:0000:41:00.0`), `-` if none.
    pub name: String,
    /// `smp_affinity_list`, expanded (None if unreadable).
    pub affinity: Option<Vec<u32>>,
    /// `affinity_hint` as printed (a hex cpumask), None if unreadable.
    pub hint: Option<String>,
    /// `effective_affinity_list`, expanded.
    pub effective: Option<Vec<u32>>,
    /// Interrupt counts per CPU, CPU 0 first.
    pub counts: Vec<u64>,
}

impl GuestIrq {
    /// An IRQ seen in /proc/irq before its /proc/interrupts line: no name, no data yet.
    fn unnamed(irq: u32) -> Self {
        GuestIrq { irq, name: "-".into(), affinity: None, hint: None, effective: None, counts: Vec::new() }
    }
}

/// The whole guest report.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct GuestReport {
    /// `uname -r`.
    pub kernel: String,
    /// `/proc/cmdline`.
    pub cmdline: String,
    /// Milestones in guest seconds since boot (`/proc/uptime`): init, modules,
    /// probe, ifup (`ip link set up` returned), carrier (`carrier` read 1),
    /// ethtool (`ethtool -L` returned), rmmod, settled, report. Absent when the
    /// step did not run.
    pub times: BTreeMap<String, f64>,
    /// What `/init` loaded (`mana` or `none`).
    pub load: String,
    /// Why waiting stopped: `none`, `deadline`, `probe-returned fired=yes|no` (agents before
    /// 2026-11-30 also stopped at `netdev fired=…`, when the netdev appeared)
    /// (`fired=no`: some vector had not fired when the probe returned: it has no EQ).
    pub settle: String,
    /// The driver's network interface (e.g. `eth0`), if one appeared.
    pub netdev: Option<String>,
    /// insmod's exit status, None if it had not returned.
    pub insmod_status: Option<i32>,
    /// `/sys/class/net/<netdev>/carrier` after `ip link set up` (None if not read).
    pub carrier: Option<bool>,
    /// Exit status of `ethtool -L <netdev> combined N` (None if not run;
    /// 127 when the initramfs has no ethtool).
    pub ethtool_status: Option<i32>,
    /// Current combined channels: the count of `/sys/class/net/<netdev>/queues/tx-N`
    /// (mana sets real_num_tx_queues to its combined count, what `ethtool -l` shows), None without a netdev.
    pub channels: Option<u32>,
    /// Exit status of `rmmod mana` (None if not run).
    pub rmmod_status: Option<i32>,
    /// What the guest agent's tools wrote to stderr, by tool (`ethtool`, `rmmod`):
    /// `stderr <tool>: <line>` lines.
    pub stderr: BTreeMap<String, Vec<String>>,
    /// Kernel log lines that are warnings of any origin (`WARNING:`, `BUG:`,
    /// `Oops`, `Call Trace`, lockdep): a clean run has none.
    pub warnings: Vec<String>,
    /// CPUs by number.
    pub cpus: BTreeMap<u32, GuestCpu>,
    /// Nodes by id.
    pub nodes: BTreeMap<u32, GuestNode>,
    /// PCI functions by BDF (`0000:41:00.0`).
    pub pci: BTreeMap<String, GuestPci>,
    /// BDF of the MANA NIC (vendor 0x1414), if present.
    pub nic: Option<String>,
    /// The NIC's MSI-X vectors in IRQ order.
    pub msix: Vec<GuestIrq>,
    /// mana lines of /proc/interrupts seen while waiting (kept when the probe
    /// failed and freed its IRQs before the report).
    pub seen: Vec<String>,
    /// dmesg lines mentioning mana.
    pub dmesg: Vec<String>,
}

/// Errors parsing console output.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReportError {
    /// No begin marker.
    #[error("no {BEGIN} line in the console output")]
    NoBegin,
    /// Begin without end (guest died or was cut off mid-report).
    #[error("the report starting on console line {0} has no {END} line")]
    NoEnd(usize),
    /// Another format version.
    #[error("report format {0:?}, this manarig reads {VERSION:?}")]
    Version(String),
    /// A line does not parse.
    #[error("report line {line}: {what}: {text:?}")]
    Line {
        /// 1-based console line.
        line: usize,
        /// What is wrong.
        what: String,
        /// The line.
        text: String,
    },
}

/// Expand a kernel cpulist (`0-3,8,10-11`; empty string = none).
///
/// # Errors
/// A message for a malformed list.
pub fn parse_cpulist(s: &str) -> Result<Vec<u32>, String> {
    crate::cpulist::CpuMask::parse_cpulist(s.trim())
        .map(|mask| mask.iter().collect())
        .map_err(|e| format!("bad cpulist {s:?}: {e}"))
}

/// Format CPUs as a kernel cpulist (`0-3,8`).
pub fn format_cpulist(cpus: &[u32]) -> String {
    cpus.iter().copied().collect::<crate::cpulist::CpuMask>().to_cpulist()
}

/// Strip the console's line endings (the serial console sends CR LF).
fn clean(line: &str) -> &str {
    line.trim_end_matches(['\r', '\n'])
}

/// Raw items of a report before assembly.
#[derive(Default)]
struct Raw {
    /// `f <path>: <value>` lines: path → (console line, value).
    files: BTreeMap<String, (usize, String)>,
    /// `link <path>` lines (CPU → node links).
    links: Vec<String>,
    /// `interrupts-header:` (CPU columns of /proc/interrupts).
    header: Option<String>,
    /// `interrupts:` lines: (console line, text).
    interrupts: Vec<(usize, String)>,
    /// `irqcount:` lines (the compact form): (console line, text).
    irq_counts: Vec<(usize, String)>,
}

/// Parse the (last) report in `console`.
///
/// # Errors
/// [`ReportError`] when the markers are missing, the version differs, or a
/// line is malformed (with its console line number).
pub fn parse(console: &str) -> Result<GuestReport, ReportError> {
    let lines: Vec<&str> = console.lines().map(clean).collect();
    let begin = lines
        .iter()
        .rposition(|l| l.starts_with(BEGIN))
        .ok_or(ReportError::NoBegin)?;
    let version = lines[begin][BEGIN.len()..].trim();
    if version != VERSION {
        return Err(ReportError::Version(version.to_string()));
    }
    let end = lines[begin..]
        .iter()
        .position(|l| *l == END)
        .map(|i| begin + i)
        .ok_or(ReportError::NoEnd(begin + 1))?;
    parse_block(&lines, begin, end)
}

/// Parse every stage (`MANARIG-STAGE-BEGIN <name>` … `MANARIG-STAGE-END`) in
/// `console`, in console order, as (name, report). A stage holds the same
/// items as the report, as they were at that point of the run.
///
/// # Errors
/// [`ReportError`] for a stage without its end line or a malformed line.
pub fn parse_stages(console: &str) -> Result<Vec<(String, GuestReport)>, ReportError> {
    let lines: Vec<&str> = console.lines().map(clean).collect();
    let mut stages = Vec::new();
    for (begin, line) in lines.iter().enumerate() {
        let Some(name) = line.strip_prefix(STAGE_BEGIN) else { continue };
        let end = lines[begin..]
            .iter()
            .position(|l| *l == STAGE_END)
            .map(|i| begin + i)
            .ok_or(ReportError::NoEnd(begin + 1))?;
        stages.push((name.trim().to_string(), parse_block(&lines, begin, end)?));
    }
    Ok(stages)
}

/// `key: value` status items: `-` (the step did not run) and non-numbers are None.
fn status(value: &str) -> Option<i32> {
    value.trim().parse().ok()
}

/// Parse the items strictly between console lines `begin` and `end`.
fn parse_block(lines: &[&str], begin: usize, end: usize) -> Result<GuestReport, ReportError> {
    let mut r = GuestReport::default();
    let mut raw = Raw::default();
    for (idx, &line) in lines.iter().enumerate().take(end).skip(begin + 1) {
        if let Some(path) = line.strip_prefix("link ") {
            raw.links.push(path.to_string());
            continue;
        }
        // Kernel messages may interleave with /init's output on the console:
        // lines that are not `key: value` are skipped.
        let Some((key, value)) = line.split_once(": ") else { continue };
        let (kind, id) = key.split_once(' ').unwrap_or((key, ""));
        match kind {
            "kernel" => r.kernel = value.to_string(),
            "cmdline" => r.cmdline = value.to_string(),
            "load" => r.load = value.to_string(),
            "netdev" => r.netdev = (value != "-").then(|| value.to_string()),
            "settle" => r.settle = value.to_string(),
            "insmod" => r.insmod_status = status(value),
            "carrier" => r.carrier = status(value).map(|c| c == 1),
            "ethtool" => r.ethtool_status = status(value),
            "channels" => r.channels = value.trim().parse().ok(),
            "rmmod" => r.rmmod_status = status(value),
            "warning" => r.warnings.push(value.to_string()),
            "stderr" => r.stderr.entry(id.to_string()).or_default().push(value.to_string()),
            "time" => {
                if let Ok(t) = value.parse::<f64>() {
                    r.times.insert(id.to_string(), t);
                }
            }
            "f" => {
                raw.files.insert(id.to_string(), (idx + 1, value.to_string()));
            }
            "nic" => r.nic = (value != "none").then(|| value.to_string()),
            "interrupts-header" => raw.header = Some(value.to_string()),
            "interrupts" => raw.interrupts.push((idx + 1, value.to_string())),
            // Not `irq:`: kernel lines such as `irq 9: nobody cared` or
            // irqdomain's `irq: …` errors may interleave with the report.
            "irqcount" => raw.irq_counts.push((idx + 1, value.to_string())),
            "seen" => r.seen.push(value.to_string()),
            "dmesg" => r.dmesg.push(value.to_string()),
            _ => {}
        }
    }
    if r.kernel.is_empty() {
        return Err(ReportError::Line { line: begin + 1, what: "no kernel: line".into(), text: String::new() });
    }
    assemble(&mut r, &raw)?;
    Ok(r)
}

fn bad(line: usize, what: impl Into<String>, text: &str) -> ReportError {
    ReportError::Line { line, what: what.into(), text: text.to_string() }
}

/// Build CPUs, nodes, PCI functions and MSI-X vectors from the raw items.
fn assemble(r: &mut GuestReport, raw: &Raw) -> Result<(), ReportError> {
    let num = |path: &str, (line, v): &(usize, String)| {
        v.trim().parse::<i64>().map_err(|_| bad(*line, format!("{path}: not a number"), v))
    };
    let list = |path: &str, (line, v): &(usize, String)| {
        parse_cpulist(v).map_err(|e| bad(*line, format!("{path}: {e}"), v))
    };
    let hex = |path: &str, (line, v): &(usize, String)| {
        u32::from_str_radix(v.trim().trim_start_matches("0x"), 16).map_err(|_| bad(*line, format!("{path}: not hex"), v))
    };
    const CPU: &str = "/sys/devices/system/cpu/";
    const NODE: &str = "/sys/devices/system/node/node";
    const PCI: &str = "/sys/bus/pci/devices/";
    let online = match raw.files.get("/sys/devices/system/cpu/online") {
        Some(v) => list("online", v)?,
        None => Vec::new(),
    };
    for &c in &online {
        let get = |leaf: &str| raw.files.get(&format!("{CPU}cpu{c}/topology/{leaf}"));
        let need = |leaf: &str| {
            get(leaf).ok_or_else(|| bad(0, format!("cpu {c}: no topology/{leaf} in the report"), ""))
        };
        let node = raw
            .links
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{CPU}cpu{c}/node")))
            .and_then(|n| n.parse::<i64>().ok())
            .unwrap_or(-1);
        let cpu = GuestCpu {
            package: num("physical_package_id", need("physical_package_id")?)?,
            die: get("die_id").and_then(|v| v.1.trim().parse().ok()),
            core: num("core_id", need("core_id")?)?,
            siblings: list("thread_siblings_list", need("thread_siblings_list")?)?,
            node,
        };
        r.cpus.insert(c, cpu);
    }
    for (path, v) in &raw.files {
        if let Some(rest) = path.strip_prefix(NODE) {
            let Some((n, leaf)) = rest.split_once('/') else { continue };
            let Ok(n) = n.parse::<u32>() else { continue };
            let node = r.nodes.entry(n).or_insert_with(|| GuestNode { cpus: Vec::new(), mem_kib: 0, distance: Vec::new() });
            match leaf {
                "cpulist" => node.cpus = list(path, v)?,
                "meminfo" => node.mem_kib = num(path, v)? as u64,
                "distance" => {
                    node.distance = v
                        .1
                        .split_whitespace()
                        .map(|d| d.parse::<u32>().map_err(|_| bad(v.0, format!("{path}: bad distance"), &v.1)))
                        .collect::<Result<_, _>>()?;
                }
                _ => {}
            }
        } else if let Some(rest) = path.strip_prefix(PCI) {
            let Some((bdf, leaf)) = rest.split_once('/') else { continue };
            let dev = r.pci.entry(bdf.to_string()).or_insert_with(|| GuestPci {
                vendor: 0,
                device: 0,
                class: 0,
                numa_node: -1,
                driver: None,
            });
            match leaf {
                "vendor" => dev.vendor = hex(path, v)? as u16,
                "device" => dev.device = hex(path, v)? as u16,
                "class" => dev.class = hex(path, v)?,
                "numa_node" => dev.numa_node = num(path, v)?,
                "driver" => dev.driver = v.1.rsplit('/').next().map(str::to_string),
                _ => {}
            }
        }
    }
    // /proc/interrupts columns: "CPU0 CPU1 …" (online CPUs only).
    let columns: Vec<u32> = raw
        .header
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect();
    let mut irqs: BTreeMap<u32, GuestIrq> = BTreeMap::new();
    for (path, v) in &raw.files {
        let Some(rest) = path.strip_prefix("/proc/irq/") else { continue };
        let Some((irq, leaf)) = rest.split_once('/') else { continue };
        let Ok(irq) = irq.parse::<u32>() else { continue };
        let e = irqs.entry(irq).or_insert_with(|| GuestIrq::unnamed(irq));
        match leaf {
            "smp_affinity_list" => e.affinity = Some(list(path, v)?),
            "effective_affinity_list" => e.effective = Some(list(path, v)?),
            "affinity_hint" => e.hint = Some(v.1.trim().to_string()),
            _ => {}
        }
    }
    for (line, text) in &raw.interrupts {
        let mut it = text.split_whitespace();
        let irq: u32 = it
            .next()
            .and_then(|f| f.strip_suffix(':'))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| bad(*line, "interrupts line without an IRQ number", text))?;
        let rest: Vec<&str> = it.collect();
        if rest.len() < columns.len() {
            return Err(bad(*line, format!("fewer counts than the {} CPU columns", columns.len()), text));
        }
        let max_cpu = columns.iter().max().map_or(0, |m| *m as usize + 1);
        let mut counts = vec![0u64; max_cpu];
        for (col, cpu) in columns.iter().enumerate() {
            counts[*cpu as usize] =
                rest[col].parse().map_err(|_| bad(*line, format!("count {:?} is not a number", rest[col]), text))?;
        }
        let e = irqs.entry(irq).or_insert_with(|| GuestIrq::unnamed(irq));
        e.counts = counts;
        e.name = rest.last().filter(|_| rest.len() > columns.len()).map_or("-".into(), |n| n.to_string());
    }
    let nr_cpus = r.cpus.keys().max().map_or(0, |c| *c as usize + 1);
    for (line, text) in &raw.irq_counts {
        let (irq, counts, name) = parse_irq_counts(text, nr_cpus).map_err(|what| bad(*line, what, text))?;
        let e = irqs.entry(irq).or_insert_with(|| GuestIrq::unnamed(irq));
        e.counts = counts;
        e.name = name;
    }
    r.msix = irqs.into_values().collect();
    Ok(())
}

/// One compact `/proc/interrupts` line as the guest agent prints it after
/// `irqcount: `: `IRQ CPU=COUNT,… | CHIP HWIRQ NAME`, with only the CPUs whose count
/// is not zero (`-` for none). Returns the IRQ, the counts indexed by CPU (at
/// least `nr_cpus` long) and the action name (`-` if the line has none).
fn parse_irq_counts(text: &str, nr_cpus: usize) -> Result<(u32, Vec<u64>, String), String> {
    let (counts_part, rest) = text.split_once('|').ok_or("no `|` between the counts and the chip")?;
    let mut it = counts_part.split_whitespace();
    let irq: u32 = it.next().and_then(|n| n.parse().ok()).ok_or("no IRQ number")?;
    let list = it.next().ok_or("no counts")?;
    if let Some(extra) = it.next() {
        return Err(format!("{extra:?} after the counts: CPU=COUNT pairs are separated by commas"));
    }
    let mut pairs: Vec<(usize, u64)> = Vec::new();
    let mut listed = std::collections::HashSet::new();
    if list != "-" {
        for pair in list.split(',') {
            let (cpu, count) = pair.split_once('=').ok_or_else(|| format!("count {pair:?} is not CPU=COUNT"))?;
            let cpu: u32 = cpu.parse().map_err(|_| format!("CPU {cpu:?} is not a number"))?;
            let count: u64 = count.parse().map_err(|_| format!("count {count:?} is not a number"))?;
            if cpu >= crate::cpulist::MAX_CPUS {
                return Err(format!("CPU {cpu} is beyond {}", crate::cpulist::MAX_CPUS));
            }
            if !listed.insert(cpu) {
                return Err(format!("CPU {cpu} is listed twice"));
            }
            pairs.push((cpu as usize, count));
        }
    }
    let len = pairs.iter().map(|(c, _)| c + 1).max().unwrap_or(0).max(nr_cpus);
    let mut counts = vec![0u64; len];
    for (cpu, count) in pairs {
        counts[cpu] = count;
    }
    // CHIP HWIRQ NAME: the name is the last field when there are three or more.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let name = if fields.len() >= 3 { fields[fields.len() - 1].to_string() } else { "-".to_string() };
    Ok((irq, counts, name))
}

impl GuestReport {
    /// Guest seconds from `/init` start to the report, if both were recorded.
    pub fn init_to_report_s(&self) -> Option<f64> {
        Some(self.times.get("report")? - self.times.get("init")?)
    }

    /// Guest seconds from the start of `ip link set <netdev> up` (the probe
    /// milestone) to the carrier reading 1, if both were recorded. Includes
    /// `mana_open()`: every queue's creation and, on 6.x, its RQ fence.
    pub fn ifup_to_carrier_s(&self) -> Option<f64> {
        Some(self.times.get("carrier")? - self.times.get("probe")?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_round_trip() {
        assert_eq!(parse_cpulist("0-3,8").expect("list"), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse_cpulist("").expect("list"), Vec::<u32>::new());
        assert!(parse_cpulist("3-1").is_err());
        assert_eq!(format_cpulist(&[0, 1, 2, 3, 8]), "0-3,8");
    }

    #[test]
    fn missing_markers_are_errors() {
        assert_eq!(parse("hello").expect_err("must fail"), ReportError::NoBegin);
        assert_eq!(parse("x\nMANARIG-REPORT-BEGIN 1\nkernel: 6.1").expect_err("must fail"), ReportError::NoEnd(2));
        assert!(matches!(parse("MANARIG-REPORT-BEGIN 9\nMANARIG-REPORT-END"), Err(ReportError::Version(_))));
    }

    const SAMPLE: &str = "noise before\r
MANARIG-REPORT-BEGIN 1\r
kernel: 6.12.117+deb13-cloud-amd64\r
time init: 5.81\r
f /sys/devices/system/cpu/online: 0-1\r
f /sys/devices/system/cpu/cpu0/topology/physical_package_id: 0\r
f /sys/devices/system/cpu/cpu1/topology/physical_package_id: 0\r
f /sys/devices/system/cpu/cpu0/topology/core_id: 0\r
f /sys/devices/system/cpu/cpu1/topology/core_id: 0\r
f /sys/devices/system/cpu/cpu0/topology/thread_siblings_list: 0-1\r
f /sys/devices/system/cpu/cpu1/topology/thread_siblings_list: 0-1\r
link /sys/devices/system/cpu/cpu0/node0\r
link /sys/devices/system/cpu/cpu1/node0\r
f /sys/devices/system/node/node0/cpulist: 0-1\r
f /sys/devices/system/node/node0/distance: 10\r
f /sys/devices/system/node/node0/meminfo: 255780\r
f /sys/bus/pci/devices/0000:41:00.0/vendor: 0x1414\r
f /sys/bus/pci/devices/0000:41:00.0/device: 0x00ba\r
f /sys/bus/pci/devices/0000:41:00.0/numa_node: 0\r
f /sys/bus/pci/devices/0000:41:00.0/driver: ../../../../bus/pci/drivers/mana\r
nic: 0000:41:00.0\r
f /proc/irq/24/smp_affinity_list: 0\r
f /proc/irq/24/affinity_hint: 1\r
f /proc/irq/24/effective_affinity_list: 0\r
interrupts-header: CPU0 CPU1\r
interrupts: 24: 3 0 PCI-MSIX-0000:41:00.0 0-edge mana_hwc@pci:0000:41:00.0\r
time report: 7.29\r
MANARIG-REPORT-END\r
";

    #[test]
    fn sysfs_dump_lines_assemble_into_cpus_nodes_pci_and_msix() {
        let r = parse(SAMPLE).expect("report");
        assert_eq!(r.kernel, "6.12.117+deb13-cloud-amd64");
        assert_eq!(r.cpus.len(), 2);
        assert_eq!(r.cpus[&1].siblings, vec![0, 1]);
        assert_eq!(r.cpus[&1].node, 0);
        assert_eq!(r.nodes[&0].distance, vec![10]);
        assert_eq!(r.nodes[&0].mem_kib, 255_780);
        let nic = &r.pci["0000:41:00.0"];
        assert_eq!((nic.vendor, nic.device, nic.numa_node), (0x1414, 0x00ba, 0));
        assert_eq!(nic.driver.as_deref(), Some("mana"));
        assert_eq!(r.msix.len(), 1);
        assert_eq!(r.msix[0].name, "mana_hwc@pci:0000:41:00.0");
        assert_eq!(r.msix[0].counts, vec![3, 0]);
        assert_eq!(r.msix[0].effective, Some(vec![0]));
        assert_eq!(r.init_to_report_s().map(|s| (s * 100.0).round()), Some(148.0));
    }

    #[test]
    fn tool_stderr_lines_are_kept_by_tool() {
        let text = SAMPLE.replace(
            "time report: 7.29\r\n",
            "rmmod: 1\r\nstderr rmmod: rmmod: can't unload module 'mana': Resource temporarily unavailable\r\n\
             stderr ethtool: netlink error: Invalid argument\r\nstderr ethtool: second line\r\ntime report: 7.29\r\n",
        );
        let r = parse(&text).expect("report");
        assert_eq!(r.rmmod_status, Some(1));
        assert_eq!(r.stderr["rmmod"], ["rmmod: can't unload module 'mana': Resource temporarily unavailable"]);
        assert_eq!(r.stderr["ethtool"], ["netlink error: Invalid argument", "second line"]);
        assert!(parse(SAMPLE).expect("report").stderr.is_empty());
    }

    /// The compact `irqcount:` form (guest-images/init.sh `irq_counts`): only the
    /// CPUs with a non-zero count, so a 256-CPU line stays short.
    #[test]
    fn compact_irq_lines_give_the_same_vector_as_raw_interrupts_lines() {
        let compact = SAMPLE.replace(
            "interrupts-header: CPU0 CPU1\r\ninterrupts: 24: 3 0 PCI-MSIX-0000:41:00.0 0-edge mana_hwc@pci:0000:41:00.0\r\n",
            "irqcount: 24 0=3 | PCI-MSIX-0000:41:00.0 0-edge mana_hwc@pci:0000:41:00.0\r\n",
        );
        assert_ne!(compact, SAMPLE);
        assert_eq!(parse(&compact).expect("compact report").msix, parse(SAMPLE).expect("report").msix);
        // Kernel messages on the console between the markers are not report items.
        let noisy = compact.replace(
            "nic: 0000:41:00.0\r\n",
            "nic: 0000:41:00.0\r\nirq 9: nobody cared (try booting with the \"irqpoll\" option)\r\nirq: no irq domain found for foo !\r\n",
        );
        assert_ne!(noisy, compact);
        assert_eq!(parse(&noisy).expect("noisy report").msix, parse(SAMPLE).expect("report").msix);
    }

    #[test]
    fn compact_irq_lines_parse_sparse_counts_and_reject_garbage() {
        let (irq, counts, name) = parse_irq_counts("61 3=1,255=7 | IR-PCI-MSIX-0000:41:00.0 5-edge mana_q4@pci:0000:41:00.0", 256)
            .expect("line");
        assert_eq!((irq, counts.len(), counts[3], counts[255], counts.iter().sum::<u64>()), (61, 256, 1, 7, 8));
        assert_eq!(name, "mana_q4@pci:0000:41:00.0");
        let (_, counts, _) = parse_irq_counts("30 - | PCI-MSIX-0000:41:00.0 1-edge mana_q0", 8).expect("never fired");
        assert_eq!(counts, vec![0; 8]);
        for bad in [
            "30 0=1 PCI-MSIX",
            "x 0=1 | a b c",
            "30 | a b c",
            "30 0:1 | a b c",
            "30 0=x | a b c",
            "30 99999=1 | a b c",
            "30 0=1 1=1 | a b c",
            "30 7=1,7=2 | a b c",
        ] {
            assert!(parse_irq_counts(bad, 8).is_err(), "{bad}");
        }
    }

    #[test]
    fn malformed_value_names_its_console_line() {
        let text = SAMPLE.replace("thread_siblings_list: 0-1\r\nf /sys/devices/system/cpu/cpu1", "thread_siblings_list: 1-0\r\nf /sys/devices/system/cpu/cpu1");
        match parse(&text) {
            Err(ReportError::Line { line, .. }) => assert_eq!(line, 10),
            other => panic!("expected a line error, got {other:?}"),
        }
    }

    /// Captured console of a real boot (seed 002, Debian 6.12.117, mana loaded,
    /// no MANA device yet).
    #[test]
    fn captured_console_without_nic_parses() {
        let r = parse(include_str!("../tests/fixtures/console-seed002-6.12.txt")).expect("report");
        assert_eq!(r.kernel, "6.12.117+deb13-cloud-amd64");
        assert_eq!(r.cpus.len(), 8);
        assert_eq!(r.cpus[&5].siblings, vec![4, 5]);
        assert_eq!(r.nodes[&1].cpus, vec![4, 5, 6, 7]);
        assert_eq!(r.nodes[&1].distance, vec![20, 10]);
        assert_eq!(r.nic, None);
        assert_eq!(r.pci["0000:40:00.0"].numa_node, 0);
        assert_eq!(r.insmod_status, Some(0));
    }

    /// Captured console of a real boot with QEMU's NVMe controller in the NIC
    /// slot (`manarig.nic=0x1b36:0x0010`): 9 MSI-X vectors, nvme0q0..q8.
    #[test]
    fn captured_console_with_msix_vectors_parses() {
        let r = parse(include_str!("../tests/fixtures/console-seed002-6.12-nvme.txt")).expect("report");
        assert_eq!(r.nic.as_deref(), Some("0000:41:00.0"));
        assert_eq!(r.msix.len(), 9);
        assert_eq!(r.msix[0].name, "nvme0q0");
        assert_eq!(r.msix[0].counts.len(), 8);
        assert!(r.msix[0].counts[0] > 0, "the admin queue fired on CPU 0");
        assert_eq!(r.msix[1].affinity, Some(vec![4]));
        assert_eq!(r.msix[1].hint.as_deref(), Some("00"));
    }

    /// smp_affinity_list of each reported vector, in IRQ order, as cpulists.
    fn affinities(r: &GuestReport) -> Vec<String> {
        r.msix.iter().map(|v| format_cpulist(v.affinity.as_deref().unwrap_or(&[]))).collect()
    }

    /// Captured console of a real run: seed 002's machine, Debian 6.12.117,
    /// the devshell branch's mana-device over vfio-user, mana probed, eth0 up.
    /// The table is seed 002's (docs/seeds.md: IRQ 0..7 -> 0-1, 2-3, 0-1,
    /// 2-3, 4-5, 6-7, 4-5, 6-7), after mana_hwc on CPU 0.
    #[test]
    fn captured_mana_probe_on_6_12_gives_seed_002_table() {
        let r = parse(include_str!("../tests/fixtures/console-seed002-6.12-mana.txt")).expect("report");
        assert_eq!(r.settle, "probe-returned fired=yes");
        assert_eq!(r.netdev.as_deref(), Some("eth0"));
        assert_eq!(r.pci[r.nic.as_deref().expect("nic")].device, 0x00ba);
        assert_eq!(affinities(&r), ["0", "0-1", "2-3", "0-1", "2-3", "4-5", "6-7", "4-5", "6-7"]);
        assert!(r.msix[1].name.starts_with("mana_q0@"));
        // Every vector fired, so the effective CPU lies in the mask (deferred
        // affinity moves are applied on a fire).
        for v in &r.msix {
            let eff = v.effective.as_deref().expect("effective");
            assert!(eff.iter().all(|c| v.affinity.as_deref().expect("affinity").contains(c)), "{v:?}");
        }
    }

    /// Linux 6.1 (before irq_setup): one CPU per queue from
    /// cpumask_local_spread(i, node) starting at i = 1 for q0 (captured run).
    #[test]
    fn captured_mana_probe_on_6_1_spreads_one_cpu_per_vector() {
        let r = parse(include_str!("../tests/fixtures/console-seed002-6.1-mana.txt")).expect("report");
        assert_eq!(affinities(&r), ["0", "1", "2", "3", "4", "5", "6", "7", "0"]);
    }

    /// Linux 7.3 (captured run): HWC on 0-1, the queue vectors named mana_msiN
    /// one CPU each; they only fire after `ip link set eth0 up`.
    #[test]
    fn captured_mana_probe_on_7_names_vectors_msi() {
        let r = parse(include_str!("../tests/fixtures/console-seed002-7-mana.txt")).expect("report");
        assert_eq!(affinities(&r), ["0-1", "0", "1", "2", "3", "4", "5", "6", "7"]);
        assert!(r.msix[1].name.starts_with("mana_msi1@"), "{}", r.msix[1].name);
        assert_eq!(r.settle, "probe-returned fired=yes");
    }

    /// Captured run of R17's machine (topologies/r17-diameter.toml: nodes 0-1, 2-3,
    /// 4-5, 6-7; from node 0 the distances 12, 20, 22 give the hops {0}, {1},
    /// {2}, {3}) on 6.12 with the NIC on node 0: no SMT, so each queue gets one
    /// CPU, in hop order 0-1, 2-3, 4-5, 6-7; the guest's distance rows are R17's.
    #[test]
    fn captured_mana_probe_on_r17_follows_the_hop_order() {
        let r = parse(include_str!("../tests/fixtures/console-r17-6.12-mana.txt")).expect("report");
        assert_eq!(r.nodes[&0].distance, vec![10, 12, 20, 22]);
        assert_eq!(r.nodes[&1].distance, vec![12, 10, 22, 24]);
        assert_eq!(affinities(&r), ["0", "0", "1", "2", "3", "4", "5", "6", "7"]);
    }

    /// Captured console of a real run: seed 002's machine, Debian 6.1.192,
    /// `manarig.channels=4 manarig.reprobe=1`: the first probe as a stage, then
    /// rmmod, the second probe and the report.
    #[test]
    fn captured_reprobe_run_has_a_first_probe_stage_and_the_lifecycle_items() {
        let console = include_str!("../tests/fixtures/console-seed002-6.1-reprobe.txt");
        let stages = parse_stages(console).expect("stages");
        assert_eq!(stages.len(), 1);
        let (name, first) = &stages[0];
        assert_eq!(name, "first-probe");
        assert_eq!((first.carrier, first.ethtool_status, first.channels, first.rmmod_status), (Some(true), Some(0), Some(4), None));
        let r = parse(console).expect("report");
        assert_eq!((r.carrier, r.ethtool_status, r.channels, r.rmmod_status), (Some(true), Some(0), Some(4), Some(0)));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert!(r.ifup_to_carrier_s().is_some_and(|s| s >= 0.0));
        // Linux 6.1 (cpumask_local_spread per vector): the same table after the re-probe.
        assert_eq!(affinities(first), affinities(&r));
        assert_eq!(affinities(&r), ["0", "1", "2", "3", "4", "5", "6", "7", "0"]);
    }

    #[test]
    fn a_stage_without_its_end_is_an_error() {
        let text = "MANARIG-STAGE-BEGIN first-probe\nkernel: 6.1\n";
        assert_eq!(parse_stages(text).expect_err("must fail"), ReportError::NoEnd(1));
    }
}
