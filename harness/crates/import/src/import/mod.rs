//! Import a real machine: what people paste or can collect → a topology file.
//!
//! Inputs, each detected by its content (README, "Import a machine"):
//! - text as people paste it (module `paste`): plain `lscpu`, `numactl -H`, `lscpu -p`,
//!   `lscpu -e` and `cat /sys/class/net/IF/device/numa_node`, in one file or several, with
//!   or without `$ command` prompt lines and `..` elisions;
//! - a snapshot of the kernel's topology files (module `sysfs`): a folder, `/sys` itself, or a
//!   tar archive (optionally gzip-compressed) made with the `tar` line in that module;
//! - hwloc XML (module `hwloc`): `lstopo --of xml`.
//!
//! Each input is read into facts that name their file and line; the facts of all inputs
//! are merged (the same fact twice must agree) and turned into a machine (`build`): dense
//! nodes, the CPU shape and numbering, the SLIT, the NIC's node (from the input, else
//! [`ImportOptions::nic_node`]). The result is written as a topology file and validated
//! with [`Topology::from_toml_str`], so it is exactly what `expect` and `run` would load.
//!
//! Public API: [`import`]`(&[Input], &ImportOptions) -> Result<Imported, ImportError>`;
//! [`detect`] names an input's kind. Every error is one [`ImportError`] line naming the
//! input file and line.

mod build;
mod emit;
mod error;
mod facts;
mod hwloc;
mod lscpu;
mod numactl;
mod paste;
mod sysfs;

pub use build::NicNode;
pub use error::{ErrorKind, ImportError, Origin};

use crate::topology::Topology;
use facts::Facts;
use std::path::{Path, PathBuf};

/// Largest text or archive input read (bytes); real ones are far smaller.
const MAX_INPUT: u64 = 256 << 20;

/// What an input is, as detected from its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// Text: lscpu (any form), numactl -H, numa_node values.
    Text,
    /// A sysfs snapshot folder (or `/sys`).
    SysfsFolder,
    /// A sysfs snapshot tar archive (plain or gzip-compressed).
    SysfsArchive,
    /// hwloc XML.
    HwlocXml,
}

impl InputKind {
    /// How the kind is named in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            InputKind::Text => "lscpu/numactl text",
            InputKind::SysfsFolder => "sysfs snapshot folder",
            InputKind::SysfsArchive => "sysfs snapshot archive",
            InputKind::HwlocXml => "hwloc XML",
        }
    }
}

/// What the user says an input is (`--from-lscpu` …), checked against its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Declared {
    /// Detect it (`import INPUT…`).
    Any,
    /// `--from-lscpu`: text holding lscpu output (any form; numactl may be pasted too).
    Lscpu,
    /// `--from-numactl`: text holding `numactl -H` output.
    Numactl,
    /// `--from-sysfs`: a snapshot folder or archive.
    Sysfs,
    /// `--from-hwloc`: hwloc XML.
    Hwloc,
}

/// One input file or folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// Where it is.
    pub path: PathBuf,
    /// What the user says it is.
    pub declared: Declared,
}

impl Input {
    /// An input whose kind is detected.
    pub fn any(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), declared: Declared::Any }
    }
}

/// Options of an import.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// The NIC's node when no input gives it (`--nic-node`); an input that does give it
    /// must agree.
    pub nic_node: Option<NicNode>,
    /// Which interface is the NIC when an input lists several (`--nic-if`).
    pub nic_if: Option<String>,
    /// The topology's name (default: the first input's file name without extension).
    pub name: Option<String>,
}

/// A topology made from real-machine inputs.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The topology file text (valid: it is what [`Imported::topology`] was loaded from).
    pub toml: String,
    /// The validated topology.
    pub topology: Topology,
    /// What was assumed rather than read (numbering, memory, distances), one line each.
    pub notes: Vec<String>,
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// Detect what an input is from its content: a folder is a sysfs snapshot; a file is a
/// tar archive (ustar magic, or gzip), hwloc XML (`<?xml` or `<topology`), or text.
///
/// # Errors
/// [`ErrorKind::Unreadable`] for a missing or unreadable path; [`ErrorKind::Truncated`]
/// for an empty file; [`ErrorKind::Unknown`] for binary data that is none of these.
pub fn detect(path: &Path) -> Result<InputKind, ImportError> {
    Ok(read_bytes(path)?.0)
}

/// The kind and, for a file, its bytes.
fn read_bytes(path: &Path) -> Result<(InputKind, Vec<u8>), ImportError> {
    let name = shown(path);
    let unreadable =
        |e: std::io::Error| ImportError::new(ErrorKind::Unreadable, Origin::file(&name), format!("cannot read: {e}"));
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if meta.is_dir() {
        return Ok((InputKind::SysfsFolder, Vec::new()));
    }
    if meta.len() > MAX_INPUT {
        return Err(ImportError::new(
            ErrorKind::Unsupported,
            Origin::file(&name),
            format!("{} bytes is more than an input of {MAX_INPUT}", meta.len()),
        ));
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ImportError::new(ErrorKind::Truncated, Origin::file(&name), "empty input"));
    }
    let is_tar = bytes.get(257..262) == Some(b"ustar".as_slice());
    if is_tar || bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok((InputKind::SysfsArchive, bytes));
    }
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Err(ImportError::new(
            ErrorKind::Unknown,
            Origin::file(&name),
            "neither text, a tar archive nor hwloc XML",
        ));
    };
    let head = text.trim_start_matches('\u{feff}').trim_start();
    let kind = if head.starts_with("<?xml") || head.starts_with("<topology") || head.starts_with("<!DOCTYPE topology") {
        InputKind::HwlocXml
    } else {
        InputKind::Text
    };
    Ok((kind, bytes))
}

/// Read one input into facts, checking the kind the user declared.
fn read_input(input: &Input) -> Result<Facts, ImportError> {
    let name = shown(&input.path);
    let (kind, bytes) = read_bytes(&input.path)?;
    let text = || String::from_utf8_lossy(&bytes).into_owned();
    let mut facts = match kind {
        InputKind::Text => paste::read(&name, &text())?,
        InputKind::HwlocXml => hwloc::read(&name, &text())?,
        InputKind::SysfsFolder => sysfs::read_folder(&name, &input.path)?,
        InputKind::SysfsArchive => sysfs::read_archive(&name, &bytes)?,
    };
    let holds = |what: &str| facts.read.iter().any(|r| r.starts_with(what));
    let (ok, flag) = match input.declared {
        Declared::Any => (true, ""),
        Declared::Lscpu => (kind == InputKind::Text && holds("lscpu"), "--from-lscpu"),
        Declared::Numactl => (kind == InputKind::Text && holds("numactl"), "--from-numactl"),
        Declared::Sysfs => (matches!(kind, InputKind::SysfsFolder | InputKind::SysfsArchive), "--from-sysfs"),
        Declared::Hwloc => (kind == InputKind::HwlocXml, "--from-hwloc"),
    };
    if !ok {
        return Err(ImportError::new(
            ErrorKind::Unknown,
            Origin::file(&name),
            format!("given as {flag} but it holds {} ({})", kind.as_str(), facts.read.join(", ")),
        ));
    }
    facts.read = vec![format!("{name} ({})", facts.read.join(", "))];
    Ok(facts)
}

/// A topology name from a file name: lower case, `[a-z0-9._-]`.
fn name_from(path: &Path) -> String {
    let stem = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = stem.trim_end_matches(".gz").trim_end_matches(".tar").trim_end_matches(".tgz");
    let stem = Path::new(stem).file_stem().map_or(String::new(), |s| s.to_string_lossy().into_owned());
    let mut name = String::new();
    for c in stem.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' };
        if !(c == '-' && name.ends_with('-')) {
            name.push(c);
        }
    }
    let name = name.trim_matches('-').to_owned();
    if name.is_empty() {
        "imported".to_owned()
    } else {
        name
    }
}

/// Import a machine from one or more inputs.
///
/// # Errors
/// One [`ImportError`] naming the input and line: an unreadable, unknown, truncated or
/// contradictory input (CPUs in two nodes, a node count that disagrees with the
/// distance matrix, two inputs describing different machines), a machine topology files
/// cannot describe, a missing shape or NIC node, or (not expected) a generated file that
/// fails validation.
pub fn import(inputs: &[Input], opts: &ImportOptions) -> Result<Imported, ImportError> {
    let Some(first) = inputs.first() else {
        return Err(ImportError::new(ErrorKind::Missing, Origin::file("import"), "no input given"));
    };
    let mut facts = Facts::default();
    for input in inputs {
        facts.merge(read_input(input)?)?;
    }
    let files: Vec<String> = inputs.iter().map(|i| shown(&i.path)).collect();
    let machine = build::machine(&facts, opts.nic_node, opts.nic_if.as_deref(), &files)?;
    let name = opts.name.clone().unwrap_or_else(|| name_from(&first.path));
    let base_names: Vec<String> = inputs
        .iter()
        .map(|i| i.path.file_name().map_or_else(|| shown(&i.path), |n| n.to_string_lossy().into_owned()))
        .collect();
    let provenance = emit::Provenance { name: &name, read: &facts.read, files: &base_names };
    let toml = emit::topology_toml(&machine, &provenance);
    let topology = Topology::from_toml_str(&format!("{name} (imported)"), &toml).map_err(|e| {
        ImportError::new(
            ErrorKind::Invalid,
            Origin::file(&files.join(", ")),
            format!("the generated topology is invalid: {e}"),
        )
    })?;
    Ok(Imported { toml, topology, notes: emit::assumptions(&machine) })
}

#[cfg(test)]
mod tests;
