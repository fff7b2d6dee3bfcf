//! `lscpu` (util-linux) in its three forms:
//!
//! - the summary people paste (`lscpu`): `Key: value` lines, old flat and new sectioned
//!   layouts; read are `CPU(s)`, `On-line`/`Off-line CPU(s) list`, `Thread(s) per core`,
//!   `Core(s) per socket`, `Socket(s)`, `NUMA node(s)`, `NUMA nodeN CPU(s)` and
//!   `Model name`; other keys are skipped;
//! - the parsable form (`lscpu -p`, `lscpu -p=CPU,CORE,SOCKET,NODE`): `#` comments, the
//!   last naming the columns, then one comma-separated row per CPU;
//! - the extended form (`lscpu -e`): a header line of column names, then one
//!   whitespace-separated row per CPU (`-` for an unknown value).
//!
//! In `-p` and `-e` the `Core` and `Socket` columns are lscpu's logical ids (unique over
//! the machine): CPUs with the same core are SMT siblings.

use super::error::{ErrorKind, ImportError, Origin};
use super::facts::{CpuPlace, DeclaredShape, Facts, Sourced};
use super::paste::{is_elision, Line};
use crate::cpulist::CpuMask;
use crate::text::plural;
use std::collections::BTreeMap;

/// `Key: value` of a summary line (key and value trimmed), or `None` without a colon.
fn key_value(text: &str) -> Option<(&str, &str)> {
    let (k, v) = text.split_once(':')?;
    let k = k.trim();
    (!k.is_empty()).then_some((k, v.trim()))
}

/// Keys that only plain `lscpu` prints (used to recognise its output).
const SUMMARY_KEYS: [&str; 6] =
    ["Architecture", "CPU(s)", "Thread(s) per core", "Core(s) per socket", "Socket(s)", "NUMA node(s)"];

/// Whether `text` is a line of plain `lscpu` that identifies it.
pub(crate) fn is_summary_line(text: &str) -> bool {
    key_value(text).is_some_and(|(k, _)| SUMMARY_KEYS.contains(&k) || node_of_key(k).is_some())
}

/// Whether `text` is the header of `lscpu -p` (a comment naming the CPU column, or
/// the comment lscpu prints first).
pub(crate) fn is_parsable_header(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("# The following is the parsable format")
        || t.strip_prefix('#').is_some_and(|c| c.trim().split(',').next().is_some_and(|f| f.trim() == "CPU"))
}

/// Whether `text` is the header of `lscpu -e`.
pub(crate) fn is_extended_header(text: &str) -> bool {
    let cols: Vec<&str> = text.split_whitespace().collect();
    cols.first() == Some(&"CPU") && cols.iter().any(|c| ["NODE", "SOCKET", "CORE"].contains(c))
}

/// The node of a `NUMA node<N> CPU(s)` key.
fn node_of_key(key: &str) -> Option<u32> {
    key.strip_prefix("NUMA node")?.strip_suffix(" CPU(s)")?.parse().ok()
}

fn number(file: &str, line: &Line<'_>, key: &str, value: &str) -> Result<u32, ImportError> {
    value.parse().map_err(|_| {
        ImportError::new(ErrorKind::Unknown, Origin::line(file, line.no), format!("{key}: {value:?} is not a number"))
    })
}

fn cpulist(file: &str, line: &Line<'_>, value: &str) -> Result<CpuMask, ImportError> {
    CpuMask::parse_cpulist(value)
        .map_err(|e| ImportError::new(ErrorKind::Unknown, Origin::line(file, line.no), e.to_string()))
}

/// Read plain `lscpu` output.
///
/// # Errors
/// [`ErrorKind::Unknown`] for a line that is not `Key: value` or a value that does not
/// parse; [`ErrorKind::Contradiction`] for a node listed twice with different CPUs;
/// [`ErrorKind::Missing`] when only part of the shape (threads, cores, sockets) is given.
pub(crate) fn read_summary(file: &str, lines: &[Line<'_>]) -> Result<Facts, ImportError> {
    let mut facts = Facts::default();
    let (mut sockets, mut cores, mut threads) = (None, None, None);
    for line in lines {
        if line.text.trim().is_empty() || is_elision(line.text) {
            continue;
        }
        let Some((key, value)) = key_value(line.text) else {
            return Err(ImportError::new(
                ErrorKind::Unknown,
                Origin::line(file, line.no),
                format!("{:?} is not an lscpu line (Key: value)", line.text.trim()),
            ));
        };
        let here = || Origin::line(file, line.no);
        // `-` is what lscpu prints for a value it does not know.
        if value == "-" {
            continue;
        }
        match key {
            "CPU(s)" => facts.total_cpus = Some(Sourced::new(number(file, line, key, value)?, here())),
            "On-line CPU(s) list" => facts.online = Some(Sourced::new(cpulist(file, line, value)?, here())),
            "Off-line CPU(s) list" => facts.offline = Some(Sourced::new(cpulist(file, line, value)?, here())),
            "Thread(s) per core" => threads = Some((number(file, line, key, value)?, here())),
            "Core(s) per socket" => cores = Some((number(file, line, key, value)?, here())),
            "Socket(s)" => sockets = Some((number(file, line, key, value)?, here())),
            "NUMA node(s)" => facts.node_count = Some(Sourced::new(number(file, line, key, value)?, here())),
            "Model name" => facts.model_name = Some(value.to_owned()),
            _ => {
                if let Some(node) = node_of_key(key) {
                    facts.set_node_cpus(node, cpulist(file, line, value)?, here())?;
                }
            }
        }
    }
    match (sockets, cores, threads) {
        (Some((s, origin)), Some((c, _)), Some((t, _))) => {
            let shape = DeclaredShape { sockets: s, cores_per_socket: c, threads_per_core: t };
            facts.shape = Some(Sourced::new(shape, origin));
        }
        (None, None, None) => {}
        (s, c, t) => {
            let absent: Vec<&str> =
                [(s.is_none(), "Socket(s)"), (c.is_none(), "Core(s) per socket"), (t.is_none(), "Thread(s) per core")]
                    .into_iter()
                    .filter_map(|(a, k)| a.then_some(k))
                    .collect();
            return Err(ImportError::new(
                ErrorKind::Missing,
                Origin::file(file),
                format!(
                    "lscpu output without {} (the CPU shape needs threads per core, cores per socket and sockets)",
                    absent.join(", ")
                ),
            ));
        }
    }
    facts.read.push("lscpu".to_owned());
    Ok(facts)
}

/// The columns of an `lscpu -p`/`-e` table that the importer reads.
#[derive(Default)]
struct Columns {
    cpu: Option<usize>,
    core: Option<usize>,
    socket: Option<usize>,
    node: Option<usize>,
    online: Option<usize>,
    count: usize,
}

impl Columns {
    fn of(names: &[&str]) -> Self {
        let find = |want: &str| names.iter().position(|n| n.trim().eq_ignore_ascii_case(want));
        Columns {
            cpu: find("CPU"),
            core: find("CORE"),
            socket: find("SOCKET"),
            node: find("NODE"),
            online: find("ONLINE"),
            count: names.len(),
        }
    }
}

/// One table row's fields → facts (shared by `-p` and `-e`).
struct TableReader<'f> {
    file: &'f str,
    form: &'static str,
    cols: Columns,
    facts: Facts,
    /// Node → its CPUs and the first line naming it.
    nodes: BTreeMap<u32, (CpuMask, usize)>,
    offline: CpuMask,
}

impl<'f> TableReader<'f> {
    fn new(file: &'f str, form: &'static str, cols: Columns, header: &Line<'_>) -> Result<Self, ImportError> {
        if cols.cpu.is_none() || cols.core.is_none() {
            return Err(ImportError::new(
                ErrorKind::Missing,
                Origin::line(file, header.no),
                format!(
                    "{form} without the CPU and CORE columns (use `lscpu {}`)",
                    if form == "lscpu -e" { "-e" } else { "-p" }
                ),
            ));
        }
        Ok(Self { file, form, cols, facts: Facts::default(), nodes: BTreeMap::new(), offline: CpuMask::new() })
    }

    fn row(&mut self, line: &Line<'_>, fields: &[&str]) -> Result<(), ImportError> {
        let here = Origin::line(self.file, line.no);
        if fields.len() != self.cols.count {
            let kind = if fields.len() < self.cols.count { ErrorKind::Truncated } else { ErrorKind::Unknown };
            return Err(ImportError::new(
                kind,
                here,
                format!(
                    "{} row with {}, the header names {}",
                    self.form,
                    plural(fields.len(), "field"),
                    self.cols.count
                ),
            ));
        }
        let field = |i: Option<usize>| i.map(|i| fields[i].trim()).filter(|v| !v.is_empty() && *v != "-");
        let num = |name: &str, i: Option<usize>| -> Result<Option<u32>, ImportError> {
            field(i)
                .map(|v| {
                    v.parse::<u32>().map_err(|_| {
                        ImportError::new(ErrorKind::Unknown, here.clone(), format!("{name} {v:?} is not a number"))
                    })
                })
                .transpose()
        };
        let cpu = num("CPU", self.cols.cpu)?
            .ok_or_else(|| ImportError::new(ErrorKind::Unknown, here.clone(), "a row without a CPU number"))?;
        if cpu >= crate::cpulist::MAX_CPUS {
            return Err(ImportError::new(
                ErrorKind::Unsupported,
                here,
                format!("CPU {cpu} is beyond the kernel's limit"),
            ));
        }
        let online = field(self.cols.online).is_none_or(|v| matches!(v.to_ascii_lowercase().as_str(), "y" | "yes"));
        if !online {
            self.offline.insert(cpu);
            return Ok(());
        }
        let core = num("CORE", self.cols.core)?
            .ok_or_else(|| ImportError::new(ErrorKind::Unknown, here.clone(), format!("CPU {cpu} has no core")))?;
        let socket = num("SOCKET", self.cols.socket)?.unwrap_or(0);
        if let Some(node) = num("NODE", self.cols.node)? {
            self.nodes.entry(node).or_insert_with(|| (CpuMask::new(), line.no)).0.insert(cpu);
        }
        let place = CpuPlace { cpu, socket, die: 0, core };
        if self.facts.cpus.insert(cpu, Sourced::new(place, here.clone())).is_some() {
            return Err(ImportError::new(ErrorKind::Contradiction, here, format!("CPU {cpu} is listed twice")));
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Facts, ImportError> {
        if self.facts.cpus.is_empty() && self.offline.is_empty() {
            return Err(ImportError::new(
                ErrorKind::Truncated,
                Origin::file(self.file),
                format!("{} without CPU rows", self.form),
            ));
        }
        for (node, (cpus, line)) in std::mem::take(&mut self.nodes) {
            self.facts.set_node_cpus(node, cpus, Origin::line(self.file, line))?;
        }
        if !self.offline.is_empty() {
            self.facts.offline = Some(Sourced::new(self.offline, Origin::file(self.file)));
        }
        self.facts.read.push(self.form.to_owned());
        Ok(self.facts)
    }
}

/// Read `lscpu -p` output.
///
/// # Errors
/// [`ErrorKind::Missing`] without a header naming CPU and CORE; [`ErrorKind::Truncated`]
/// for a short row or no rows; [`ErrorKind::Unknown`] for a value that is not a number.
pub(crate) fn read_parsable(file: &str, lines: &[Line<'_>]) -> Result<Facts, ImportError> {
    let mut reader: Option<TableReader<'_>> = None;
    let mut header: Option<Line<'_>> = None;
    for line in lines {
        let t = line.text.trim();
        if t.is_empty() || is_elision(t) {
            continue;
        }
        if let Some(comment) = t.strip_prefix('#') {
            // The last comment before the rows names the columns.
            if comment.trim().split(',').next().is_some_and(|f| f.trim().eq_ignore_ascii_case("CPU")) {
                header = Some(*line);
            }
            continue;
        }
        if reader.is_none() {
            let h = header.ok_or_else(|| {
                ImportError::new(
                    ErrorKind::Missing,
                    Origin::line(file, line.no),
                    "lscpu -p row before the `# CPU,…` header",
                )
            })?;
            let names: Vec<&str> = h.text.trim().trim_start_matches('#').split(',').collect();
            reader = Some(TableReader::new(file, "lscpu -p", Columns::of(&names), &h)?);
        }
        if let Some(r) = reader.as_mut() {
            r.row(line, &t.split(',').collect::<Vec<_>>())?;
        }
    }
    reader
        .ok_or_else(|| ImportError::new(ErrorKind::Truncated, Origin::file(file), "lscpu -p without CPU rows"))?
        .finish()
}

/// Read `lscpu -e` output.
///
/// # Errors
/// As [`read_parsable`].
pub(crate) fn read_extended(file: &str, lines: &[Line<'_>]) -> Result<Facts, ImportError> {
    let mut reader: Option<TableReader<'_>> = None;
    for line in lines {
        let t = line.text.trim();
        if t.is_empty() || is_elision(t) {
            continue;
        }
        let fields: Vec<&str> = t.split_whitespace().collect();
        match reader.as_mut() {
            None => {
                if !is_extended_header(t) {
                    return Err(ImportError::new(
                        ErrorKind::Unknown,
                        Origin::line(file, line.no),
                        format!("{t:?} is not the `CPU NODE SOCKET CORE …` header of lscpu -e"),
                    ));
                }
                reader = Some(TableReader::new(file, "lscpu -e", Columns::of(&fields), line)?);
            }
            Some(r) => r.row(line, &fields)?,
        }
    }
    reader
        .ok_or_else(|| ImportError::new(ErrorKind::Truncated, Origin::file(file), "lscpu -e without a header"))?
        .finish()
}
