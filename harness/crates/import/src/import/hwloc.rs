//! hwloc's XML export (`lstopo --of xml FILE`, `lstopo-no-graphics --of xml`), versions
//! 1.x and 2.x, read with `roxmltree`.
//!
//! What is read: every `object` element with its ancestors. `PU` objects are CPUs
//! (`os_index` = Linux CPU id) and sit below their `Core`, `Die` and `Package`;
//! `NUMANode` objects give each node's `cpuset` and `local_memory` (bytes). Distances come
//! from hwloc 2's `distances2` element for NUMA nodes (`indexes`, then `u64values`,
//! possibly split over several elements) or hwloc 1's `distances` (`latency` values times
//! `latency_base`). A network `OSDev` (`osdev_type="2"`) below a `PCIDev` is a NIC; its
//! node is the `nodeset` of the first ancestor that is not an I/O object (one node: that
//! node; several: NUMA_NO_NODE, as hwloc attaches a device without locality to the
//! machine). A PCI device `[1414:00ba]` is a MANA VF.
//!
//! hwloc bitmaps (`0x00000003`, `0x000000ff,0xffffffff`, `0x000000ff,,,,0x000000ff`) are
//! comma-separated 32-bit words, most significant first, like the kernel's hex masks, an
//! empty word standing for zero.

use super::error::{ErrorKind, ImportError, Origin};
use super::facts::{CpuPlace, DistanceFacts, Facts, NicFact, Sourced};
use crate::cpulist::CpuMask;
use crate::text::plural;
use roxmltree::{Document, Node, ParsingOptions};

fn at(file: &str, doc: &Document<'_>, node: Node<'_, '_>) -> Origin {
    Origin::line(file, doc.text_pos_at(node.range().start).row as usize)
}

/// An hwloc bitmap (`0x…,0x…`) as a CPU or node set.
fn bitmap(file: &str, doc: &Document<'_>, node: Node<'_, '_>, attr: &str) -> Result<Option<CpuMask>, ImportError> {
    let Some(text) = node.attribute(attr) else { return Ok(None) };
    let bad = |why: &str| ImportError::new(ErrorKind::Unknown, at(file, doc, node), format!("{attr}={text:?}: {why}"));
    // `0xf...f,…` is an infinite set (hwloc's "all"): no real node or PU has one.
    if text.contains("f...f") {
        return Err(bad("an infinite set"));
    }
    // hwloc writes a zero word as nothing: `0x000000ff,,,,0x000000ff`.
    let words: Vec<&str> = text
        .split(',')
        .map(|w| w.trim().trim_start_matches("0x"))
        .map(|w| if w.is_empty() { "0" } else { w })
        .collect();
    if words.len() > (crate::cpulist::MAX_CPUS / 32) as usize {
        return Err(bad("more CPUs than the kernel's limit"));
    }
    CpuMask::parse_mask_string(&words.join(",")).map(Some).map_err(|e| bad(&e.to_string()))
}

fn number<T: std::str::FromStr>(
    file: &str,
    doc: &Document<'_>,
    node: Node<'_, '_>,
    attr: &str,
) -> Result<Option<T>, ImportError> {
    node.attribute(attr)
        .map(|v| {
            v.trim().parse::<T>().map_err(|_| {
                ImportError::new(ErrorKind::Unknown, at(file, doc, node), format!("{attr}={v:?} is not a number"))
            })
        })
        .transpose()
}

fn is_object(n: &Node<'_, '_>, ty: &str) -> bool {
    n.has_tag_name("object") && n.attribute("type") == Some(ty)
}

const IO_TYPES: [&str; 3] = ["Bridge", "PCIDev", "OSDev"];

/// Where the walk is: the keys of the enclosing Package, Die and Core.
#[derive(Clone, Copy, Default)]
struct Context {
    socket: u32,
    die: u32,
    core: Option<u32>,
}

struct Walk<'f, 'd, 'i> {
    file: &'f str,
    doc: &'d Document<'i>,
    facts: Facts,
    /// Running key for Package/Core objects without an os_index.
    next_key: u32,
}

impl Walk<'_, '_, '_> {
    fn key(&mut self, node: Node<'_, '_>) -> Result<u32, ImportError> {
        self.next_key += 1;
        Ok(number(self.file, self.doc, node, "os_index")?.unwrap_or(1_000_000 + self.next_key))
    }

    fn object(&mut self, node: Node<'_, '_>, ctx: Context) -> Result<(), ImportError> {
        let mut ctx = ctx;
        match node.attribute("type").unwrap_or("") {
            "Package" | "Socket" => ctx = Context { socket: self.key(node)?, die: 0, core: None },
            "Die" => ctx.die = self.key(node)?,
            "Core" => {
                // A running key: hwloc's Core os_index repeats across packages.
                self.next_key += 1;
                ctx.core = Some(self.next_key);
            }
            "PU" => self.pu(node, ctx)?,
            "NUMANode" | "Node" => self.numa_node(node)?,
            "OSDev" => self.osdev(node)?,
            _ => {}
        }
        for child in node.children().filter(|c| c.has_tag_name("object")) {
            self.object(child, ctx)?;
        }
        Ok(())
    }

    fn pu(&mut self, node: Node<'_, '_>, ctx: Context) -> Result<(), ImportError> {
        let origin = at(self.file, self.doc, node);
        let cpu: u32 = number(self.file, self.doc, node, "os_index")?
            .ok_or_else(|| ImportError::new(ErrorKind::Unknown, origin.clone(), "a PU without os_index"))?;
        if cpu >= crate::cpulist::MAX_CPUS {
            return Err(ImportError::new(
                ErrorKind::Unsupported,
                origin,
                format!("PU {cpu} is beyond the kernel's limit"),
            ));
        }
        // A PU without a Core above it is a core of its own.
        let core = ctx.core.unwrap_or(2_000_000 + cpu);
        let place = CpuPlace { cpu, socket: ctx.socket, die: ctx.die, core };
        if self.facts.cpus.insert(cpu, Sourced::new(place, origin.clone())).is_some() {
            return Err(ImportError::new(ErrorKind::Contradiction, origin, format!("PU {cpu} appears twice")));
        }
        Ok(())
    }

    fn numa_node(&mut self, node: Node<'_, '_>) -> Result<(), ImportError> {
        let origin = at(self.file, self.doc, node);
        let id: u32 = number(self.file, self.doc, node, "os_index")?
            .ok_or_else(|| ImportError::new(ErrorKind::Unknown, origin.clone(), "a NUMANode without os_index"))?;
        let cpus = bitmap(self.file, self.doc, node, "cpuset")?.unwrap_or_default();
        self.facts.set_node_cpus(id, cpus, origin.clone())?;
        if let Some(bytes) = number::<u64>(self.file, self.doc, node, "local_memory")? {
            self.facts.set_node_memory(id, bytes >> 20, origin);
        }
        Ok(())
    }

    fn osdev(&mut self, node: Node<'_, '_>) -> Result<(), ImportError> {
        // osdev_type 2 = network (hwloc 2.x); the MAC address info marks one in any version.
        let network = node.attribute("osdev_type") == Some("2")
            || node.children().any(|c| c.has_tag_name("info") && c.attribute("name") == Some("Address"));
        let pci = node.parent().filter(|p| is_object(p, "PCIDev"));
        let (true, Some(pci)) = (network, pci) else { return Ok(()) };
        let mana = pci.attribute("pci_type").is_some_and(|t| t.to_ascii_lowercase().contains("[1414:00ba]"));
        let host = node
            .ancestors()
            .filter(|a| a.has_tag_name("object"))
            .find(|a| a.attribute("type").is_some_and(|t| !IO_TYPES.contains(&t)));
        let nodeset = match host {
            Some(h) => bitmap(self.file, self.doc, h, "nodeset")?,
            None => None,
        };
        let nic_node = nodeset.filter(|s| s.count() == 1).and_then(|s| s.first());
        let interface = node.attribute("name").map(str::to_owned);
        let fact = NicFact { interface, node: nic_node, mana };
        self.facts.nics.push(Sourced::new(fact, at(self.file, self.doc, node)));
        Ok(())
    }
}

/// All whitespace-separated numbers of the `tag` children of `parent`, in order.
fn values<T: std::str::FromStr>(
    file: &str,
    doc: &Document<'_>,
    parent: Node<'_, '_>,
    tag: &str,
) -> Result<Vec<T>, ImportError> {
    let mut out = Vec::new();
    for child in parent.children().filter(|c| c.has_tag_name(tag)) {
        for w in child.text().unwrap_or("").split_whitespace() {
            out.push(w.parse::<T>().map_err(|_| {
                ImportError::new(ErrorKind::Unknown, at(file, doc, child), format!("{w:?} in <{tag}> is not a number"))
            })?);
        }
    }
    Ok(out)
}

fn square(
    file: &str,
    doc: &Document<'_>,
    el: Node<'_, '_>,
    nodes: Vec<u32>,
    flat: Vec<u64>,
) -> Result<Sourced<DistanceFacts>, ImportError> {
    let n = nodes.len();
    let origin = at(file, doc, el);
    if flat.len() != n * n {
        let kind = if flat.len() < n * n { ErrorKind::Truncated } else { ErrorKind::Contradiction };
        return Err(ImportError::new(
            kind,
            origin,
            format!("{} for {} (want {})", plural(flat.len(), "distance"), plural(n, "node"), n * n),
        ));
    }
    let rows: Vec<Vec<u32>> =
        flat.chunks(n.max(1)).map(|r| r.iter().map(|&v| u32::try_from(v).unwrap_or(u32::MAX)).collect()).collect();
    let row_origins = vec![origin.clone(); n];
    Ok(Sourced::new(DistanceFacts { nodes, rows, row_origins }, origin))
}

/// The NUMA distance matrix, hwloc 2 (`distances2`) or hwloc 1 (`distances`).
fn distances(file: &str, doc: &Document<'_>, node_ids: &[u32]) -> Result<Option<Sourced<DistanceFacts>>, ImportError> {
    let v2 = doc.descendants().find(|d| {
        d.has_tag_name("distances2")
            && d.attribute("type") == Some("NUMANode")
            && d.attribute("name").is_none_or(|n| n == "NUMALatency")
    });
    if let Some(el) = v2 {
        let nodes: Vec<u32> = values(file, doc, el, "indexes")?;
        let flat: Vec<u64> = values(file, doc, el, "u64values")?;
        let declared: Option<usize> = number(file, doc, el, "nbobjs")?;
        if declared.is_some_and(|d| d != nodes.len()) {
            return Err(ImportError::new(
                ErrorKind::Truncated,
                at(file, doc, el),
                format!("nbobjs={} but {} indexes", declared.unwrap_or(0), nodes.len()),
            ));
        }
        return square(file, doc, el, nodes, flat).map(Some);
    }
    // hwloc 1.x: the NUMA nodes in os_index order, values relative to latency_base.
    let v1 = doc.descendants().find(|d| d.has_tag_name("distances"));
    if let Some(el) = v1 {
        let base: f64 = number(file, doc, el, "latency_base")?.unwrap_or(1.0);
        let mut flat = Vec::new();
        for l in el.children().filter(|c| c.has_tag_name("latency")) {
            let v: f64 = number(file, doc, l, "value")?.unwrap_or(0.0);
            flat.push((v * base).round().max(0.0) as u64);
        }
        return square(file, doc, el, node_ids.to_vec(), flat).map(Some);
    }
    Ok(None)
}

/// Read hwloc XML text.
///
/// # Errors
/// [`ErrorKind::Truncated`] for XML that stops early (roxmltree's error with its line);
/// [`ErrorKind::Unknown`] for XML that is not an hwloc topology or a value that does not
/// parse; [`ErrorKind::Contradiction`] for a PU listed twice or a node described twice.
pub(crate) fn read(file: &str, text: &str) -> Result<Facts, ImportError> {
    let options = ParsingOptions { allow_dtd: true, ..ParsingOptions::default() };
    let doc = Document::parse_with_options(text, options).map_err(|e| {
        // roxmltree places "unexpected end of stream" at 1:1: the file stops at its last line.
        let (kind, line) = match e {
            roxmltree::Error::UnexpectedEndOfStream => (ErrorKind::Truncated, text.lines().count().max(1)),
            _ => (ErrorKind::Unknown, e.pos().row as usize),
        };
        ImportError::new(kind, Origin::line(file, line), format!("not well-formed XML: {e}"))
    })?;
    let root = doc.root_element();
    if !root.has_tag_name("topology") {
        return Err(ImportError::new(
            ErrorKind::Unknown,
            at(file, &doc, root),
            format!("<{}> is not hwloc's <topology> (make the file with `lstopo --of xml`)", root.tag_name().name()),
        ));
    }
    let mut walk = Walk { file, doc: &doc, facts: Facts::default(), next_key: 0 };
    for child in root.children().filter(|c| c.has_tag_name("object")) {
        walk.object(child, Context::default())?;
    }
    let mut facts = walk.facts;
    if facts.cpus.is_empty() {
        return Err(ImportError::new(
            ErrorKind::Truncated,
            at(file, &doc, root),
            "an hwloc topology without PU objects",
        ));
    }
    let ids: Vec<u32> = facts.nodes.keys().copied().collect();
    facts.distances = distances(file, &doc, &ids)?;
    if !ids.is_empty() {
        facts.node_count = Some(Sourced::new(ids.len() as u32, at(file, &doc, root)));
    }
    if let Some(model) = doc
        .descendants()
        .find(|d| d.has_tag_name("info") && d.attribute("name") == Some("CPUModel"))
        .and_then(|d| d.attribute("value"))
    {
        facts.model_name = Some(model.to_owned());
    }
    facts.read.push("hwloc XML".to_owned());
    Ok(facts)
}
