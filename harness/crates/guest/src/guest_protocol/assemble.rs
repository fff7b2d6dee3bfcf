//! From the report's raw `f <path>: <value>`, `link <path>` and interrupt lines
//! to CPUs, nodes, PCI functions and MSI-X vectors: the paths are sysfs' and
//! procfs' own (Documentation/ABI/stable/sysfs-devices-system-cpu,
//! sysfs-devices-node, sysfs-bus-pci; Documentation/filesystems/proc.rst).

use super::interrupts::{header_columns, parse_irq_counts, parse_raw_interrupts, IrqLine};
use super::report::{GuestCpu, GuestCpuState, GuestIrq, GuestNode, GuestPci, GuestReport};
use super::ReportError;
use std::collections::BTreeMap;

const CPU: &str = "/sys/devices/system/cpu/";
const NODE: &str = "/sys/devices/system/node/node";
const PCI: &str = "/sys/bus/pci/devices/";

/// A value with the 1-based line it came from.
type Value = (usize, String);

/// Raw items of a report before assembly.
#[derive(Default)]
pub(super) struct Raw {
    /// `f <path>: <value>` lines: path → (line, value).
    pub files: BTreeMap<String, Value>,
    /// `link <path>` lines (CPU → node links).
    pub links: Vec<String>,
    /// Version 1 `interrupts-header:` (CPU columns of /proc/interrupts).
    pub header: Option<String>,
    /// Version 1 `interrupts:` lines: (line, text).
    pub interrupts: Vec<Value>,
    /// `irqcount:` lines (the compact form): (line, text).
    pub irq_counts: Vec<Value>,
}

/// A report line error.
pub(super) fn bad(line: usize, what: impl Into<String>, text: &str) -> ReportError {
    ReportError::Line { line, what: what.into(), text: text.to_string() }
}

fn num(path: &str, (line, v): &Value) -> Result<i64, ReportError> {
    v.trim().parse::<i64>().map_err(|_| bad(*line, format!("{path}: not a number"), v))
}

/// Expand a kernel cpulist (`0-3,8,10-11`; empty = none).
fn list(path: &str, (line, v): &Value) -> Result<Vec<u32>, ReportError> {
    crate::cpulist::CpuMask::parse_cpulist(v.trim())
        .map(|mask| mask.iter().collect())
        .map_err(|e| bad(*line, format!("{path}: bad cpulist {v:?}: {e}"), v))
}

fn hex(path: &str, (line, v): &Value) -> Result<u32, ReportError> {
    u32::from_str_radix(v.trim().trim_start_matches("0x"), 16).map_err(|_| bad(*line, format!("{path}: not hex"), v))
}

/// Build CPUs, nodes, PCI functions and MSI-X vectors from the raw items.
pub(super) fn assemble(r: &mut GuestReport, raw: &Raw) -> Result<(), ReportError> {
    r.cpus = cpus(raw)?;
    r.cpu_state = cpu_state(raw)?;
    for (path, v) in &raw.files {
        if let Some(rest) = path.strip_prefix(NODE) {
            node_file(r, path, rest, v)?;
        } else if let Some(rest) = path.strip_prefix(PCI) {
            pci_file(r, path, rest, v)?;
        }
    }
    r.msix = vectors(raw, r.cpus.keys().max().map_or(0, |c| *c as usize + 1))?;
    Ok(())
}

/// Every online CPU's topology files and node link.
fn cpus(raw: &Raw) -> Result<BTreeMap<u32, GuestCpu>, ReportError> {
    let online = match raw.files.get("/sys/devices/system/cpu/online") {
        Some(v) => list("online", v)?,
        None => Vec::new(),
    };
    let mut cpus = BTreeMap::new();
    for &c in &online {
        let get = |leaf: &str| raw.files.get(&format!("{CPU}cpu{c}/topology/{leaf}"));
        let need =
            |leaf: &str| get(leaf).ok_or_else(|| bad(0, format!("cpu {c}: no topology/{leaf} in the report"), ""));
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
            cluster: get("cluster_id").and_then(|v| v.1.trim().parse().ok()),
            siblings: list("thread_siblings_list", need("thread_siblings_list")?)?,
            node,
        };
        cpus.insert(c, cpu);
    }
    Ok(cpus)
}

/// The CPU masks: `present`, `possible`, `offline`, `isolated`, `nohz_full`
/// (cpulists) and `/proc/irq/default_smp_affinity` (a hex mask). nohz_full prints
/// `(null)` without nohz_full CPUs on some kernels: read as none.
fn cpu_state(raw: &Raw) -> Result<GuestCpuState, ReportError> {
    let get = |leaf: &str| -> Result<Option<Vec<u32>>, ReportError> {
        match raw.files.get(&format!("{CPU}{leaf}")) {
            Some((_, v)) if v.trim() == "(null)" => Ok(Some(Vec::new())),
            Some(v) => list(leaf, v).map(Some),
            None => Ok(None),
        }
    };
    let default_smp_affinity = match raw.files.get("/proc/irq/default_smp_affinity") {
        Some((line, v)) => Some(
            crate::cpulist::CpuMask::parse_mask_string(v.trim())
                .map_err(|e| bad(*line, format!("/proc/irq/default_smp_affinity: {e}"), v))?
                .iter()
                .collect(),
        ),
        None => None,
    };
    Ok(GuestCpuState {
        present: get("present")?,
        possible: get("possible")?,
        offline: get("offline")?,
        isolated: get("isolated")?,
        nohz_full: get("nohz_full")?,
        default_smp_affinity,
    })
}

/// One `/sys/devices/system/node/nodeN/<leaf>` file (`rest` = `N/<leaf>`).
fn node_file(r: &mut GuestReport, path: &str, rest: &str, v: &Value) -> Result<(), ReportError> {
    let Some((n, leaf)) = rest.split_once('/') else { return Ok(()) };
    let Ok(n) = n.parse::<u32>() else { return Ok(()) };
    let node = r.nodes.entry(n).or_insert_with(|| GuestNode { cpus: Vec::new(), mem_kib: 0, distance: Vec::new() });
    match leaf {
        "cpulist" => node.cpus = list(path, v)?,
        "meminfo" => node.mem_kib = num(path, v)? as u64,
        "distance" => {
            node.distance =
                v.1.split_whitespace()
                    .map(|d| d.parse::<u32>().map_err(|_| bad(v.0, format!("{path}: bad distance"), &v.1)))
                    .collect::<Result<_, _>>()?;
        }
        _ => {}
    }
    Ok(())
}

/// One `/sys/bus/pci/devices/<BDF>/<leaf>` file (`rest` = `<BDF>/<leaf>`).
fn pci_file(r: &mut GuestReport, path: &str, rest: &str, v: &Value) -> Result<(), ReportError> {
    let Some((bdf, leaf)) = rest.split_once('/') else { return Ok(()) };
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
    Ok(())
}

/// The NIC's vectors: `/proc/irq/N/*` files and the interrupt lines, in IRQ order.
fn vectors(raw: &Raw, nr_cpus: usize) -> Result<Vec<GuestIrq>, ReportError> {
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
    let columns = header_columns(raw.header.as_deref().unwrap_or(""));
    let raw_lines = raw.interrupts.iter().map(|(line, text)| (line, text, parse_raw_interrupts(text, &columns)));
    let compact = raw.irq_counts.iter().map(|(line, text)| (line, text, parse_irq_counts(text, nr_cpus)));
    for (line, text, parsed) in raw_lines.chain(compact) {
        let (irq, counts, name): IrqLine = parsed.map_err(|what| bad(*line, what, text))?;
        let e = irqs.entry(irq).or_insert_with(|| GuestIrq::unnamed(irq));
        e.counts = counts;
        e.name = name;
    }
    Ok(irqs.into_values().collect())
}
