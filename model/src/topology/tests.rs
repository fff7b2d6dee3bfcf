//! Validation: every kind of bad file gives one error naming the file and the field.

use super::*;

/// Seed 002's machine (2 sockets × 2 cores × 2 threads, nodes 0-3 / 4-7), valid.
const BASE: &str = r#"
name = "t"
[source]
kind = "synthetic"
wording = "test"
[cpus]
sockets = 2
cores = 2
threads = 2
[[numa.nodes]]
cpus = "0-3"
memory_mib = 512
[[numa.nodes]]
cpus = "4-7"
memory_mib = 512
[numa]
distances = [[10, 20], [20, 10]]
[nic]
numa_node = 0
[expect]
verdict = "pass"
source = "test"
"#;

fn with(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from:?}");
    BASE.replacen(from, to, 1)
}

fn err(text: &str) -> TopologyError {
    match Topology::from_toml_str("topologies/x.toml", text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

/// Assert the error names the file and `field`, has `problem`-like content, is one line.
fn invalid(text: &str, field: &str) -> (Problem, String) {
    let e = err(text);
    let line = e.to_string();
    assert!(!line.contains('\n'), "one line: {line}");
    assert!(line.starts_with("topologies/x.toml: "), "{line}");
    assert_eq!(e.field(), Some(field), "{line}");
    (e.problem().cloned().expect("Invalid"), line)
}

#[test]
fn base_is_valid_and_defaults_are_resolved() {
    let t = Topology::from_toml_str("x", BASE).expect("valid");
    assert_eq!(t.ncpu(), 8);
    // Default MSI-X table = min(ncpu, 64) + 1 (one vector per CPU + HWC), max_msix = table,
    // max_queues = 64 (MANA_MAX_NUM_QUEUES), dynamic MSI-X on (QEMU x86).
    assert_eq!((t.nic().msix_table_size, t.nic().max_msix, t.nic().max_queues), (9, 9, 64));
    assert!(t.nic().dynamic_msix);
    assert_eq!(t.siblings(5).to_cpulist(), "4-5");
    assert_eq!(t.core_of(5), 2);
    assert_eq!(t.node_of(5), Some(1));
    assert!(!t.slow());
}

#[test]
fn no_slit_means_10_and_20() {
    // arch/x86/mm/numa.c: without a SLIT, node_distance() is 10 locally and 20 remotely.
    let t = Topology::from_toml_str("x", &with("distances = [[10, 20], [20, 10]]", "")).expect("valid");
    assert_eq!((t.distance(0, 0), t.distance(0, 1)), (10, 20));
}

#[test]
fn overlapping_cpus() {
    let (p, line) = invalid(&with("cpus = \"4-7\"", "cpus = \"3-7\""), "numa.nodes[1].cpus");
    assert_eq!(p, Problem::Overlap { cpus: "3".parse().expect("mask"), other: 0 });
    assert!(line.ends_with("numa.nodes[1].cpus: CPU 3 overlaps node 0"), "{line}");
}

#[test]
fn missing_cpus() {
    let (p, _) = invalid(&with("cpus = \"4-7\"", "cpus = \"4-5\""), "numa.nodes");
    assert_eq!(p, Problem::Missing { cpus: "6-7".parse().expect("mask") });
}

#[test]
fn cpus_beyond_the_shape() {
    let (p, line) = invalid(&with("cpus = \"4-7\"", "cpus = \"4-9\""), "numa.nodes[1].cpus");
    assert!(matches!(p, Problem::CpusBeyond { total: 8, .. }), "{p:?}");
    assert!(line.contains("CPUs 8-9 are beyond the 8 CPUs of 2 sockets × 1 die × 2 cores × 2 threads"), "{line}");
}

#[test]
fn non_square_matrix() {
    let (p, _) = invalid(&with("[[10, 20], [20, 10]]", "[[10, 20]]"), "numa.distances");
    assert_eq!(p, Problem::Rows { rows: 1, nodes: 2 });
    let (p, _) = invalid(&with("[[10, 20], [20, 10]]", "[[10, 20], [20, 10, 30]]"), "numa.distances[1]");
    assert_eq!(p, Problem::RowLength { len: 3, nodes: 2 });
}

#[test]
fn diagonal_other_than_10() {
    let (p, line) = invalid(&with("[[10, 20], [20, 10]]", "[[10, 20], [20, 12]]"), "numa.distances[1][1]");
    assert_eq!(p, Problem::LocalDistance { value: 12 });
    assert!(line.contains("SLIT table looks invalid"), "{line}");
}

#[test]
fn remote_distance_out_of_range() {
    // slit_valid(): off-diagonal must be > 10; a SLIT entry is a byte (≤ 255).
    for v in [10, 5, 256, -1] {
        let (p, _) = invalid(&with("[[10, 20], [20, 10]]", &format!("[[10, {v}], [{v}, 10]]")), "numa.distances[0][1]");
        assert_eq!(p, Problem::RemoteDistance { value: v });
    }
}

#[test]
fn an_asymmetric_matrix_is_accepted_with_a_warning_naming_the_field() {
    let text = with("[[10, 20], [20, 10]]", "[[10, 20], [30, 10]]");
    let t = Topology::from_toml_str("t.toml", &text).expect("an asymmetric SLIT loads");
    assert_eq!(t.warnings().len(), 1);
    assert!(
        t.warnings()[0].starts_with("t.toml: numa.distances[0][1]: 20 but the reverse distance is 30"),
        "{:?}",
        t.warnings()
    );
    assert_eq!(t.distance(0, 1), 20);
    assert_eq!(t.distance(1, 0), 30);
}

#[test]
fn nic_on_a_node_that_does_not_exist() {
    let (p, line) = invalid(&with("numa_node = 0", "numa_node = 2"), "nic.numa_node");
    assert_eq!(p, Problem::NoSuchNode { node: 2, last: 1 });
    assert!(line.ends_with("nic.numa_node: node 2 does not exist (the file has nodes 0-1)"), "{line}");
    let (p, _) = invalid(&with("numa_node = 0", "numa_node = -1"), "nic.numa_node");
    assert_eq!(p, Problem::NoSuchNode { node: -1, last: 1 });
    let (p, _) = invalid(&with("numa_node = 0", "numa_node = \"nowhere\""), "nic.numa_node");
    assert_eq!(p, Problem::NodeName { value: "nowhere".into() });
}

#[test]
fn nic_without_a_node_is_none() {
    let t = Topology::from_toml_str("x", &with("numa_node = 0", "numa_node = \"none\"")).expect("valid");
    assert_eq!(t.nic().node, None);
}

#[test]
fn smt_sibling_group_split_across_nodes() {
    let text = with("cpus = \"0-3\"", "cpus = \"0-2\"").replacen("cpus = \"4-7\"", "cpus = \"3-7\"", 1);
    let (p, _) = invalid(&text, "numa.nodes[0].cpus");
    assert_eq!(p, Problem::SiblingSplit { cpu: 2, node: 0, sibling: 3, sibling_node: 1 });
}

#[test]
fn zero_counts() {
    for field in ["sockets", "cores", "threads"] {
        let (p, _) = invalid(&with(&format!("{field} = 2"), &format!("{field} = 0")), &format!("cpus.{field}"));
        assert_eq!(p, Problem::Zero);
    }
    let (p, _) = invalid(&with("threads = 2", "threads = 2\ndies = 0"), "cpus.dies");
    assert_eq!(p, Problem::Zero);
    let (p, _) = invalid(&with("numa_node = 0", "numa_node = 0\nmax_queues = 0"), "nic.max_queues");
    assert_eq!(p, Problem::Zero);
    let (p, _) = invalid(&with("numa_node = 0", "numa_node = 0\nmax_msix = 0"), "nic.max_msix");
    assert_eq!(p, Problem::Zero);
    let (p, _) = invalid(&with("numa_node = 0", "numa_node = 0\nmsix_table_size = 0"), "nic.msix_table_size");
    assert_eq!(p, Problem::Range { value: 0, min: 1, max: 2048 });
}

#[test]
fn too_many_cpus() {
    let (p, _) = invalid(&with("cores = 2", "cores = 4096"), "cpus");
    assert_eq!(p, Problem::TooManyCpus { total: 16384, max: 8192 });
}

#[test]
fn bad_cpulist_syntax() {
    let (p, line) = invalid(&with("cpus = \"4-7\"", "cpus = \"4-x\""), "numa.nodes[1].cpus");
    assert!(matches!(p, Problem::Cpulist(_)), "{p:?}");
    assert!(line.contains("\"4-x\""), "{line}");
}

#[test]
fn empty_node_and_no_memory() {
    let text = with("[numa]", "[[numa.nodes]]\ncpus = \"\"\nmemory_mib = 0\n[numa]").replacen(
        "[[10, 20], [20, 10]]",
        "[[10, 20, 20], [20, 10, 20], [20, 20, 10]]",
        1,
    );
    let (p, _) = invalid(&text, "numa.nodes[2]");
    assert_eq!(p, Problem::EmptyNode);
    let text = BASE.replace("memory_mib = 512", "memory_mib = 0");
    let (p, _) = invalid(&text, "numa.nodes");
    assert_eq!(p, Problem::NoMemory);
}

#[test]
fn no_nodes() {
    let text =
        "name = \"t\"\n[source]\nkind = \"synthetic\"\nwording = \"w\"\n[cpus]\nsockets = 1\ncores = 1\nthreads = 1\n\
                [numa]\nnodes = []\n[nic]\nnuma_node = \"none\"\n[expect]\nverdict = \"pass\"\nsource = \"s\"\n";
    let (p, _) = invalid(text, "numa.nodes");
    assert_eq!(p, Problem::NoNodes);
}

#[test]
fn bad_mac_and_empty_name() {
    let (p, _) = invalid(&with("numa_node = 0", "numa_node = 0\nmac = \"00:15:5d:01:02\""), "nic.mac");
    assert!(matches!(p, Problem::Mac { .. }));
    let t = Topology::from_toml_str("x", &with("numa_node = 0", "numa_node = 0\nmac = \"00:15:5D:01:02:0a\""))
        .expect("valid");
    assert_eq!(t.nic().mac, Some([0x00, 0x15, 0x5d, 0x01, 0x02, 0x0a]));
    let (p, _) = invalid(&with("name = \"t\"", "name = \" \""), "name");
    assert_eq!(p, Problem::Empty);
}

#[test]
fn unknown_fields_and_types_are_syntax_errors_with_a_line() {
    for (text, needle) in [
        (with("threads = 2", "threads = 2\nmodules = 1"), "unknown field `modules`"),
        (with("[expect]", "[expect]\nslow = true"), "unknown field `slow`"),
        (with("verdict = \"pass\"", "verdict = \"green\""), "unknown variant `green`"),
        (with("sockets = 2", "sockets = \"two\""), "invalid type"),
        (with("name = \"t\"", "name = \"t\"\ncpu_numbering = \"weird\""), "unknown variant `weird`"),
        (BASE.replace("[nic]\nnuma_node = 0\n", ""), "missing field `nic`"),
        ("name = [".to_owned(), ""),
    ] {
        let e = err(&text);
        let line = e.to_string();
        assert!(matches!(e, TopologyError::Syntax { .. }), "{line}");
        assert!(line.starts_with("topologies/x.toml:"), "{line}");
        assert!(line.contains(needle), "{line}");
        assert!(!line.contains('\n'), "one line: {line}");
    }
}

/// A wrongly typed value names its field's TOML path after `:line:column`, on one
/// line, as a validation error names its field: in a table, and in an array of tables.
#[test]
fn a_wrongly_typed_value_names_its_field() {
    let scenario = format!("{BASE}[scenario]\nirqbalance = \"yes\"\n");
    let line = scenario.lines().count();
    for (text, want) in [
        (
            scenario.clone(),
            format!(":{line}:14: scenario.irqbalance: invalid type: string \"yes\", expected a boolean"),
        ),
        (
            with("cpus = \"4-7\"", "cpus = 5"),
            ":14:8: numa.nodes[1].cpus: invalid type: integer `5`, expected a string".to_owned(),
        ),
        (
            with("sockets = 2", "sockets = -2"),
            ":7:11: cpus.sockets: invalid value: integer `-2`, expected u32".to_owned(),
        ),
        (with("numa_node = 0", "numa_node = 0\nmsix = 3"), ":20:1: nic.msix: unknown field `msix`".to_owned()),
    ] {
        let e = err(&text).to_string();
        assert!(e.starts_with(&format!("topologies/x.toml{want}")), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    // A TOML syntax error is in no field: the line and the parser's words only.
    let e = err("name = [").to_string();
    assert!(e.starts_with("topologies/x.toml:1:9: "), "{e}");
    assert!(!e.contains(".:"), "{e}");
}

#[test]
fn unreadable_file() {
    let e = Topology::load("/nonexistent/x.toml").expect_err("missing file");
    assert!(e.to_string().starts_with("/nonexistent/x.toml: cannot read the topology file"), "{e}");
}

#[test]
fn ninety_six_cpus_default_to_slow() {
    let text = with("cores = 2", "cores = 24").replacen("\"0-3\"", "\"0-47\"", 1).replacen("\"4-7\"", "\"48-95\"", 1);
    let t = Topology::from_toml_str("x", &text).expect("valid");
    assert!(t.slow());
    let t = Topology::from_toml_str("x", &format!("slow = false\n{text}")).expect("valid");
    assert!(!t.slow());
}

#[test]
fn linux_smt_outer_numbering_and_qemu_mapping() {
    // Seed 003-style numbering on a small machine: siblings N and N+4.
    let text = with("name = \"t\"", "name = \"t\"\ncpu_numbering = \"linux-smt-outer\"")
        .replacen("\"0-3\"", "\"0-1,4-5\"", 1)
        .replacen("\"4-7\"", "\"2-3,6-7\"", 1);
    let t = Topology::from_toml_str("x", &text).expect("valid");
    assert_eq!(t.siblings(1).to_cpulist(), "1,5");
    assert_eq!((t.qemu_index(5), t.cpu_of_qemu_index(3)), (3, 5));
    assert_eq!(t.qemu_node_cpus(1).to_cpulist(), "4-7");
    let g = t.to_qemu_numbering();
    assert_eq!(g.nodes()[0].cpus.to_cpulist(), "0-3");
    assert_eq!(g.siblings(1).to_cpulist(), "0-1");
    // Splitting N and N+4 across nodes is caught under this numbering.
    let bad = with("name = \"t\"", "name = \"t\"\ncpu_numbering = \"linux-smt-outer\"");
    let (p, _) = invalid(&bad, "numa.nodes[0].cpus");
    assert_eq!(p, Problem::SiblingSplit { cpu: 0, node: 0, sibling: 4, sibling_node: 1 });
}

/// The base file is seed 002's 8-CPU machine with the default 9-entry table:
/// the driver allows 1..=8 combined channels (one queue per CPU, the 9th
/// vector is the HWC's: mana_gd_query_max_resources()).
#[test]
fn channels_must_fit_the_driver_maximum() {
    let t =
        Topology::from_toml_str("x", &with("numa_node = 0", "numa_node = 0\nchannels = 4")).expect("4 channels fit");
    assert_eq!(t.nic().channels, Some(4));
    let (p, _) = invalid(&with("numa_node = 0", "numa_node = 0\nchannels = 9"), "nic.channels");
    assert_eq!(p, Problem::Range { value: 9, min: 1, max: 8 });
    let (p, _) = invalid(&with("numa_node = 0", "numa_node = 0\nchannels = 0"), "nic.channels");
    assert_eq!(p, Problem::Range { value: 0, min: 1, max: 8 });
    // A 5-entry table leaves 4 queue vectors.
    let (p, _) = invalid(&with("numa_node = 0", "numa_node = 0\nmsix_table_size = 5\nchannels = 5"), "nic.channels");
    assert_eq!(p, Problem::Range { value: 5, min: 1, max: 4 });
}

/// `[nic] inject`: the fault-injection specs are kept as written (the harness
/// parses them, device_model::inject); none by default.
#[test]
fn inject_specs_are_kept_as_written_and_default_to_none() {
    let t = Topology::from_toml_str("x", &with("numa_node = 0", "numa_node = 0\ninject = [\"silent-vector:1\"]"))
        .expect("inject is a list of strings");
    assert_eq!(t.nic().inject, ["silent-vector:1"]);
    let t = Topology::from_toml_str("x", &with("numa_node = 0", "numa_node = 0")).expect("plain");
    assert!(t.nic().inject.is_empty());
}

#[test]
fn a_kernel_generation_can_be_expected_to_do_otherwise_and_a_bad_one_is_named() {
    let text = format!(
        "{BASE}\n[expect.on.\"7.x\"]\nverdict = \"kernel-finding\"\nsource = \"WARNING: kernel/time/timer_migration.c:1850\"\n"
    );
    let t = Topology::from_toml_str("topologies/x.toml", &text).expect("valid");
    assert_eq!(t.expect().on("6.12"), (ExpectedVerdict::Pass, "test"));
    assert_eq!(t.expect().on("7.x"), (ExpectedVerdict::KernelFinding, "WARNING: kernel/time/timer_migration.c:1850"));
    // Written back as read.
    let again = Topology::from_toml_str("topologies/x.toml", &TopologyDraft::from(&t).to_toml()).expect("round trip");
    assert_eq!(again.expect(), t.expect());
    let bad = text.replace("[expect.on.\"7.x\"]", "[expect.on.\"7.9\"]");
    let (problem, line) = invalid(&bad, "expect.on.\"7.9\"");
    assert!(matches!(problem, Problem::KernelGen { .. }), "{line}");
}

#[test]
fn an_arm64_machine_with_clusters_numbers_cores_across_its_clusters() {
    // 1 socket × 2 clusters × 2 cores × 1 thread: CPUs 0-1 in cluster 0, 2-3 in cluster 1.
    let text = with(
        "[cpus]\nsockets = 2\ncores = 2\nthreads = 2",
        "[machine]\narch = \"arm64\"\n[cpus]\nsockets = 2\nclusters = 2\ncores = 2\nthreads = 1",
    );
    let t = Topology::from_toml_str("topologies/x.toml", &text).expect("valid");
    assert_eq!((t.arch(), t.clusters(), t.cores_per_cluster()), (Arch::Arm64, 2, 2));
    assert_eq!(t.shape(), CpuShape { sockets: 2, dies: 1, cores: 4, threads: 1 });
    assert_eq!(t.ncpu(), 8);
    assert_eq!(t.siblings(5).to_cpulist(), "5", "no SMT: each sibling group is one CPU");
    let back = Topology::from_toml_str("x", &t.to_toml()).expect("round trip");
    assert_eq!((back.arch(), back.clusters(), back.shape()), (t.arch(), t.clusters(), t.shape()));
    assert!(t.to_toml().contains("[machine]\narch = \"arm64\""), "{}", t.to_toml());
}

#[test]
fn an_x86_machine_is_x86_by_default_and_its_json_does_not_change() {
    let t = Topology::from_toml_str("x", BASE).expect("valid");
    assert_eq!((t.arch(), t.clusters()), (Arch::X86_64, 1));
    let json = serde_json::to_string(&t).expect("json");
    assert!(!json.contains("arch") && !json.contains("clusters"), "{json}");
    assert!(!t.to_toml().contains("[machine]"));
}

#[test]
fn levels_an_architecture_does_not_show_are_refused_with_the_field() {
    let e = err(&with("[cpus]\nsockets = 2", "[cpus]\nsockets = 2\nclusters = 2"));
    assert_eq!(e.field(), Some("cpus.clusters"));
    assert!(matches!(e.problem(), Some(Problem::ArchLevel { level: "clusters", arch: Arch::X86_64, count: 2 })), "{e}");
    let e = err(&with("[cpus]\nsockets = 2", "[machine]\narch = \"arm64\"\n[cpus]\nsockets = 1\ndies = 2"));
    assert_eq!(e.field(), Some("cpus.dies"));
    let e = err(&with("[cpus]\nsockets = 2", "[machine]\narch = \"riscv\"\n[cpus]\nsockets = 2"));
    assert!(matches!(&e, TopologyError::Syntax { message, .. } if message.starts_with("machine.arch")), "{e}");
    let t = Topology::from_toml_str("x", BASE).expect("valid");
    assert_eq!(t.with_arch(Arch::Arm64, "x").expect("arm64").arch(), Arch::Arm64);
    let dies = Topology::from_toml_str("x", &with("sockets = 2\ncores = 2", "sockets = 1\ndies = 2\ncores = 2"))
        .expect("valid on x86");
    assert!(dies.with_arch(Arch::Arm64, "x").is_err());
}
