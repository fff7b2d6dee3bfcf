use super::*;
use crate::model::{expected_table, KernelGen};
use crate::verdict::{judge, Observed};
use std::collections::BTreeMap;

fn topology(name: &str) -> Topology {
    let path = format!("{}/../../../topologies/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    Topology::load(path).unwrap_or_else(|e| panic!("{e}"))
}

/// A verdict whose guest did what the model predicts, every vector fired once on the
/// first CPU of its affinity. The pictures' tests are about drawing a verdict, not
/// about the table's correctness: the model's table is the guest here on purpose.
fn verdict(t: &Topology, k: KernelGen) -> Verdict {
    let table = expected_table(&t.to_qemu_numbering(), k);
    let observed = Observed::as_model_predicts(&table, "0000:41:00.0", 24);
    judge(t, &observed, &table)
}

/// Per CPU (effective, affinity) straight from the report's rows.
fn report_counts(v: &Verdict) -> BTreeMap<u32, (u32, u32)> {
    let mut out: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
    for row in &v.vectors {
        if let Some(cpu) = row.effective_cpu() {
            out.entry(cpu).or_default().0 += 1;
        }
        for cpu in row.observed.iter().flat_map(|o| o.smp_affinity_list.iter()) {
            out.entry(cpu).or_default().1 += 1;
        }
    }
    out
}

fn attr_u32(n: &roxmltree::Node<'_, '_>, name: &str) -> u32 {
    n.attribute(name).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name} on {:?}", n.attribute("id")))
}

fn cpu_elements<'a, 'i>(doc: &'a roxmltree::Document<'i>) -> Vec<roxmltree::Node<'a, 'i>> {
    doc.descendants().filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("cpu")).collect()
}

#[test]
fn every_cpu_carries_the_reports_counts_in_its_title_and_data_attributes() {
    for (name, k) in [
        ("seed-002", KernelGen::V6_12),
        ("seed-003-epyc-7763", KernelGen::V6_12),
        ("seed-003-epyc-7763", KernelGen::V6_1),
        ("r15-memory-only-small", KernelGen::V7),
    ] {
        let t = topology(name);
        let v = verdict(&t, k);
        let text = svg(&t, &Picture::One(Panel::Run(&v)));
        let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let cpus = cpu_elements(&doc);
        assert_eq!(cpus.len() as u32, t.ncpu(), "{name}");
        let want = report_counts(&v);
        let mut per_node: BTreeMap<u32, u32> = BTreeMap::new();
        for el in &cpus {
            let cpu = attr_u32(el, "data-cpu");
            let (eff, aff) = want.get(&cpu).copied().unwrap_or_default();
            assert_eq!(attr_u32(el, "data-effective-irqs"), eff, "{name}: CPU {cpu}");
            assert_eq!(attr_u32(el, "data-affinity-irqs"), aff, "{name}: CPU {cpu}");
            let title = el.children().find(|c| c.has_tag_name("title")).and_then(|c| c.text()).unwrap_or_default();
            assert!(title.contains(&format!("effective IRQs: {eff}")), "{name}: {title}");
            let irqs = crate::text::plural(aff, "IRQ");
            assert!(title.contains(&format!("in smp_affinity_list of: {irqs}")), "{name}: {title}");
            *per_node.entry(attr_u32(el, "data-node")).or_default() += eff;
        }
        // The summary's IRQs per node are the same numbers.
        for n in &v.summary.per_node {
            assert_eq!(per_node.get(&n.node).copied().unwrap_or(0), n.irqs, "{name}: node {}", n.node);
        }
        assert_eq!(want.values().map(|c| c.0).sum::<u32>(), v.summary.fired, "{name}");
    }
}

#[test]
fn seed_003_names_file_ids_and_rings_the_nodes_from_the_nics() {
    let t = topology("seed-003-epyc-7763");
    let v = verdict(&t, KernelGen::V6_12);
    let text = svg(&t, &Picture::One(Panel::Run(&v)));
    let doc = roxmltree::Document::parse(&text).expect("SVG");
    // Guest CPU 224 is the file's CPU 112 (node 14's first core), its sibling 225 is 240.
    let cpu = |id: &str| doc.descendants().find(|n| n.attribute("id") == Some(id)).expect(id);
    assert_eq!(cpu("cpu-224").attribute("data-file-cpu"), Some("112"));
    assert_eq!(cpu("cpu-225").attribute("data-file-cpu"), Some("240"));
    let hop = |node: u32| {
        doc.descendants()
            .find(|n| n.attribute("class") == Some("node") && n.attribute("data-node") == Some(&node.to_string()))
            .and_then(|n| n.attribute("data-hop"))
            .map(str::to_owned)
    };
    assert_eq!([hop(14), hop(13), hop(8), hop(0)].map(Option::unwrap_or_default), ["0", "1", "2", "3"]);
    assert_eq!(doc.descendants().filter(|n| n.attribute("class") == Some("nic")).count(), 1);
}

#[test]
fn a_rig_error_still_draws_the_topology_marked_no_guest_data() {
    let t = topology("seed-002");
    let text = svg(
        &t,
        &Picture::One(Panel::NoGuestData {
            run: "seed-002@6.12",
            reason: "QEMU exited with status 1 <before> the report",
        }),
    );
    keep("seed-002-no-guest-data", &text);
    let doc = roxmltree::Document::parse(&text).expect("SVG");
    let cpus = cpu_elements(&doc);
    assert_eq!(cpus.len(), 8);
    assert!(cpus.iter().all(|c| c.attribute("data-effective-irqs").is_none()));
    assert!(text.contains("no guest data") && text.contains("&lt;before&gt;"), "{text}");
    assert!(!blank(&rasterise(&text)));
}

#[test]
fn compare_draws_before_and_after_side_by_side_with_unique_ids() {
    let t = topology("seed-003-epyc-7763");
    let (b, a) = (verdict(&t, KernelGen::V6_1), verdict(&t, KernelGen::V6_12));
    let text = svg(&t, &Picture::BeforeAfter(Panel::Run(&b), Panel::Run(&a)));
    let doc = roxmltree::Document::parse(&text).expect("SVG");
    let cpus = cpu_elements(&doc);
    assert_eq!(cpus.len() as u32, 2 * t.ncpu());
    let ids: std::collections::BTreeSet<&str> = cpus.iter().filter_map(|c| c.attribute("id")).collect();
    assert_eq!(ids.len(), cpus.len(), "ids are unique");
    let x_of = |id: &str| {
        let g = doc.descendants().find(|n| n.attribute("id") == Some(id)).expect(id);
        g.children()
            .find(|c| c.has_tag_name("rect"))
            .and_then(|r| r.attribute("x"))
            .and_then(|x| x.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    assert!(x_of("before-cpu-255") < x_of("after-cpu-0"), "before is on the left");
    for (key, v) in [("before", &b), ("after", &a)] {
        let want = report_counts(v);
        for el in cpus.iter().filter(|c| c.attribute("data-panel") == Some(key)) {
            let cpu = attr_u32(el, "data-cpu");
            assert_eq!(attr_u32(el, "data-effective-irqs"), want.get(&cpu).map_or(0, |c| c.0), "{key} CPU {cpu}");
        }
    }
}

#[test]
fn the_html_report_holds_the_picture_and_the_escaped_tables() {
    let t = topology("seed-002");
    let (b, a) = (verdict(&t, KernelGen::V6_1), verdict(&t, KernelGen::V6_12));
    let page = html(&t, &Picture::BeforeAfter(Panel::Run(&b), Panel::Run(&a)));
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg") && page.contains("</svg>"));
    assert!(page.contains("<h2>Before and after</h2>") && page.contains("mana_q0"));
    assert!(page.contains("verdict: PASS"));
    let no_data = html(&t, &Picture::One(Panel::NoGuestData { run: "x@6.12", reason: "a <b> & c" }));
    assert!(no_data.contains("a &lt;b&gt; &amp; c") && !no_data.contains("a <b> & c"));
}

fn rasterise(svg_text: &str) -> resvg::tiny_skia::Pixmap {
    let mut options = resvg::usvg::Options::default();
    options.fontdb_mut().load_system_fonts();
    let tree = resvg::usvg::Tree::from_str(svg_text, &options).expect("usvg parses the picture");
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).expect("a non-empty picture");
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap
}

/// Whether (nearly) every pixel has the same colour.
fn blank(p: &resvg::tiny_skia::Pixmap) -> bool {
    let px = p.pixels();
    let first = px[0];
    px.iter().filter(|c| **c != first).count() < px.len() / 100
}

#[test]
fn the_pictures_rasterise_to_images_that_are_not_blank() {
    // MANARIG_PICTURE_DIR=/tmp/pics keeps the pictures to look at.
    for (file, name, k) in
        [("seed-002", "seed-002", KernelGen::V6_12), ("seed-003", "seed-003-epyc-7763", KernelGen::V6_12)]
    {
        let t = topology(name);
        let v = verdict(&t, k);
        let before = verdict(&t, KernelGen::V6_1);
        for (suffix, picture) in [
            ("run", Picture::One(Panel::Run(&v))),
            ("compare", Picture::BeforeAfter(Panel::Run(&before), Panel::Run(&v))),
        ] {
            let text = svg(&t, &picture);
            let pixmap = rasterise(&text);
            assert!(!blank(&pixmap), "{file} {suffix}");
            // Some CPU shows the colour of one delivered IRQ.
            let [r, g, b] = [0xff, 0xd8, 0xa8];
            assert!(
                pixmap.pixels().iter().any(|p| (p.red(), p.green(), p.blue()) == (r, g, b)),
                "{file} {suffix}: no 1-IRQ CPU"
            );
            keep(&format!("{file}-{suffix}"), &text);
        }
    }
    // A NIC on no node, memory-only nodes: drawn, not blank.
    for (name, k) in [
        ("r23-no-node", KernelGen::V6_12),
        ("r15-memory-only-small", KernelGen::V6_12),
        ("seed-001-azure-128", KernelGen::V6_12),
    ] {
        let t = topology(name);
        let v = verdict(&t, k);
        let text = svg(&t, &Picture::One(Panel::Run(&v)));
        assert!(!blank(&rasterise(&text)), "{name}");
        keep(name, &text);
    }
}

/// With MANARIG_PICTURE_DIR set, keep the picture there as SVG and PNG to look at.
fn keep(name: &str, svg_text: &str) {
    let Some(dir) = std::env::var_os("MANARIG_PICTURE_DIR").map(std::path::PathBuf::from) else { return };
    std::fs::create_dir_all(&dir).expect("picture dir");
    rasterise(svg_text).save_png(dir.join(format!("{name}.png"))).expect("png");
    std::fs::write(dir.join(format!("{name}.svg")), svg_text).expect("svg");
}

/// A real `run --traffic` verdict: `cargo xtask run topologies/seed-002.toml --kernel
/// 6.12-min --traffic --format json` (16 flows of 8 KiB each way; every CPU took some).
fn traffic_verdict() -> Verdict {
    let path = format!("{}/../../tests/fixtures/picture/seed-002-6.12-min-traffic.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The fill of a CPU's box.
fn cpu_fill<'a>(el: &roxmltree::Node<'a, '_>) -> &'a str {
    el.children().find(|c| c.has_tag_name("rect")).and_then(|r| r.attribute("fill")).unwrap_or("")
}

#[test]
fn under_traffic_every_cpu_carries_its_interrupts_and_softirqs_and_the_busiest_is_darkest() {
    let t = topology("seed-002");
    let v = traffic_verdict();
    let traffic = v.traffic.as_ref().expect("the fixture ran with --traffic");
    let text = svg(&t, &Picture::One(Panel::Run(&v)));
    keep("seed-002-traffic", &text);
    let doc = roxmltree::Document::parse(&text).expect("SVG");
    let cpus = cpu_elements(&doc);
    assert_eq!(cpus.len(), 8);
    let total = |c: &crate::verdict::traffic::TrafficCpu| c.interrupts + c.net_rx + c.net_tx;
    let busiest = traffic.cpus.iter().max_by_key(|c| total(c)).expect("CPUs").cpu;
    let want = report_counts(&v);
    for el in &cpus {
        let cpu = attr_u32(el, "data-cpu");
        let row = traffic.cpus.iter().find(|c| c.cpu == cpu).expect("a traffic row per CPU");
        assert_eq!(u64::from(attr_u32(el, "data-load-interrupts")), row.interrupts, "CPU {cpu}");
        assert_eq!(u64::from(attr_u32(el, "data-load-net-rx")), row.net_rx, "CPU {cpu}");
        assert_eq!(u64::from(attr_u32(el, "data-load-net-tx")), row.net_tx, "CPU {cpu}");
        let title = el.children().find(|c| c.has_tag_name("title")).and_then(|c| c.text()).unwrap_or_default();
        let line = format!(
            "under load: {} queue interrupts, {} NET_RX and {} NET_TX softirqs",
            row.interrupts, row.net_rx, row.net_tx
        );
        assert!(title.contains(&line), "{title}");
        // The IRQ counts stay, written on the CPU.
        assert_eq!(attr_u32(el, "data-effective-irqs"), want.get(&cpu).map_or(0, |c| c.0), "CPU {cpu}");
        // The darkest load colour is the busiest CPU's alone (seed 002's run: one CPU
        // above 75 % of the busiest).
        assert_eq!(
            cpu_fill(el) == "#a61e4d",
            cpu == busiest
                || total(row) * 4 > total(traffic.cpus.iter().find(|c| c.cpu == busiest).expect("busiest")) * 3,
            "CPU {cpu}: {}",
            cpu_fill(el)
        );
    }
    assert!(text.contains("Under load: the queues' interrupts + NET_RX + NET_TX softirqs"));
    assert!(!blank(&rasterise(&text)));
    // Without the traffic object the same run is coloured by its IRQ counts.
    let mut quiet = v.clone();
    quiet.traffic = None;
    let text = svg(&t, &Picture::One(Panel::Run(&quiet)));
    assert!(!text.contains("data-load-") && !text.contains("#a61e4d"));
}

#[test]
fn a_failed_run_names_its_first_failed_check_above_the_machine() {
    let t = topology("seed-002");
    // The guest ran 6.12 (irq_setup); judged by the 6.1 model, every vector is off.
    // (The model's 6.12 table as the guest: the test is about the picture's title.)
    let q = t.to_qemu_numbering();
    let observed = Observed::as_model_predicts(&expected_table(&q, KernelGen::V6_12), "0000:41:00.0", 24);
    let v = judge(&t, &observed, &expected_table(&q, KernelGen::V6_1));
    let first = v.failures().next().expect("a failed check");
    let text = svg(&t, &Picture::One(Panel::Run(&v)));
    assert!(text.contains("verdict FAIL") && text.contains(&format!("first failed check: {}", first.name)), "{text}");
}

/// two-nics-small with both NICs doing what the model predicts for each alone: every
/// CPU's number is the combined load (both NICs' effective IRQs, as the verdict's
/// `nics.load` delivered column counts them), its dots carry their NIC, each NIC has its
/// strip in its node, and the title gives NIC 1's verdict.
#[test]
fn two_nics_show_each_nics_irqs_and_the_combined_load() {
    let t = topology("two-nics-small");
    let mut v = verdict(&t, KernelGen::V6_12);
    let only = t.with_only_nic(1).expect("nic 1");
    // Both guests are the model's tables: the test is about drawing two NICs' load.
    let table1 = expected_table(&only.to_qemu_numbering(), KernelGen::V6_12);
    let observed1 = Observed::as_model_predicts(&table1, "0000:51:00.0", 40);
    let table0 = expected_table(&t.with_only_nic(0).expect("nic 0").to_qemu_numbering(), KernelGen::V6_12);
    let observed0 = Observed::as_model_predicts(&table0, "0000:41:00.0", 24);
    let load = crate::verdict::combined_load(&t.to_qemu_numbering(), &[(&observed0, &table0), (&observed1, &table1)]);
    let mut nic1 = judge(&only, &observed1, &table1);
    nic1.run.name = "two-nics-small#nic1".into();
    v.add_nics(crate::verdict::NicsReport {
        nics: vec![crate::verdict::NicVerdict { index: 1, bdf: None, node: Some(1), verdict: nic1 }],
        load: load.clone(),
    });
    let counts = cpu_counts(&v);
    for row in &load {
        let c = counts.get(&row.cpu).cloned().unwrap_or_default();
        assert_eq!(c.effective, row.delivered_total(), "CPU {}", row.cpu);
        assert_eq!(c.affinity, row.affinity_total(), "CPU {}", row.cpu);
        if c.effective > 0 {
            assert_eq!(c.effective_per_nic, row.delivered, "CPU {}", row.cpu);
        }
    }
    let text = svg(&t, &Picture::One(Panel::Run(&v)));
    let doc = roxmltree::Document::parse(&text).expect("valid SVG");
    for cpu in cpu_elements(&doc) {
        let id = attr_u32(&cpu, "data-cpu");
        let row = &load[id as usize];
        let per: Vec<u32> = cpu
            .attribute("data-effective-irqs-per-nic")
            .expect("per-NIC counts")
            .split(',')
            .map(|n| n.parse().expect("count"))
            .collect();
        assert_eq!(per, row.delivered, "CPU {id}");
        assert_eq!(attr_u32(&cpu, "data-effective-irqs"), row.delivered_total(), "CPU {id}");
        let dots: Vec<&str> =
            cpu.children().filter(|n| n.has_tag_name("circle")).filter_map(|n| n.attribute("data-nic")).collect();
        assert_eq!(
            dots.iter().filter(|k| **k == "1").count() as u32,
            row.in_affinity[1].min(5 - row.in_affinity[0].min(5))
        );
    }
    let strips: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("nic"))
        .filter_map(|n| n.attribute("data-nic"))
        .collect();
    assert_eq!(strips, ["0", "1"]);
    assert!(text.contains("NIC 1 on node 1: PASS"), "the title names NIC 1's verdict");
    assert!(!blank(&rasterise(&text)));
}
