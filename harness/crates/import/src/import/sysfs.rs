//! A snapshot of the kernel's own topology files, as a folder or a tar archive (plain or
//! gzip-compressed), made on the real machine with:
//!
//! ```text
//! tar -czf machine.tar.gz /sys/devices/system/cpu/online /sys/devices/system/cpu/cpu[0-9]*/topology \
//!     /sys/devices/system/node/node[0-9]*/{cpulist,distance,meminfo} /sys/class/net/IF/device/numa_node
//! ```
//!
//! (`IF` = the NIC's interface; GNU tar says "File shrank by … bytes; padding with zeros"
//! for each file, because sysfs files claim 4096 bytes: harmless, the padding is ignored
//! here.) A folder may hold the same paths (`cp -r --parents … DIR`), or be `/sys` itself.
//!
//! Read, relative to the snapshot's `sys/`: `devices/system/cpu/online`,
//! `devices/system/cpu/cpuN/topology/{physical_package_id,die_id,core_id,thread_siblings_list}`,
//! `devices/system/node/nodeN/{cpulist,distance,meminfo}` and
//! `class/net/IF/device/{numa_node,vendor,device}`.

use super::error::{ErrorKind, ImportError, Origin};
use super::facts::{CpuPlace, DistanceFacts, Facts, NicFact, Sourced};
use crate::cpulist::CpuMask;
use crate::text::plural;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest member read from an archive (sysfs files are at most a page).
const MAX_MEMBER: u64 = 1 << 20;
/// The most members an archive may have (a full /sys/devices/system has ~20 000).
const MAX_MEMBERS: usize = 200_000;

/// A snapshot's files, addressed by their path below `sys/` (`devices/system/node/online`).
trait Snapshot {
    /// A file's text (NUL padding and the trailing newline removed), `None` if absent.
    fn read(&self, rel: &str) -> Result<Option<String>, ImportError>;
    /// The names in a folder, sorted (empty if absent).
    fn list(&self, rel: &str) -> Vec<String>;
    /// How errors name a file: the input and the member.
    fn origin(&self, rel: &str) -> Origin;
}

fn clean(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).trim().to_owned()
}

/// A snapshot folder (or `/sys`).
struct Folder {
    shown: String,
    root: PathBuf,
}

impl Snapshot for Folder {
    fn read(&self, rel: &str) -> Result<Option<String>, ImportError> {
        match std::fs::read(self.root.join(rel)) {
            Ok(bytes) => Ok(Some(clean(&bytes))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ImportError::new(ErrorKind::Unreadable, self.origin(rel), e.to_string())),
        }
    }
    fn list(&self, rel: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.root.join(rel))
            .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.sort();
        names
    }
    fn origin(&self, rel: &str) -> Origin {
        Origin::file(&format!("{}/{rel}", self.shown.trim_end_matches('/')))
    }
}

/// A snapshot archive, read into memory.
struct Archive {
    shown: String,
    files: BTreeMap<String, Vec<u8>>,
}

impl Snapshot for Archive {
    fn read(&self, rel: &str) -> Result<Option<String>, ImportError> {
        Ok(self.files.get(rel).map(|b| clean(b)))
    }
    fn list(&self, rel: &str) -> Vec<String> {
        let prefix = format!("{rel}/");
        let mut names: Vec<String> = self
            .files
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .filter_map(|rest| rest.split('/').next())
            .map(str::to_owned)
            .collect();
        names.dedup();
        names
    }
    fn origin(&self, rel: &str) -> Origin {
        Origin::file(&format!("{}:sys/{rel}", self.shown))
    }
}

/// A member path → its path below `sys/` (`./sys/devices/…`, `/sys/devices/…`,
/// `devices/…`), or `None` for a member elsewhere.
fn below_sys(path: &str) -> Option<String> {
    let p = path.trim_start_matches("./").trim_start_matches('/');
    let p = p.strip_prefix("sys/").unwrap_or(p);
    (p.starts_with("devices/") || p.starts_with("class/")).then(|| p.trim_end_matches('/').to_owned())
}

/// Read a tar archive (gzip-compressed if it starts with the gzip magic).
fn archive(shown: &str, bytes: &[u8]) -> Result<Archive, ImportError> {
    let corrupt = |e: std::io::Error| {
        ImportError::new(ErrorKind::Truncated, Origin::file(shown), format!("not a complete tar archive: {e}"))
    };
    let reader: Box<dyn Read + '_> =
        if bytes.starts_with(&[0x1f, 0x8b]) { Box::new(flate2::read::GzDecoder::new(bytes)) } else { Box::new(bytes) };
    let mut tar = tar::Archive::new(reader);
    let mut files = BTreeMap::new();
    for (n, entry) in tar.entries().map_err(corrupt)?.enumerate() {
        if n >= MAX_MEMBERS {
            return Err(ImportError::new(
                ErrorKind::Unsupported,
                Origin::file(shown),
                format!("more than {MAX_MEMBERS} members"),
            ));
        }
        let mut entry = entry.map_err(corrupt)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path().map_err(corrupt)?.to_string_lossy().into_owned();
        let Some(rel) = below_sys(&path) else { continue };
        let mut data = Vec::new();
        entry.by_ref().take(MAX_MEMBER).read_to_end(&mut data).map_err(corrupt)?;
        files.insert(rel, data);
    }
    if files.is_empty() {
        return Err(ImportError::new(
            ErrorKind::Unknown,
            Origin::file(shown),
            "an archive without sys/devices/system files (see the tar command in README, \"Import a machine\")",
        ));
    }
    Ok(Archive { shown: shown.to_owned(), files })
}

/// The numbers `N` of the `prefixN` names in a folder listing, sorted.
fn numbered(names: &[String], prefix: &str) -> Vec<u32> {
    let mut ids: Vec<u32> = names.iter().filter_map(|n| n.strip_prefix(prefix)?.parse().ok()).collect();
    ids.sort_unstable();
    ids
}

fn parse_u32(snap: &dyn Snapshot, rel: &str, text: &str) -> Result<u32, ImportError> {
    text.trim().parse().map_err(|_| {
        ImportError::new(ErrorKind::Unknown, line1(snap, rel), format!("{:?} is not a number", text.trim()))
    })
}

fn line1(snap: &dyn Snapshot, rel: &str) -> Origin {
    let mut o = snap.origin(rel);
    o.line = Some(1);
    o
}

fn need(snap: &dyn Snapshot, rel: &str) -> Result<String, ImportError> {
    snap.read(rel)?.ok_or_else(|| {
        ImportError::new(
            ErrorKind::Truncated,
            snap.origin(rel),
            "missing from the snapshot (see README, \"Import a machine\")",
        )
    })
}

fn cpulist(snap: &dyn Snapshot, rel: &str, text: &str) -> Result<CpuMask, ImportError> {
    CpuMask::parse_cpulist(text).map_err(|e| ImportError::new(ErrorKind::Unknown, line1(snap, rel), e.to_string()))
}

fn read_cpus(snap: &dyn Snapshot, facts: &mut Facts) -> Result<(), ImportError> {
    let base = "devices/system/cpu";
    if let Some(text) = snap.read(&format!("{base}/online"))? {
        let rel = format!("{base}/online");
        facts.online = Some(Sourced::new(cpulist(snap, &rel, &text)?, line1(snap, &rel)));
    }
    for cpu in numbered(&snap.list(base), "cpu") {
        let dir = format!("{base}/cpu{cpu}/topology");
        let Some(package) = snap.read(&format!("{dir}/physical_package_id"))? else {
            // No topology folder: an off-line CPU (the on-line list says so) or not captured.
            continue;
        };
        let rel = format!("{dir}/physical_package_id");
        let socket = parse_u32(snap, &rel, &package)?;
        let die = match snap.read(&format!("{dir}/die_id"))? {
            Some(t) => parse_u32(snap, &format!("{dir}/die_id"), &t)?,
            None => 0,
        };
        // The sibling list names the core uniquely (core_id repeats across dies and
        // clusters); core_id serves when the list is absent.
        let siblings_rel = format!("{dir}/thread_siblings_list");
        let core = match snap.read(&siblings_rel)? {
            Some(t) => cpulist(snap, &siblings_rel, &t)?.first().unwrap_or(cpu),
            None => parse_u32(snap, &format!("{dir}/core_id"), &need(snap, &format!("{dir}/core_id"))?)?,
        };
        let place = CpuPlace { cpu, socket, die, core };
        facts.cpus.insert(cpu, Sourced::new(place, line1(snap, &rel)));
    }
    Ok(())
}

fn read_nodes(snap: &dyn Snapshot, facts: &mut Facts) -> Result<(), ImportError> {
    let base = "devices/system/node";
    let ids = numbered(&snap.list(base), "node");
    let (mut rows, mut row_origins) = (Vec::new(), Vec::new());
    for &node in &ids {
        let rel = format!("{base}/node{node}/cpulist");
        let text = need(snap, &rel)?;
        facts.set_node_cpus(node, cpulist(snap, &rel, &text)?, line1(snap, &rel))?;
        let rel = format!("{base}/node{node}/meminfo");
        if let Some(text) = snap.read(&rel)? {
            // `Node 0 MemTotal:       24602360 kB`
            let total = text.lines().enumerate().find_map(|(i, l)| {
                let (_, v) = l.split_once("MemTotal:")?;
                Some((i, v.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?))
            });
            if let Some((i, kib)) = total {
                let mut o = snap.origin(&rel);
                o.line = Some(i + 1);
                facts.set_node_memory(node, kib / 1024, o);
            }
        }
        let rel = format!("{base}/node{node}/distance");
        if let Some(text) = snap.read(&rel)? {
            let row: Result<Vec<u32>, _> = text.split_whitespace().map(|w| parse_u32(snap, &rel, w)).collect();
            let row = row?;
            if row.len() != ids.len() {
                return Err(ImportError::new(
                    ErrorKind::Contradiction,
                    line1(snap, &rel),
                    format!("{} but the snapshot has {}", plural(row.len(), "distance"), plural(ids.len(), "node")),
                ));
            }
            rows.push(row);
            row_origins.push(line1(snap, &rel));
        }
    }
    if !rows.is_empty() {
        if rows.len() != ids.len() {
            let rel = format!("{base}/node{}/distance", ids.get(rows.len()).copied().unwrap_or(0));
            return Err(ImportError::new(
                ErrorKind::Truncated,
                snap.origin(&rel),
                "missing (other nodes have a distance row)",
            ));
        }
        let origin = row_origins[0].clone();
        facts.distances = Some(Sourced::new(DistanceFacts { nodes: ids.clone(), rows, row_origins }, origin));
    }
    if !ids.is_empty() {
        facts.node_count = Some(Sourced::new(ids.len() as u32, snap.origin(base)));
    }
    Ok(())
}

fn read_nics(snap: &dyn Snapshot, facts: &mut Facts) -> Result<(), ImportError> {
    for interface in snap.list("class/net") {
        let rel = format!("class/net/{interface}/device/numa_node");
        let Some(text) = snap.read(&rel)? else { continue };
        let value: i64 = text.trim().parse().map_err(|_| {
            ImportError::new(
                ErrorKind::Unknown,
                line1(snap, &rel),
                format!("{:?} is not a numa_node value", text.trim()),
            )
        })?;
        let node = if value < 0 { None } else { Some(u32::try_from(value).unwrap_or(u32::MAX)) };
        let id = |f: &str| -> Result<Option<String>, ImportError> {
            Ok(snap.read(&format!("class/net/{interface}/device/{f}"))?.map(|s| s.to_ascii_lowercase()))
        };
        let mana = id("vendor")?.as_deref() == Some("0x1414") && id("device")?.as_deref() == Some("0x00ba");
        facts.nics.push(Sourced::new(NicFact { interface: Some(interface), node, mana }, line1(snap, &rel)));
    }
    Ok(())
}

fn read_snapshot(snap: &dyn Snapshot, shown: &str) -> Result<Facts, ImportError> {
    if snap.list("devices/system/cpu").is_empty() && snap.list("devices/system/node").is_empty() {
        return Err(ImportError::new(
            ErrorKind::Unknown,
            Origin::file(shown),
            "no sys/devices/system/cpu or sys/devices/system/node in it (see README, \"Import a machine\")",
        ));
    }
    let mut facts = Facts::default();
    read_cpus(snap, &mut facts)?;
    read_nodes(snap, &mut facts)?;
    read_nics(snap, &mut facts)?;
    facts.read.push("sysfs snapshot".to_owned());
    Ok(facts)
}

/// Read a snapshot folder: `DIR/sys/devices/…`, `DIR/devices/…` or `/sys`.
///
/// # Errors
/// [`ErrorKind::Unknown`] for a folder without the topology files, and what the files
/// hold: [`ErrorKind::Unknown`] for a value that does not parse, [`ErrorKind::Truncated`]
/// for a node without `cpulist` or a missing distance row.
pub(crate) fn read_folder(shown: &str, dir: &Path) -> Result<Facts, ImportError> {
    let root = if dir.join("sys/devices/system").is_dir() { dir.join("sys") } else { dir.to_path_buf() };
    let shown_root = if root == dir { shown.to_owned() } else { format!("{}/sys", shown.trim_end_matches('/')) };
    read_snapshot(&Folder { shown: shown_root, root }, shown)
}

/// Read a snapshot archive (tar or tar.gz) given as bytes.
///
/// # Errors
/// [`ErrorKind::Truncated`] for a cut-off or corrupt archive, then as [`read_folder`].
pub(crate) fn read_archive(shown: &str, bytes: &[u8]) -> Result<Facts, ImportError> {
    let snap = archive(shown, bytes)?;
    read_snapshot(&snap, shown)
}
