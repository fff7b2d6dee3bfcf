//! The geometry of a machine drawing: nested boxes (machine, package, node, core, PU, the
//! NIC) with absolute positions in CSS pixels. No drawing here, only arithmetic.
//!
//! Nesting follows the machine: nodes inside packages when every node sits in one
//! package (seed 003: 8 nodes per package), packages inside nodes when every package
//! sits in one node, else nodes directly in the machine. Memory-only nodes and a NIC on
//! no node go in the machine box. Children are laid out in a grid whose column count
//! keeps the box near a target aspect ratio (preferring full rows), the way lstopo packs
//! a level.

use crate::cpulist::CpuMask;
use crate::model::numa_levels;
use crate::topology::Topology;
use std::collections::BTreeMap;

/// Sizes, scaled up for small machines so that a 4- or 8-CPU picture is not a stamp.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Metrics {
    /// Scale factor of every size below.
    pub(crate) s: f64,
}

impl Metrics {
    /// The scale for a machine of `ncpu` CPUs.
    pub(crate) fn for_cpus(ncpu: u32) -> Self {
        let s = if ncpu <= 16 {
            1.6
        } else if ncpu <= 64 {
            1.25
        } else {
            1.0
        };
        Self { s }
    }
    pub(crate) fn pu_w(&self) -> f64 {
        36.0 * self.s
    }
    pub(crate) fn pu_h(&self) -> f64 {
        32.0 * self.s
    }
    pub(crate) fn gap(&self) -> f64 {
        4.0 * self.s
    }
    pub(crate) fn pad(&self) -> f64 {
        5.0 * self.s
    }
    /// Height of a package's or node's label band.
    pub(crate) fn band(&self) -> f64 {
        17.0 * self.s
    }
    /// Height of the NIC strip.
    pub(crate) fn nic_h(&self) -> f64 {
        20.0 * self.s
    }
    /// Text size of labels (px).
    pub(crate) fn font(&self) -> f64 {
        11.0 * self.s
    }
}

/// An axis-aligned box, CSS pixels.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Rect {
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) w: f64,
    pub(crate) h: f64,
}

/// What a box stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The whole machine.
    Machine,
    /// A package (socket), by index.
    Package(u32),
    /// A NUMA node with its hop from the NIC's node (`None`: NIC on no node).
    Node { id: u32, hop: Option<u32>, cpus: u32 },
    /// A physical core (the seeds' "Cores" id) and its node.
    Core { core: u32 },
    /// A CPU (guest id).
    Pu(u32),
    /// A NIC: its index in the topology (`[[nic]]` order), its node (`None` =
    /// NUMA_NO_NODE) and how many NICs the machine has.
    Nic { index: usize, node: Option<u32>, of: usize },
}

/// A placed box and what is inside it.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    pub(crate) kind: Kind,
    pub(crate) rect: Rect,
    pub(crate) children: Vec<Block>,
}

impl Block {
    fn leaf(kind: Kind, w: f64, h: f64) -> Self {
        Block { kind, rect: Rect { x: 0.0, y: 0.0, w, h }, children: Vec::new() }
    }

    fn shift(&mut self, dx: f64, dy: f64) {
        self.rect.x += dx;
        self.rect.y += dy;
        for c in &mut self.children {
            c.shift(dx, dy);
        }
    }

    /// Every box below and including this one, depth first.
    #[cfg(test)]
    pub(crate) fn walk(&self) -> Vec<&Block> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.walk());
        }
        out
    }
}

/// Columns for `n` cells of `cw`×`ch`: the aspect ratio nearest `target`, with a
/// penalty for a last row left part empty.
fn columns(n: usize, cw: f64, ch: f64, gap: f64, target: f64, max_w: f64) -> usize {
    if n <= 1 {
        return 1;
    }
    let fits = |c: usize| c == 1 || c as f64 * cw + (c - 1) as f64 * gap <= max_w;
    let score = |c: usize| {
        let rows = n.div_ceil(c);
        let w = c as f64 * cw + (c - 1) as f64 * gap;
        let h = rows as f64 * ch + (rows - 1) as f64 * gap;
        (w / h / target).ln().abs() + if n % c == 0 { 0.0 } else { 0.8 }
    };
    (1..=n).filter(|&c| fits(c)).min_by(|&a, &b| score(a).total_cmp(&score(b))).unwrap_or(1)
}

/// How a container frames its children.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// Height of the label band at the top.
    band: f64,
    /// Space inside the border.
    pad: f64,
    /// Space between children.
    gap: f64,
    /// Smallest width (room for the label).
    min_w: f64,
    /// Aspect ratio (width / height) the grid aims at.
    target: f64,
    /// Widest grid wanted (px): more columns only while it stays narrower.
    max_w: f64,
}

/// A container: the label band at the top, the children in a grid, then `footer` boxes
/// (the NIC) across the whole width.
fn container(kind: Kind, mut children: Vec<Block>, footer: Vec<Block>, f: Frame) -> Block {
    let (pad, gap) = (f.pad, f.gap);
    let cw = children.iter().map(|c| c.rect.w).fold(0.0, f64::max);
    let ch = children.iter().map(|c| c.rect.h).fold(0.0, f64::max);
    let cols = columns(children.len(), cw, ch, gap, f.target, f.max_w);
    let rows = children.len().div_ceil(cols);
    // Each column as wide as its widest box, each row as tall as its tallest.
    let mut col_w = vec![0.0f64; cols];
    let mut row_h = vec![0.0f64; rows];
    for (i, c) in children.iter().enumerate() {
        col_w[i % cols] = col_w[i % cols].max(c.rect.w);
        row_h[i / cols] = row_h[i / cols].max(c.rect.h);
    }
    let offsets = |sizes: &[f64]| -> Vec<f64> {
        sizes
            .iter()
            .scan(0.0, |acc, &s| {
                let at = *acc;
                *acc += s + gap;
                Some(at)
            })
            .collect()
    };
    let (col_x, row_y) = (offsets(&col_w), offsets(&row_h));
    for (i, c) in children.iter_mut().enumerate() {
        c.shift(pad + col_x[i % cols], f.band + pad + row_y[i / cols]);
    }
    let span =
        |sizes: &[f64]| if sizes.is_empty() { 0.0 } else { sizes.iter().sum::<f64>() + (sizes.len() - 1) as f64 * gap };
    let (grid_w, grid_h) = (span(&col_w), span(&row_h));
    let w = (grid_w + 2.0 * pad).max(f.min_w);
    let mut y = f.band + pad + grid_h + if children.is_empty() { 0.0 } else { gap };
    let mut all = children;
    for mut b in footer {
        b.rect.w = w - 2.0 * pad;
        b.shift(pad, y);
        y += b.rect.h + gap;
        all.push(b);
    }
    let h = (y - gap + pad).max(f.band + 2.0 * pad);
    Block { kind, rect: Rect { x: 0.0, y: 0.0, w, h }, children: all }
}

/// Width of `chars` characters of label text plus the padding around it.
fn label_w(chars: usize, m: &Metrics) -> f64 {
    chars as f64 * 0.68 * m.font() + 2.0 * m.pad()
}

/// Each node's hop from the NIC's node: the index of the first NUMA level (the sorted
/// distinct distances `sched_init_numa()` finds) that reaches it, which is the
/// `for_each_numa_hop_mask` step adding its CPUs. `None` for all without a NIC node.
pub(crate) fn node_hops(topo: &Topology) -> Vec<Option<u32>> {
    let levels = numa_levels(topo);
    let nic = topo.nic().node;
    (0..topo.nodes().len() as u32)
        .map(|n| {
            let nic = nic?;
            let d = levels.distance(nic, n);
            let hop = levels.levels().iter().position(|&l| l >= d).unwrap_or(levels.levels().len());
            Some(hop as u32)
        })
        .collect()
}

/// The machine's boxes. `topo` must be numbered as the guest numbers it
/// ([`Topology::to_qemu_numbering`]) so that PU ids are the report's CPU ids.
/// With `file_labels`, node bands have room for a second line (the file's CPU list).
pub(crate) fn machine(topo: &Topology, m: &Metrics, file_labels: bool) -> Block {
    let hops = node_hops(topo);
    let nodes = topo.nodes();
    let socket_of = |cpu: u32| topo.location(cpu).socket;
    let sockets_of = |cpus: &CpuMask| cpus.iter().map(socket_of).collect::<std::collections::BTreeSet<u32>>();
    let cpu_nodes: Vec<u32> = nodes.iter().filter(|n| !n.cpus.is_empty()).map(|n| n.id).collect();
    let nodes_in_sockets = cpu_nodes.iter().all(|&n| sockets_of(&nodes[n as usize].cpus).len() == 1);
    let sockets: BTreeMap<u32, CpuMask> = topo.online().iter().fold(BTreeMap::new(), |mut acc, cpu| {
        acc.entry(socket_of(cpu)).or_insert_with(CpuMask::new).insert(cpu);
        acc
    });
    let sockets_in_nodes = sockets
        .values()
        .all(|cpus| cpus.iter().filter_map(|c| topo.node_of(c)).collect::<std::collections::BTreeSet<_>>().len() == 1);

    // Cores of a CPU set, each core's PUs side by side.
    let cores = |cpus: &CpuMask| -> Vec<Block> {
        let mut by_core: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for cpu in cpus.iter() {
            by_core.entry(topo.core_of(cpu)).or_default().push(cpu);
        }
        let mut list: Vec<(u32, Vec<u32>)> = by_core.into_iter().collect();
        list.sort_by_key(|(_, pus)| pus.first().copied().unwrap_or(u32::MAX));
        list.into_iter()
            .map(|(core, pus)| {
                let pus: Vec<Block> =
                    pus.into_iter().map(|cpu| Block::leaf(Kind::Pu(cpu), m.pu_w(), m.pu_h())).collect();
                let target = if pus.len() <= 4 { 100.0 } else { 1.0 };
                let frame = Frame {
                    band: 0.0,
                    pad: 0.6 * m.pad(),
                    gap: 0.5 * m.gap(),
                    min_w: 0.0,
                    target,
                    max_w: f64::INFINITY,
                };
                container(Kind::Core { core }, pus, Vec::new(), frame)
            })
            .collect()
    };
    // Every NIC, in its node's box (or the machine's, on no node), in file order.
    let nic_nodes: Vec<Option<u32>> = topo.nics().iter().map(|n| n.node).collect();
    let nic_boxes = |node: Option<u32>| -> Vec<Block> {
        let of = nic_nodes.len();
        nic_nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| **n == node)
            .map(|(index, _)| Block::leaf(Kind::Nic { index, node, of }, 0.0, m.nic_h()))
            .collect()
    };
    let node_box = |id: u32, inner: Vec<Block>| {
        let footer = nic_boxes(Some(id));
        let cpus = nodes[id as usize].cpus.count();
        // "Node 14 · hop 0 · memory only" (the NIC strip's "MANA NIC" is shorter).
        let chars = if cpus == 0 { 30 } else { 17 };
        let band = if file_labels { m.band() * 1.75 } else { m.band() };
        let target = if inner.len() <= 4 { 100.0 } else { 1.6 };
        let frame = Frame { band, pad: m.pad(), gap: m.gap(), min_w: label_w(chars, m), target, max_w: f64::INFINITY };
        container(Kind::Node { id, hop: hops[id as usize], cpus }, inner, footer, frame)
    };
    let package_box = |socket: u32, inner: Vec<Block>| {
        let frame = Frame {
            band: m.band(),
            pad: m.pad(),
            gap: m.gap(),
            min_w: label_w(10, m),
            target: 2.2,
            max_w: f64::INFINITY,
        };
        container(Kind::Package(socket), inner, Vec::new(), frame)
    };

    let mut top: Vec<Block> = Vec::new();
    if nodes_in_sockets && sockets.len() > 1 {
        for (&socket, cpus) in &sockets {
            let inner: Vec<Block> = cpu_nodes
                .iter()
                .filter(|&&n| nodes[n as usize].cpus.intersects(cpus))
                .map(|&n| node_box(n, cores(&nodes[n as usize].cpus)))
                .collect();
            top.push(package_box(socket, inner));
        }
    } else if sockets_in_nodes && sockets.len() > 1 {
        for &n in &cpu_nodes {
            let inner: Vec<Block> = sockets
                .iter()
                .filter(|(_, cpus)| cpus.intersects(&nodes[n as usize].cpus))
                .map(|(&s, cpus)| package_box(s, cores(cpus)))
                .collect();
            top.push(node_box(n, inner));
        }
    } else {
        for &n in &cpu_nodes {
            top.push(node_box(n, cores(&nodes[n as usize].cpus)));
        }
    }
    for n in nodes.iter().filter(|n| n.cpus.is_empty()) {
        top.push(node_box(n.id, Vec::new()));
    }
    let footer = nic_boxes(None);
    // Packages side by side as lstopo draws them, unless that gets wider than a screen.
    let frame =
        Frame { band: m.band(), pad: m.pad(), gap: 2.0 * m.gap(), min_w: label_w(46, m), target: 3.0, max_w: 1000.0 };
    container(Kind::Machine, top, footer, frame)
}

/// Move a block so that its top-left corner is at (`x`, `y`).
pub(crate) fn place(mut block: Block, x: f64, y: f64) -> Block {
    let (dx, dy) = (x - block.rect.x, y - block.rect.y);
    block.shift(dx, dy);
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(name: &str) -> Topology {
        let path = format!("{}/../../../topologies/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        Topology::load(path).unwrap_or_else(|e| panic!("{e}")).to_qemu_numbering()
    }

    fn inside(inner: &Rect, outer: &Rect) -> bool {
        inner.x >= outer.x - 1e-9
            && inner.y >= outer.y - 1e-9
            && inner.x + inner.w <= outer.x + outer.w + 1e-9
            && inner.y + inner.h <= outer.y + outer.h + 1e-9
    }

    fn check_nesting(b: &Block) {
        for c in &b.children {
            assert!(inside(&c.rect, &b.rect), "{:?} {:?} outside {:?} {:?}", c.kind, c.rect, b.kind, b.rect);
            check_nesting(c);
        }
        for (i, a) in b.children.iter().enumerate() {
            for c in &b.children[i + 1..] {
                let apart = a.rect.x + a.rect.w <= c.rect.x + 1e-9
                    || c.rect.x + c.rect.w <= a.rect.x + 1e-9
                    || a.rect.y + a.rect.h <= c.rect.y + 1e-9
                    || c.rect.y + c.rect.h <= a.rect.y + 1e-9;
                assert!(apart, "{:?} overlaps {:?}", a.kind, c.kind);
            }
        }
    }

    #[test]
    fn every_box_sits_inside_its_parent_without_overlapping_a_sibling() {
        for name in ["seed-002", "seed-003-epyc-7763", "r15-memory-only-small", "r23-no-node", "seed-001-azure-128"] {
            let t = topo(name);
            let b = machine(&t, &Metrics::for_cpus(t.ncpu()), true);
            check_nesting(&b);
            let pus = b.walk().iter().filter(|x| matches!(x.kind, Kind::Pu(_))).count();
            assert_eq!(pus as u32, t.ncpu(), "{name}");
            let nics = b.walk().iter().filter(|x| matches!(x.kind, Kind::Nic { .. })).count();
            assert_eq!(nics, 1, "{name}");
        }
    }

    #[test]
    fn two_nics_sit_each_in_its_own_node() {
        let t = topo("two-nics-small");
        let b = machine(&t, &Metrics::for_cpus(t.ncpu()), false);
        check_nesting(&b);
        let mut nics: Vec<(usize, Option<u32>, Option<u32>)> = Vec::new();
        for node in b.walk() {
            let Kind::Node { id, .. } = node.kind else { continue };
            for c in &node.children {
                if let Kind::Nic { index, node, of } = c.kind {
                    assert_eq!(of, 2);
                    nics.push((index, node, Some(id)));
                }
            }
        }
        nics.sort();
        assert_eq!(nics, vec![(0, Some(0), Some(0)), (1, Some(1), Some(1))]);
    }

    #[test]
    fn seed_003_nests_its_16_nodes_in_2_packages_and_rings_them_from_node_14() {
        let t = topo("seed-003-epyc-7763");
        let b = machine(&t, &Metrics::for_cpus(t.ncpu()), true);
        let packages: Vec<&Block> = b.children.iter().filter(|c| matches!(c.kind, Kind::Package(_))).collect();
        assert_eq!(packages.len(), 2);
        assert!(packages.iter().all(|p| p.children.len() == 8));
        let hops = node_hops(&t);
        assert_eq!(hops[14], Some(0));
        assert_eq!((hops[12], hops[13], hops[15]), (Some(1), Some(1), Some(1)));
        assert_eq!((hops[8], hops[0]), (Some(2), Some(3)));
        // Readable: the whole machine fits a screen.
        assert!(b.rect.w < 1600.0 && b.rect.h < 1200.0, "{:?}", b.rect);
    }
}
