//! The boxes of [`super::layout`] → SVG elements (`svg` crate): a heading, one panel per
//! run (its title lines, then the machine), and the legend.

use super::layout::{self, Block, Kind, Metrics, Rect};
use super::{cpu_counts, cpu_load, CpuCounts, CpuLoad, Panel, Picture};
use crate::text::plural;
use crate::topology::{CpuNumbering, Topology};
use crate::verdict::Status;
use std::collections::BTreeMap;
use svg::node::element::{Circle, Element, Group, Rectangle, Text, Title};
use svg::Document;
use svg::Node as _;

/// Fill of a CPU by how many MANA IRQs are delivered to it: 0, 1, 2, 3, 4 or more.
const EFFECTIVE: [&str; 5] = ["#ffffff", "#ffd8a8", "#ffa94d", "#f76707", "#c92a2a"];
/// Fill of a CPU under load (`--traffic`) by its interrupts + softirqs as a share of the
/// busiest CPU's: none, up to 25 %, 50 %, 75 %, 100 %.
const LOAD: [&str; 5] = ["#ffffff", "#fcc2d7", "#f783ac", "#d6336c", "#a61e4d"];
/// A CPU's fill when the run has no guest data.
const NO_DATA: &str = "#f1f3f5";
/// Band and outline of a node by its hop from the NIC's node: 0, 1, 2, 3, 4, 5 or more.
const HOPS: [&str; 6] = ["#0b7285", "#1098ad", "#3bc9db", "#99e9f2", "#c5f6fa", "#e3fafc"];
/// A node's band when the NIC is on no node (no hops).
const NO_HOP: &str = "#adb5bd";
/// The affinity dots.
const AFFINITY: &str = "#1c3d8f";
/// The NIC.
const NIC: &str = "#5f3dc4";
/// With several NICs (`[[nic]]`): NIC k's strip and affinity dots (k modulo 4).
const NIC_COLOURS: [&str; 4] = ["#1c3d8f", "#2b8a3e", "#d9480f", "#862e9c"];
const INK: &str = "#212529";
const MUTED: &str = "#495057";
const FONT: &str = "DejaVu Sans, Verdana, Arial, sans-serif";
/// Affinity dots drawn before a plus.
const MAX_DOTS: u32 = 5;

/// NIC `k`'s colour on a machine with `of` NICs: one NIC keeps the picture's
/// single-NIC colours (purple strip, [`AFFINITY`] dots).
fn nic_colour(k: usize, of: usize) -> &'static str {
    if of <= 1 {
        AFFINITY
    } else {
        NIC_COLOURS[k % NIC_COLOURS.len()]
    }
}

/// A coordinate rounded to 0.1 px (short, stable text).
fn px(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn rect(r: &Rect, fill: &str, stroke: &str, width: f64) -> Rectangle {
    Rectangle::new()
        .set("x", px(r.x))
        .set("y", px(r.y))
        .set("width", px(r.w))
        .set("height", px(r.h))
        .set("fill", fill)
        .set("stroke", stroke)
        .set("stroke-width", px(width))
}

/// Chained attributes on a plain [`Element`] (the `svg` crate's typed elements have `set`).
trait Set {
    fn set(self, name: &str, value: impl Into<svg::node::Value>) -> Self;
}

impl Set for Element {
    fn set(mut self, name: &str, value: impl Into<svg::node::Value>) -> Self {
        self.assign(name, value);
        self
    }
}

/// A text element. Returned as a plain [`Element`]: the crate prints a typed `Text` with
/// line breaks around its content, which would reach tooltips and copied text.
fn text(x: f64, y: f64, size: f64, fill: &str, content: &str) -> Element {
    Text::new(content).set("x", px(x)).set("y", px(y)).set("font-size", px(size)).set("fill", fill).into()
}

/// Rough width of `s` at `size` px in the sans-serif the pictures name.
fn text_w(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * 0.6 * size
}

fn effective_fill(n: u32) -> &'static str {
    EFFECTIVE[(n as usize).min(EFFECTIVE.len() - 1)]
}

/// The load fill of `load` out of the busiest CPU's `max`.
fn load_fill(load: u64, max: u64) -> &'static str {
    if load == 0 || max == 0 {
        return LOAD[0];
    }
    // Quarters, rounded up: 1 % → the first, 26 % → the second, 100 % → the fourth.
    let quarter = (load * 4).div_ceil(max).clamp(1, 4);
    LOAD[quarter as usize]
}

fn hop_fill(hop: Option<u32>) -> &'static str {
    hop.map_or(NO_HOP, |h| HOPS[(h as usize).min(HOPS.len() - 1)])
}

/// Dark fills take white text.
fn ink_on(fill: &str) -> &'static str {
    if [EFFECTIVE[3], EFFECTIVE[4], LOAD[3], LOAD[4], HOPS[0], HOPS[1], NIC].contains(&fill) {
        "#ffffff"
    } else {
        INK
    }
}

/// Wrap `s` into lines of at most `width` px at `size` px.
fn wrap(s: &str, width: f64, size: f64) -> Vec<String> {
    let per_line = ((width / (0.6 * size)) as usize).max(20);
    let mut lines = vec![String::new()];
    for word in s.split_whitespace() {
        let cur = lines.last_mut().map_or(0, |l| l.chars().count());
        if cur > 0 && cur + 1 + word.chars().count() > per_line {
            lines.push(String::new());
        }
        if let Some(l) = lines.last_mut() {
            if !l.is_empty() {
                l.push(' ');
            }
            l.push_str(word);
        }
    }
    lines
}

/// What one panel shows: its key (`before`/`after`), the counts, the load under
/// traffic, its title lines.
struct PanelView {
    key: Option<&'static str>,
    counts: Option<BTreeMap<u32, CpuCounts>>,
    load: Option<BTreeMap<u32, CpuLoad>>,
    lines: Vec<(String, bool)>,
}

fn panel_view(key: Option<&'static str>, panel: &Panel<'_>, width: f64) -> PanelView {
    let label = key.map_or(String::new(), |k| format!("{k}: "));
    match panel {
        Panel::Run(v) => {
            let status = match v.status {
                Status::Pass => "PASS",
                Status::Fail => "FAIL",
            };
            let fired = v.summary.fired;
            let nic = v.run.nic_node.map_or("no node".to_owned(), |n| format!("node {n}"));
            let others = v.nics.as_ref().map_or(&[][..], |n| n.nics.as_slice());
            let nic0 = if others.is_empty() { "NIC" } else { "NIC 0" };
            let first = format!("{label}{} · verdict {status}", v.run.name);
            let second = format!(
                "Linux {} · model {} · {fired} of {} MANA IRQs fired · {nic0} on {nic}",
                v.run.kernel_release, v.run.kernel, v.summary.vectors
            );
            // Each other NIC's own verdict: the picture's numbers add every NIC's IRQs.
            let more = others.iter().map(|n| {
                let st = if n.verdict.status == Status::Pass { "PASS" } else { "FAIL" };
                let node = n.node.map_or("no node".to_owned(), |k| format!("node {k}"));
                let s = &n.verdict.summary;
                format!("NIC {} on {node}: {st} · {} of {} MANA IRQs fired", n.index, s.fired, s.vectors)
            });
            let load = cpu_load(v);
            let third = v.traffic.as_ref().map(|t| {
                format!(
                    "under load: {}, {}, {}",
                    plural(t.flows.len(), "flow"),
                    plural(t.cpus.iter().map(|c| c.interrupts).sum::<u64>(), "queue interrupt"),
                    plural(t.cpus.iter().map(|c| c.net_rx).sum::<u64>(), "NET_RX softirq")
                )
            });
            let mut lines = vec![(first, true)];
            for line in std::iter::once(second).chain(more).chain(third) {
                lines.extend(wrap(&line, width, 12.0).into_iter().map(|l| (l, false)));
            }
            // A failed run says why (its first failed check), so that a picture on its
            // own (matrix --svg) tells a reviewer where to look.
            if let Some((name, c)) =
                v.checks_of_every_nic().into_iter().find(|(_, c)| c.status == crate::verdict::CheckStatus::Fail)
            {
                let why = format!("first failed check: {name}: {}", c.message);
                lines.extend(wrap(&why, width, 12.0).into_iter().take(3).map(|l| (l, false)));
            }
            PanelView { key, counts: Some(cpu_counts(v)), load, lines }
        }
        Panel::NoGuestData { run, reason } => {
            let mut lines = vec![(format!("{label}{run} · no guest data"), true)];
            lines.extend(wrap(&format!("rig error: {reason}"), width, 12.0).into_iter().take(4).map(|l| (l, false)));
            PanelView { key, counts: None, load: None, lines }
        }
    }
}

/// The title (tooltip) of a CPU: ids, node, core, and its counts with the IRQ names (and
/// under traffic its interrupts and softirqs).
fn cpu_title(
    topo_file: &Topology,
    guest: &Topology,
    cpu: u32,
    counts: Option<&CpuCounts>,
    load: Option<CpuLoad>,
    has_data: bool,
) -> String {
    let file_id = topo_file.cpu_of_qemu_index(cpu);
    let ids = if topo_file.numbering() == CpuNumbering::Qemu {
        format!("CPU {cpu}")
    } else {
        format!("CPU {cpu} (file CPU {file_id})")
    };
    let node = guest.node_of(cpu).map_or("-".to_owned(), |n| n.to_string());
    let mut t = format!("{ids} · node {node} · core {}", guest.core_of(cpu));
    if !has_data {
        t.push_str("\nno guest data");
        return t;
    }
    let c = counts.cloned().unwrap_or_default();
    let names = |v: &[String]| if v.is_empty() { String::new() } else { format!(" ({})", v.join(", ")) };
    t.push_str(&format!("\neffective IRQs: {}{}", c.effective, names(&c.effective_irqs)));
    t.push_str(&format!("\nin smp_affinity_list of: {}{}", plural(c.affinity, "IRQ"), names(&c.affinity_irqs)));
    if c.effective_per_nic.len() > 1 {
        let per = |v: &[u32]| v.iter().enumerate().map(|(k, n)| format!("NIC {k}: {n}")).collect::<Vec<_>>().join(", ");
        t.push_str(&format!(
            "\nper NIC: effective {}; in smp_affinity_list {}",
            per(&c.effective_per_nic),
            per(&c.affinity_per_nic)
        ));
    }
    if let Some(l) = load {
        t.push_str(&format!(
            "\nunder load: {} queue interrupts, {} NET_RX and {} NET_TX softirqs",
            l.interrupts, l.net_rx, l.net_tx
        ));
    }
    t
}

struct Ctx<'a> {
    m: Metrics,
    /// The busiest CPU's load in the picture (all panels): the top of the load scale.
    max_load: u64,
    file: &'a Topology,
    guest: &'a Topology,
    view: &'a PanelView,
}

fn pu(ctx: &Ctx<'_>, r: &Rect, cpu: u32) -> Group {
    let m = &ctx.m;
    let has_data = ctx.view.counts.is_some();
    let counts = ctx.view.counts.as_ref().and_then(|c| c.get(&cpu));
    let (eff, aff) = counts.map_or((0, 0), |c| (c.effective, c.affinity));
    let load = ctx.view.load.as_ref().map(|l| l.get(&cpu).copied().unwrap_or_default());
    let fill = match (has_data, load) {
        (false, _) => NO_DATA,
        (true, Some(l)) => load_fill(l.total(), ctx.max_load),
        (true, None) => effective_fill(eff),
    };
    let dark = ink_on(fill) == "#ffffff";
    let id = match ctx.view.key {
        Some(k) => format!("{k}-cpu-{cpu}"),
        None => format!("cpu-{cpu}"),
    };
    let mut g = Group::new()
        .set("class", "cpu")
        .set("id", id)
        .set("data-cpu", cpu)
        .set("data-node", ctx.guest.node_of(cpu).map_or(-1, i64::from))
        .set("data-core", ctx.guest.core_of(cpu));
    if ctx.file.numbering() != CpuNumbering::Qemu {
        g = g.set("data-file-cpu", ctx.file.cpu_of_qemu_index(cpu));
    }
    if let Some(k) = ctx.view.key {
        g = g.set("data-panel", k);
    }
    if has_data {
        g = g.set("data-effective-irqs", eff).set("data-affinity-irqs", aff);
    }
    let nics = ctx.file.nics().len();
    if has_data && nics > 1 {
        let per = |v: Option<&Vec<u32>>| {
            (0..nics).map(|k| v.and_then(|v| v.get(k)).copied().unwrap_or(0).to_string()).collect::<Vec<_>>().join(",")
        };
        g = g
            .set("data-effective-irqs-per-nic", per(counts.map(|c| &c.effective_per_nic)))
            .set("data-affinity-irqs-per-nic", per(counts.map(|c| &c.affinity_per_nic)));
    }
    if let Some(l) = load {
        g = g
            .set("data-load-interrupts", l.interrupts)
            .set("data-load-net-rx", l.net_rx)
            .set("data-load-net-tx", l.net_tx);
    }
    g = g.add(Title::new(cpu_title(ctx.file, ctx.guest, cpu, counts, load, has_data)));
    g = g.add(rect(r, fill, "#868e96", 0.8 * m.s).set("rx", px(2.0 * m.s)));
    let ink = ink_on(fill);
    g = g.add(text(r.x + 3.0 * m.s, r.y + 10.0 * m.s, 9.0 * m.s, if dark { ink } else { MUTED }, &cpu.to_string()));
    if eff > 0 {
        let t = text(r.x + r.w / 2.0, r.y + 24.0 * m.s, 13.0 * m.s, ink, &eff.to_string())
            .set("font-weight", "bold")
            .set("text-anchor", "middle");
        g = g.add(t);
    }
    // One dot per IRQ whose smp_affinity_list holds the CPU (up to 5, then a plus),
    // NIC 0's first, each in its NIC's colour when the machine has several.
    let step = 4.6 * m.s;
    let dot_nics: Vec<usize> = match counts {
        Some(c) if nics > 1 => {
            c.affinity_per_nic.iter().enumerate().flat_map(|(k, &n)| std::iter::repeat_n(k, n as usize)).collect()
        }
        _ => vec![0; aff as usize],
    };
    for (i, &k) in dot_nics.iter().take(MAX_DOTS as usize).enumerate() {
        let mut c = Circle::new()
            .set("cx", px(r.x + 4.5 * m.s + i as f64 * step))
            .set("cy", px(r.y + r.h - 4.0 * m.s))
            .set("r", px(1.8 * m.s));
        c = if nics > 1 {
            // On a dark fill too: the NIC's colour, ringed in white.
            c.set("fill", nic_colour(k, nics)).set("stroke", "#ffffff").set("stroke-width", px(0.6 * m.s))
        } else {
            c.set("fill", if dark { "#ffffff" } else { AFFINITY })
        };
        g = g.add(c.set("data-nic", k));
    }
    if aff > MAX_DOTS {
        let x = r.x + 4.5 * m.s + f64::from(MAX_DOTS) * step - 2.5 * m.s;
        g = g.add(
            text(x, r.y + r.h - 1.5 * m.s, 9.0 * m.s, if dark { "#ffffff" } else { AFFINITY }, "+")
                .set("font-weight", "bold"),
        );
    }
    g
}

/// A label band across the top of `r`: a bold first line and an optional second one.
fn band(r: &Rect, m: &Metrics, fill: &str, label: &str, second: Option<&str>) -> Group {
    let h = if second.is_some() { m.band() * 1.75 } else { m.band() };
    let b = Rect { h, ..*r };
    let mut g = Group::new()
        .add(rect(&b, fill, "none", 0.0))
        .add(text(r.x + m.pad(), r.y + m.band() - 4.5 * m.s, m.font(), ink_on(fill), label).set("font-weight", "bold"));
    if let Some(line) = second {
        g = g.add(text(r.x + m.pad(), r.y + h - 4.0 * m.s, 0.82 * m.font(), ink_on(fill), line));
    }
    g
}

fn block(ctx: &Ctx<'_>, b: &Block) -> Group {
    let m = &ctx.m;
    let r = &b.rect;
    let mut g = Group::new();
    match &b.kind {
        Kind::Machine => {
            let label = format!(
                "Machine · {} · {}",
                plural(ctx.guest.ncpu(), "CPU"),
                plural(ctx.guest.nodes().len(), "NUMA node")
            );
            g = g
                .set("class", "machine")
                .add(rect(r, "#ffffff", MUTED, 1.5 * m.s))
                .add(band(r, m, "#dee2e6", &label, None));
        }
        Kind::Package(i) => {
            g = g.set("class", "package").add(rect(r, "#f8f9fa", "#868e96", 1.0 * m.s)).add(band(
                r,
                m,
                "#e9ecef",
                &format!("Package {i}"),
                None,
            ));
        }
        Kind::Node { id, hop, cpus } => {
            let fill = hop_fill(*hop);
            let hop_text = hop.map_or("no hop".to_owned(), |h| format!("hop {h}"));
            let mem = if *cpus == 0 { " · memory only" } else { "" };
            let width = if *hop == Some(0) { 3.5 } else { 2.0 } * m.s;
            // A file that numbers CPUs its own way: the node's CPUs as the file lists them.
            let file_cpus = ctx.file.node_cpus(*id);
            let second = (ctx.file.numbering() != CpuNumbering::Qemu && !file_cpus.is_empty())
                .then(|| format!("file CPUs {}", file_cpus.to_cpulist()));
            let title = format!(
                "NUMA node {id}: {hop_text} from the NIC's node; CPUs {} (guest numbering){}",
                ctx.guest.node_cpus(*id).to_cpulist(),
                second.as_deref().map_or(String::new(), |s| format!(", {s}"))
            );
            g = g
                .set("class", "node")
                .set("data-node", *id)
                .set("data-hop", hop.map_or(-1, i64::from))
                .add(Title::new(title))
                .add(rect(r, "#ffffff", fill, width))
                .add(band(r, m, fill, &format!("Node {id} · {hop_text}{mem}"), second.as_deref()));
        }
        Kind::Core { core } => {
            g = g
                .set("class", "core")
                .set("data-core", *core)
                .add(rect(r, "#e9ecef", "#adb5bd", 0.8 * m.s).set("rx", px(2.5 * m.s)));
        }
        Kind::Pu(cpu) => return pu(ctx, r, *cpu),
        Kind::Nic { index, node, of } => {
            let where_ = node.map_or("numa_node -1 (no node)".to_owned(), |n| format!("numa_node {n}"));
            let name = if *of > 1 { format!("MANA NIC {index}") } else { "MANA NIC".to_owned() };
            let label = if node.is_some() { name.clone() } else { format!("{name} · on no node (numa_node -1)") };
            let fill = if *of > 1 { nic_colour(*index, *of) } else { NIC };
            return Group::new()
                .set("class", "nic")
                .set("data-nic", *index)
                .add(Title::new(format!("the emulated {name}, PCI device on {where_}")))
                .add(rect(r, fill, "none", 0.0).set("rx", px(3.0 * m.s)))
                .add(
                    text(r.x + m.pad(), r.y + r.h - 6.0 * m.s, m.font(), "#ffffff", &label).set("font-weight", "bold"),
                );
        }
    }
    for c in &b.children {
        g = g.add(block(ctx, c));
    }
    g
}

/// A legend item: a swatch (or dots) and its words; returns the width used.
struct Legend {
    items: Vec<Group>,
    left: f64,
    /// Rows wrap at `left + max_w`.
    max_w: f64,
    x: f64,
    y: f64,
    width: f64,
    m: Metrics,
}

impl Legend {
    /// Start a new row if an item `w` px wide does not fit on this one.
    fn fit(&mut self, w: f64) {
        if self.x > self.left && self.x + w > self.left + self.max_w {
            self.next_row();
        }
    }

    fn row_label(&mut self, label: &str) {
        let size = self.m.font();
        self.fit(text_w(label, size) * 1.1);
        self.items.push(Group::new().add(text(self.x, self.y + size, size, INK, label).set("font-weight", "bold")));
        self.x += text_w(label, size) + 8.0 * self.m.s;
    }

    fn swatch(&mut self, fill: &str, stroke: &str, inside: &str, words: &str) {
        let (s, size) = (self.m.s, self.m.font());
        // Wide enough for the label inside (`≤25%`).
        let w = (24.0 * s).max(text_w(inside, 10.0 * s) + 8.0 * s);
        self.fit(w + 4.0 * s + text_w(words, size));
        let r = Rect { x: self.x, y: self.y, w, h: 16.0 * s };
        let mut g = Group::new().add(rect(&r, fill, stroke, 1.0 * s).set("rx", px(2.0 * s)));
        if !inside.is_empty() {
            g = g.add(
                text(r.x + r.w / 2.0, r.y + 12.0 * s, 10.0 * s, ink_on(fill), inside).set("text-anchor", "middle"),
            );
        }
        self.x += r.w + 4.0 * s;
        if !words.is_empty() {
            g = g.add(text(self.x, self.y + 12.0 * s, size, INK, words));
            self.x += text_w(words, size) + 10.0 * s;
        }
        self.items.push(g);
    }

    fn dots(&mut self, n: u32, fill: &str, words: &str) {
        let s = self.m.s;
        self.fit(f64::from(n) * 4.6 * s + 8.0 * s + text_w(words, self.m.font()));
        let mut g = Group::new();
        for i in 0..n {
            g = g.add(
                Circle::new()
                    .set("cx", px(self.x + 4.0 * s + f64::from(i) * 4.6 * s))
                    .set("cy", px(self.y + 8.0 * s))
                    .set("r", px(1.8 * s))
                    .set("fill", fill),
            );
        }
        self.x += 4.0 * s + f64::from(n) * 4.6 * s + 4.0 * s;
        g = g.add(text(self.x, self.y + 12.0 * s, self.m.font(), INK, words));
        self.x += text_w(words, self.m.font()) + 10.0 * s;
        self.items.push(g);
    }

    fn next_row(&mut self) {
        self.width = self.width.max(self.x - self.left);
        self.x = self.left;
        self.y += 22.0 * self.m.s;
    }
}

/// Which CPU fills a picture uses.
#[derive(Debug, Clone, Copy)]
struct Fills {
    /// By MANA IRQ count (a run without traffic).
    irqs: bool,
    /// By load under traffic, with the busiest CPU's interrupts + softirqs.
    load: Option<u64>,
}

/// The legend at (`left`, `top`); returns its group, width and height.
fn legend(
    left: f64,
    top: f64,
    max_w: f64,
    m: Metrics,
    max_hop: Option<u32>,
    file: &Topology,
    fills: Fills,
) -> (Group, f64, f64) {
    let mut l = Legend { items: Vec::new(), left, max_w, x: left, y: top, width: 0.0, m };
    if let Some(max) = fills.load {
        l.row_label(&format!(
            "Under load: the queues' interrupts + NET_RX + NET_TX softirqs, share of the busiest CPU's {max}:"
        ));
        for (i, fill) in LOAD.iter().enumerate() {
            let label = if i == 0 { "0".to_owned() } else { format!("≤ {}%", 25 * i) };
            l.swatch(fill, "#868e96", &label, "");
        }
        l.next_row();
        l.row_label("Number on a CPU: MANA IRQs delivered to it (effective affinity)");
        l.next_row();
    }
    let nics = file.nics().len();
    if fills.irqs {
        l.row_label(if nics > 1 {
            "MANA IRQs of all NICs delivered to the CPU (effective affinity):"
        } else {
            "MANA IRQs delivered to the CPU (effective affinity):"
        });
        for (i, fill) in EFFECTIVE.iter().enumerate() {
            let label = if i == EFFECTIVE.len() - 1 { format!("{i}+") } else { i.to_string() };
            l.swatch(fill, "#868e96", &label, "");
        }
        l.next_row();
    }
    if fills.irqs || fills.load.is_some() {
        l.row_label("Dots:");
        l.dots(2, AFFINITY, "one per IRQ whose smp_affinity_list holds the CPU (here 2; up to 5, then +)");
        l.next_row();
        if nics > 1 {
            l.row_label("Dot and strip colour: the IRQ's NIC");
            for k in 0..nics {
                l.dots(1, nic_colour(k, nics), &format!("NIC {k}"));
            }
            l.next_row();
        }
    } else {
        l.swatch(NO_DATA, "#868e96", "", "no guest data: the run stopped before the guest's report");
        l.next_row();
    }
    l.row_label(if nics > 1 {
        "Node band and outline: hop from NIC 0's node"
    } else {
        "Node band and outline: hop from the NIC's node"
    });
    match max_hop {
        Some(max) => {
            for h in 0..=max.min(HOPS.len() as u32 - 1) {
                let words = match (h, nics > 1) {
                    (0, true) => "hop 0 (NIC 0's node)".to_owned(),
                    (0, false) => "hop 0 (the NIC's node)".to_owned(),
                    _ => format!("hop {h}"),
                };
                l.swatch(hop_fill(Some(h)), "none", "", &words);
            }
        }
        None => l.swatch(NO_HOP, "none", "", "no hops: the NIC is on no node (one pass over all CPUs)"),
    }
    if nics > 1 {
        l.swatch(nic_colour(0, nics), "none", "", "the MANA NICs, each in its node (hops from NIC 0's)");
    } else {
        l.swatch(NIC, "none", "", "the MANA NIC, in its node");
    }
    l.next_row();
    if file.numbering() != CpuNumbering::Qemu {
        l.row_label("CPU numbers are the guest's (QEMU numbering), as in the report's tables; node bands list the file's CPU ids.");
        l.next_row();
    }
    let mut g = Group::new().set("class", "legend");
    for item in l.items {
        g = g.add(item);
    }
    (g, l.width, l.y - top)
}

/// The whole picture.
pub(crate) fn document(file: &Topology, picture: &Picture<'_>) -> Document {
    let guest = file.to_qemu_numbering();
    let m = Metrics::for_cpus(guest.ncpu());
    let margin = 14.0;
    let machine = layout::machine(&guest, &m, file.numbering() != CpuNumbering::Qemu);
    let panels = picture.panels();
    let gap = 28.0;
    let panel_w = machine.rect.w;
    let panels_w = panels.len() as f64 * panel_w + (panels.len() - 1) as f64 * gap;
    // The legend and a single panel's title may use the whole width, at least 720 px.
    let wide = panels_w.max(720.0);
    let title_w = if panels.len() == 1 { wide } else { panel_w };
    let views: Vec<PanelView> = panels.iter().map(|(k, p)| panel_view(*k, p, title_w)).collect();
    let line_h = 18.0;
    let head_lines = views.iter().map(|v| v.lines.len()).max().unwrap_or(1);
    let heading_h = 44.0;
    let panel_top = margin + heading_h;
    let machine_top = panel_top + head_lines as f64 * line_h + 6.0;
    let max_hop = layout::node_hops(&guest).into_iter().flatten().max();
    let legend_top = machine_top + machine.rect.h + 18.0;
    let max_load = views.iter().flat_map(|v| v.load.iter().flat_map(|l| l.values())).map(CpuLoad::total).max();
    let fills = Fills {
        irqs: views.iter().any(|v| v.counts.is_some() && v.load.is_none()),
        load: views.iter().any(|v| v.load.is_some()).then(|| max_load.unwrap_or(0)),
    };
    let legend_m = Metrics { s: m.s.min(1.15) };
    let (legend, legend_w, legend_h) = legend(margin, legend_top, wide, legend_m, max_hop, file, fills);
    let heading = format!("manarig · {}", file.name());
    let sub = file.description().unwrap_or("").to_owned();
    let width = (panels_w.max(legend_w).max(text_w(&heading, 17.0)).max(text_w(&sub, 12.0)) + 2.0 * margin).ceil();
    let height = (legend_top + legend_h + margin).ceil();

    let mut doc = Document::new()
        .set("width", width)
        .set("height", height)
        .set("viewBox", (0, 0, width, height))
        .set("font-family", FONT)
        .add(Rectangle::new().set("width", width).set("height", height).set("fill", "#ffffff"))
        .add(text(margin, margin + 16.0, 17.0, INK, &heading).set("font-weight", "bold"))
        .add(text(margin, margin + 34.0, 12.0, MUTED, &sub));
    for (i, view) in views.iter().enumerate() {
        let left = margin + i as f64 * (panel_w + gap);
        let mut g = Group::new().set("class", "panel");
        if let Some(k) = view.key {
            g = g.set("data-panel", k);
        }
        for (j, (line, bold)) in view.lines.iter().enumerate() {
            let mut t =
                text(left, panel_top + (j as f64 + 1.0) * line_h - 3.0, if *bold { 14.0 } else { 12.0 }, INK, line);
            if *bold {
                t = t.set("font-weight", "bold");
            }
            g = g.add(t);
        }
        let placed = layout::place(machine.clone(), left, machine_top);
        let ctx = Ctx { m, max_load: max_load.unwrap_or(0), file, guest: &guest, view };
        g = g.add(block(&ctx, &placed));
        if view.counts.is_none() {
            // The mark sits in the machine's band, clear of the CPUs it would hide.
            let r = placed.rect;
            let size = 13.0 * m.s.min(1.2);
            let w = text_w("NO GUEST DATA", size) * 1.15 + 14.0;
            let pill = Rect { x: r.x + r.w - w - m.pad(), y: r.y + 2.0, w, h: m.band() - 4.0 };
            let mark = Group::new()
                .set("class", "no-guest-data")
                .add(rect(&pill, "#c92a2a", "none", 0.0).set("rx", px(pill.h / 2.0)))
                .add(
                    text(pill.x + w / 2.0, pill.y + pill.h / 2.0 + size * 0.36, size, "#ffffff", "NO GUEST DATA")
                        .set("text-anchor", "middle")
                        .set("font-weight", "bold"),
                );
            g = g.add(mark);
        }
        doc = doc.add(g);
    }
    doc.add(legend)
}
