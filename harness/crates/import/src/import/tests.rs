use super::*;
use crate::model::{expected_table, KernelGen};
use crate::topology::CpuNumbering;
use std::io::Write as _;

const KERNELS: [KernelGen; 4] = [KernelGen::V6_1, KernelGen::V6_3, KernelGen::V6_12, KernelGen::V7];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/import")).join(name)
}

fn topology(name: &str) -> Topology {
    let path = format!("{}/../../../topologies/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    Topology::load(path).unwrap_or_else(|e| panic!("{e}"))
}

fn opts(nic_node: Option<NicNode>, name: Option<&str>) -> ImportOptions {
    ImportOptions { nic_node, nic_if: None, name: name.map(str::to_owned) }
}

fn import_ok(inputs: &[Input], o: &ImportOptions) -> Imported {
    import(inputs, o).unwrap_or_else(|e| panic!("{e}"))
}

/// The expected tables (file numbering and the guest's) of two machines are the same on
/// every kernel generation.
fn assert_same_tables(got: &Topology, want: &Topology) {
    // The tables name their topology in the first line: compare them under one name.
    let text = |t: &Topology, k: KernelGen| {
        let mut table = expected_table(t, k);
        table.topology = want.name().to_owned();
        table.to_text()
    };
    for k in KERNELS {
        assert_eq!(text(got, k), text(want, k), "kernel {k}");
        let (g, w) = (got.to_qemu_numbering(), want.to_qemu_numbering());
        assert_eq!(text(&g, k), text(&w, k), "kernel {k}, guest numbering");
    }
}

/// A temporary folder with files written into it.
struct Files(tempfile::TempDir);

impl Files {
    fn new() -> Self {
        Files(tempfile::tempdir().expect("tempdir"))
    }
    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.path().join(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::fs::write(&path, bytes).expect("write");
        path
    }
}

fn import_text(text: &str, nic: Option<NicNode>) -> Result<Imported, ImportError> {
    let files = Files::new();
    let path = files.write("paste.txt", text.as_bytes());
    import(&[Input::any(path)], &opts(nic, None))
}

fn error_of(text: &str, nic: Option<NicNode>) -> ImportError {
    let e = import_text(text, nic).map(|i| i.toml).expect_err("an error");
    assert_eq!(e.to_string().lines().count(), 1, "one line: {e}");
    e
}

#[test]
fn the_seed_003_paste_imports_to_the_seed_003_table_on_every_kernel() {
    let imported =
        import_ok(&[Input::any(fixture("seed-003-lscpu-numactl.txt"))], &opts(None, Some("seed-003-epyc-7763")));
    let t = &imported.topology;
    assert_eq!(t.numbering(), CpuNumbering::LinuxSmtOuter);
    assert_eq!(t.nic().node, Some(14));
    assert_eq!((t.ncpu(), t.nodes().len()), (256, 16));
    assert_same_tables(t, &topology("seed-003-epyc-7763"));
    // Read, not assumed: only the memory is.
    assert_eq!(imported.notes.len(), 1, "{:?}", imported.notes);
    assert!(imported.toml.contains("[source]\nkind = \"report\"") && imported.toml.contains("[expect]"));
}

#[test]
fn the_seed_003_paste_split_in_two_files_imports_the_same_machine() {
    let text = std::fs::read_to_string(fixture("seed-003-lscpu-numactl.txt")).expect("fixture");
    let (lscpu, numactl) = text.split_at(text.find("$ numactl -H").expect("numactl part"));
    let files = Files::new();
    let inputs = [
        Input { path: files.write("lscpu.txt", lscpu.as_bytes()), declared: Declared::Lscpu },
        Input { path: files.write("numactl.txt", numactl.as_bytes()), declared: Declared::Numactl },
    ];
    let imported = import_ok(&inputs, &opts(None, None));
    assert_same_tables(&imported.topology, &topology("seed-003-epyc-7763"));
    // Without prompts, pasted back to back, too.
    // (The numa_node value alone would be an unknown line: it needs its `$ cat` line.)
    let bare: String = text.lines().filter(|l| !l.starts_with('$') && *l != "14").map(|l| format!("{l}\n")).collect();
    let path = files.write("bare.txt", bare.as_bytes());
    let imported = import_ok(&[Input::any(path)], &opts(Some(NicNode::Node(14)), None));
    assert_same_tables(&imported.topology, &topology("seed-003-epyc-7763"));
}

#[test]
fn hwloc_xml_of_seed_003_and_seed_002_gives_their_tables() {
    let imported = import_ok(&[Input::any(fixture("hwloc-seed-003.xml"))], &opts(Some(NicNode::Node(14)), None));
    assert_eq!(imported.topology.numbering(), CpuNumbering::LinuxSmtOuter);
    assert_same_tables(&imported.topology, &topology("seed-003-epyc-7763"));
    let imported = import_ok(&[Input::any(fixture("hwloc-seed-002.xml"))], &opts(Some(NicNode::Node(0)), None));
    assert_eq!(imported.topology.numbering(), CpuNumbering::Qemu);
    assert_same_tables(&imported.topology, &topology("seed-002"));
}

#[test]
fn this_machines_own_exports_agree_and_hwloc_finds_the_nic_in_the_pci_tree() {
    let hwloc = import_ok(&[Input::any(fixture("hwloc-this-machine.xml"))], &opts(None, None));
    assert_eq!(hwloc.topology.nic().node, Some(0), "eth0 hangs below the machine, whose nodeset is node 0");
    assert!(hwloc.toml.contains("# eth0: "), "{}", hwloc.toml);
    for other in ["sysfs-this-machine.tar.gz", "lscpu-p-this-machine.txt", "lscpu-e-this-machine.txt"] {
        let t = import_ok(&[Input::any(fixture(other))], &opts(Some(NicNode::Node(0)), None)).topology;
        assert_eq!((t.shape(), t.nodes().len()), (hwloc.topology.shape(), 1), "{other}");
        assert_same_tables(&t, &hwloc.topology);
    }
    // The snapshot has no NIC (this machine's virtio NIC has no numa_node file): asked for.
    let e = import(&[Input::any(fixture("sysfs-this-machine.tar.gz"))], &opts(None, None)).expect_err("no NIC");
    assert_eq!(e.kind, ErrorKind::Missing);
    assert!(e.message.contains("--nic-node"), "{e}");
}

/// Seed 002's machine as sysfs files (relative to `sys/`).
fn seed_002_sysfs() -> Vec<(String, String)> {
    let mut files = vec![("devices/system/cpu/online".to_owned(), "0-7\n".to_owned())];
    for cpu in 0..8u32 {
        let dir = format!("devices/system/cpu/cpu{cpu}/topology");
        let first = cpu / 2 * 2;
        files.push((format!("{dir}/physical_package_id"), format!("{}\n", cpu / 4)));
        files.push((format!("{dir}/die_id"), "0\n".to_owned()));
        files.push((format!("{dir}/core_id"), format!("{}\n", cpu / 2 % 2)));
        files.push((format!("{dir}/thread_siblings_list"), format!("{first}-{}\n", first + 1)));
    }
    for node in 0..2u32 {
        let dir = format!("devices/system/node/node{node}");
        files.push((format!("{dir}/cpulist"), format!("{}-{}\n", node * 4, node * 4 + 3)));
        files.push((format!("{dir}/distance"), if node == 0 { "10 20\n" } else { "20 10\n" }.to_owned()));
        files.push((
            format!("{dir}/meminfo"),
            format!("Node {node} MemTotal:       1048576 kB\nNode {node} MemFree: 1 kB\n"),
        ));
    }
    files.push(("class/net/eth0/device/numa_node".to_owned(), "0\n".to_owned()));
    files.push(("class/net/eth0/device/vendor".to_owned(), "0x1414\n".to_owned()));
    files.push(("class/net/eth0/device/device".to_owned(), "0x00ba\n".to_owned()));
    files.push(("class/net/eth1/device/numa_node".to_owned(), "1\n".to_owned()));
    files
}

/// A tar of `files` under `sys/`, each padded with NULs to 4096 bytes as GNU tar
/// stores sysfs files.
fn tar_of(files: &[(String, String)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (rel, text) in files {
        let mut data = text.as_bytes().to_vec();
        data.resize(4096, 0);
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o444);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        builder.append_data(&mut header, format!("sys/{rel}"), data.as_slice()).expect("tar entry");
    }
    builder.into_inner().expect("tar")
}

#[test]
fn a_sysfs_folder_its_tar_and_its_tar_gz_give_seed_002_with_the_mana_nic() {
    let files = Files::new();
    for (rel, text) in seed_002_sysfs() {
        files.write(&format!("snap/sys/{rel}"), text.as_bytes());
    }
    let tar = tar_of(&seed_002_sysfs());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).expect("gzip");
    let gz = gz.finish().expect("gzip");
    let inputs = [files.0.path().join("snap"), files.write("m.tar", &tar), files.write("m.tar.gz", &gz)];
    for path in inputs {
        let imported = import_ok(&[Input { path: path.clone(), declared: Declared::Sysfs }], &opts(None, None));
        let t = &imported.topology;
        // eth0 is the MANA VF (1414:00ba), so it is the NIC although eth1 is listed too.
        assert_eq!(t.nic().node, Some(0), "{}", path.display());
        assert_eq!(t.nodes()[0].memory_mib, 1024);
        assert_same_tables(t, &topology("seed-002"));
    }
}

#[test]
fn several_nics_without_mana_need_a_choice() {
    let files = Files::new();
    let mut sys = seed_002_sysfs();
    sys.retain(|(rel, _)| !rel.ends_with("vendor"));
    for (rel, text) in &sys {
        files.write(&format!("s/{rel}"), text.as_bytes());
    }
    let dir = files.0.path().join("s");
    let e = import(&[Input::any(&dir)], &opts(None, None)).expect_err("ambiguous");
    assert_eq!(e.kind, ErrorKind::Missing);
    assert!(e.message.contains("eth0 on node 0") && e.message.contains("eth1 on node 1"), "{e}");
    let o = ImportOptions { nic_if: Some("eth1".to_owned()), ..ImportOptions::default() };
    assert_eq!(import(&[Input::any(&dir)], &o).map(|i| i.topology.nic().node), Ok(Some(1)));
}

const SEED_002_LSCPU: &str = "\
$ lscpu
CPU(s):              8
On-line CPU(s) list: 0-7
Thread(s) per core:  2
Core(s) per socket:  2
Socket(s):           2
NUMA node(s):        2
NUMA node0 CPU(s):   0-3
NUMA node1 CPU(s):   4-7
$ numactl -H
available: 2 nodes (0-1)
node 0 cpus: 0 1 2 3
node 0 size: 512 MB
node 0 free: 100 MB
node 1 cpus: 4 5 6 7
node 1 size: 512 MB
node 1 free: 100 MB
node distances:
node   0   1
  0:  10  20
  1:  20  10
$ cat /sys/class/net/eth0/device/numa_node
0
";

#[test]
fn plain_lscpu_numbering_follows_the_nodes_and_is_assumed_only_when_both_fit() {
    let imported = import_text(SEED_002_LSCPU, None).expect("seed 002");
    assert_eq!(imported.topology.numbering(), CpuNumbering::Qemu);
    assert!(imported.notes.is_empty(), "{:?}", imported.notes);
    assert_same_tables(&imported.topology, &topology("seed-002"));
    let one_node = "CPU(s): 4\nThread(s) per core: 2\nCore(s) per socket: 2\nSocket(s): 1\nNUMA node0 CPU(s): 0-3\n";
    let imported = import_text(one_node, Some(NicNode::Node(0))).expect("one node");
    assert_eq!(imported.topology.numbering(), CpuNumbering::LinuxSmtOuter);
    assert!(imported.notes.iter().any(|n| n.contains("assumed linux-smt-outer")), "{:?}", imported.notes);
}

#[test]
fn cpus_in_two_nodes_are_one_error_naming_the_later_line() {
    let text = SEED_002_LSCPU.replace("node 1 cpus: 4 5 6 7", "node 1 cpus: 3 4 5 6 7");
    let e = error_of(&text, None);
    // numactl's node 1 disagrees with lscpu's first: a contradiction at numactl's line.
    assert_eq!(e.kind, ErrorKind::Contradiction);
    assert_eq!(e.origin.line, Some(15), "{e}");
    let numactl_only = "CPU(s): 8\nThread(s) per core: 2\nCore(s) per socket: 2\nSocket(s): 2\n\
                        node 0 cpus: 0 1 2 3\nnode 1 cpus: 2 3 4 5 6 7\n";
    let e = error_of(numactl_only, Some(NicNode::Node(0)));
    assert_eq!((e.kind, e.origin.line), (ErrorKind::Contradiction, Some(6)), "{e}");
    assert!(e.message.contains("CPUs 2-3 are in node 1 here and in node 0"), "{e}");
}

#[test]
fn a_node_count_that_disagrees_with_the_distance_matrix_is_a_contradiction() {
    let text = SEED_002_LSCPU
        .replace("available: 2 nodes (0-1)\n", "")
        .replace("NUMA node(s):        2", "NUMA node(s):        3");
    let e = error_of(&text, None);
    assert_eq!(e.kind, ErrorKind::Contradiction, "{e}");
    assert!(e.message.contains("the distance matrix has 2 rows") && e.message.contains(":7 announces 3"), "{e}");
    // The matrix's own header names three nodes but has two rows: cut short.
    let text = SEED_002_LSCPU.replace("node   0   1\n", "node   0   1   2\n");
    let e = error_of(&text, None);
    assert_eq!(e.kind, ErrorKind::Truncated, "{e}");
}

#[test]
fn a_truncated_paste_is_refused_at_the_line_where_it_stops() {
    let cut = &SEED_002_LSCPU[..SEED_002_LSCPU.find("  1:  20  10").expect("row 1")];
    let e = error_of(cut, Some(NicNode::Node(0)));
    assert_eq!(e.kind, ErrorKind::Truncated, "{e}");
    assert_eq!(e.origin.line, Some(20), "{e}");
    let cut = &SEED_002_LSCPU[..SEED_002_LSCPU.find("NUMA node1 CPU(s)").expect("node 1")];
    let e = error_of(cut, Some(NicNode::Node(0)));
    assert_eq!(e.kind, ErrorKind::Truncated, "{e}");
    assert!(e.message.contains("2 NUMA nodes announced"), "{e}");
    let row = SEED_002_LSCPU.replace("  1:  20  10", "  1:  20");
    assert_eq!(error_of(&row, None).kind, ErrorKind::Truncated);
}

#[test]
fn unknown_lines_and_commands_name_their_line() {
    let e = error_of(&SEED_002_LSCPU.replace("node 0 free: 100 MB", "hello world"), None);
    assert_eq!((e.kind, e.origin.line), (ErrorKind::Unknown, Some(14)), "{e}");
    let e = error_of(&format!("$ uname -a\nLinux\n{SEED_002_LSCPU}"), None);
    assert_eq!((e.kind, e.origin.line), (ErrorKind::Unknown, Some(1)), "{e}");
    let e = error_of("Dear reviewer,\nplease find\n", None);
    assert_eq!((e.kind, e.origin.line), (ErrorKind::Unknown, Some(1)), "{e}");
    let e = error_of(&SEED_002_LSCPU.replace("CPU(s):              8", "CPU(s):              eight"), None);
    assert_eq!((e.kind, e.origin.line), (ErrorKind::Unknown, Some(2)), "{e}");
    assert!(e.to_string().contains("paste.txt:2: CPU(s): \"eight\" is not a number"), "{e}");
}

#[test]
fn missing_nic_node_off_line_cpus_and_a_contradicting_flag_are_refused() {
    let no_nic = &SEED_002_LSCPU[..SEED_002_LSCPU.find("$ cat").expect("cat")];
    let e = error_of(no_nic, None);
    assert_eq!(e.kind, ErrorKind::Missing);
    assert!(import_text(no_nic, Some(NicNode::NoNode)).is_ok_and(|i| i.topology.nic().node.is_none()));
    let e = error_of(SEED_002_LSCPU, Some(NicNode::Node(1)));
    assert_eq!((e.kind, e.origin.line), (ErrorKind::Contradiction, Some(23)), "{e}");
    let off = SEED_002_LSCPU.replace("On-line CPU(s) list: 0-7", "On-line CPU(s) list: 0-5\nOff-line CPU(s) list: 6,7");
    let e = error_of(&off, None);
    assert_eq!((e.kind, e.origin.line), (ErrorKind::Unsupported, Some(4)), "{e}");
    let beyond = SEED_002_LSCPU.replace("\n0\n", "\n5\n");
    assert_eq!(error_of(&beyond, None).kind, ErrorKind::Contradiction);
}

#[test]
fn two_inputs_that_describe_different_machines_are_a_contradiction() {
    let files = Files::new();
    let a = files.write("a.txt", SEED_002_LSCPU.as_bytes());
    let b = files.write("b.txt", b"node distances:\nnode 0 1\n 0: 10 21\n 1: 21 10\n");
    let e = import(&[Input::any(a), Input::any(&b)], &opts(None, None)).expect_err("differs");
    assert_eq!((e.kind, e.origin.line), (ErrorKind::Contradiction, Some(2)), "{e}");
    assert!(e.origin.file.ends_with("b.txt") && e.message.contains("a.txt:19"), "{e}");
    let e = import(&[Input { path: b, declared: Declared::Hwloc }], &opts(None, None)).expect_err("not XML");
    assert!(e.message.contains("given as --from-hwloc but it holds lscpu/numactl text"), "{e}");
}

#[test]
fn broken_xml_and_archives_are_refused_with_one_line() {
    let xml = std::fs::read_to_string(fixture("hwloc-seed-002.xml")).expect("fixture");
    let files = Files::new();
    let cut = files.write("cut.xml", &xml.as_bytes()[..xml.len() / 2]);
    let e = import(&[Input::any(cut)], &opts(None, None)).expect_err("cut");
    assert_eq!(e.kind, ErrorKind::Truncated, "{e}");
    assert!(e.origin.line.is_some_and(|l| l > 10), "{e}");
    let other = files.write("svg.xml", b"<?xml version=\"1.0\"?>\n<svg/>\n");
    assert_eq!(import(&[Input::any(other)], &opts(None, None)).map_err(|e| e.kind).err(), Some(ErrorKind::Unknown));
    let tar = tar_of(&seed_002_sysfs());
    let cut = files.write("cut.tar", &tar[..tar.len() / 2 + 100]);
    let e = import(&[Input::any(cut)], &opts(None, None)).expect_err("cut tar");
    assert_eq!(e.to_string().lines().count(), 1);
    let garbage = files.write("bin", &[0xff, 0xfe, 0x00, 0x01]);
    assert_eq!(import(&[Input::any(garbage)], &opts(None, None)).map_err(|e| e.kind).err(), Some(ErrorKind::Unknown));
}

#[test]
fn odd_names_are_quoted_and_the_file_validates() {
    let o = opts(None, Some("a \"quoted\" name\\"));
    let files = Files::new();
    let path = files.write("x\"y.txt", SEED_002_LSCPU.as_bytes());
    let imported = import(&[Input::any(path)], &o).expect("imports");
    assert_eq!(imported.topology.name(), "a \"quoted\" name\\");
    assert_eq!(name_from(Path::new("/x/Seed 003 (EPYC).tar.gz")), "seed-003-epyc");
}

#[test]
fn truncated_and_garbled_inputs_give_errors_not_panics() {
    let files = Files::new();
    let mut rng = manarig_model::random::Rng::new(3);
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    for name in [
        "seed-003-lscpu-numactl.txt",
        "hwloc-seed-002.xml",
        "hwloc-this-machine.xml",
        "sysfs-this-machine.tar.gz",
        "lscpu-p-this-machine.txt",
        "lscpu-e-this-machine.txt",
    ] {
        inputs.push((name.to_owned(), std::fs::read(fixture(name)).expect("fixture")));
    }
    inputs.push(("seed-002.txt".to_owned(), SEED_002_LSCPU.as_bytes().to_vec()));
    inputs.push(("seed-002.tar".to_owned(), tar_of(&seed_002_sysfs())));
    let mut tried = 0;
    for (name, bytes) in &inputs {
        let step = (bytes.len() / 40).max(1);
        let mut variants: Vec<Vec<u8>> = (1..bytes.len()).step_by(step).map(|n| bytes[..n].to_vec()).collect();
        for _ in 0..40 {
            let mut b = bytes.clone();
            for _ in 0..(1 + rng.next_u64() % 4) {
                let i = (rng.next_u64() as usize) % b.len();
                b[i] = match rng.next_u64() % 4 {
                    0 => b'\n',
                    1 => b'9',
                    2 => b':',
                    _ => (rng.next_u64() % 256) as u8,
                };
            }
            variants.push(b);
        }
        for v in variants {
            let path = files.write(name, &v);
            for nic in [None, Some(NicNode::Node(0))] {
                if let Err(e) = import(&[Input::any(&path)], &opts(nic, None)) {
                    assert_eq!(e.to_string().lines().count(), 1, "{name}: {e}");
                }
                tried += 1;
            }
        }
    }
    assert!(tried > 500, "{tried}");
}

#[test]
fn hwloc_1_xml_with_its_distances_and_the_sectioned_lscpu_layout_are_read() {
    // hwloc 1.x: NUMANode above Socket, `distances` with latency values × latency_base.
    let v1 = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc.dtd">
<topology>
  <object type="Machine" os_index="0" cpuset="0x000000ff" nodeset="0x00000003">
    <object type="NUMANode" os_index="0" cpuset="0x0000000f" nodeset="0x00000001" local_memory="536870912">
      <object type="Socket" os_index="0" cpuset="0x0000000f">
        <object type="Core" os_index="0" cpuset="0x00000003"><object type="PU" os_index="0"/><object type="PU" os_index="1"/></object>
        <object type="Core" os_index="1" cpuset="0x0000000c"><object type="PU" os_index="2"/><object type="PU" os_index="3"/></object>
      </object>
    </object>
    <object type="NUMANode" os_index="1" cpuset="0x000000f0" nodeset="0x00000002" local_memory="536870912">
      <object type="Socket" os_index="1" cpuset="0x000000f0">
        <object type="Core" os_index="0" cpuset="0x00000030"><object type="PU" os_index="4"/><object type="PU" os_index="5"/></object>
        <object type="Core" os_index="1" cpuset="0x000000c0"><object type="PU" os_index="6"/><object type="PU" os_index="7"/></object>
      </object>
    </object>
    <distances nbobjs="2" relative_depth="1" latency_base="10.000000">
      <latency value="1.000000"/><latency value="2.000000"/><latency value="2.000000"/><latency value="1.000000"/>
    </distances>
  </object>
</topology>
"#;
    let files = Files::new();
    let path = files.write("v1.xml", v1.as_bytes());
    let imported = import_ok(&[Input { path, declared: Declared::Hwloc }], &opts(Some(NicNode::Node(0)), None));
    assert_eq!(imported.topology.distances(), [vec![10, 20], vec![20, 10]]);
    assert_same_tables(&imported.topology, &topology("seed-002"));
    // util-linux 2.38 puts the counts in sections, indented.
    let sectioned = "Architecture:            x86_64\n  CPU op-mode(s):        32-bit, 64-bit\nCPU(s):                  8\n  \
        On-line CPU(s) list:   0-7\nVendor ID:               GenuineIntel\n  Model name:            Xeon\n    \
        Thread(s) per core:  2\n    Core(s) per socket:  2\n    Socket(s):           2\nCaches (sum of all):\n  \
        L1d:                   128 KiB (4 instances)\nNUMA:\n  NUMA node(s):          2\n  NUMA node0 CPU(s):     0-3\n  \
        NUMA node1 CPU(s):     4-7\n";
    let imported = import_text(sectioned, Some(NicNode::Node(0))).expect("sectioned lscpu");
    assert_eq!(
        imported.topology.description(),
        Some("Xeon, 2 sockets x 2 cores x 2 threads, 2 NUMA nodes, NIC on node 0")
    );
    assert_same_tables(&imported.topology, &topology("seed-002"));
}

#[test]
fn a_machine_no_qemu_guest_can_number_is_refused_naming_a_cpu() {
    // Sockets interleaved (CPU 0 on socket 0, CPU 1 on socket 1, …), as some Intel boxes
    // number them: neither scheme.
    let rows: String = (0..8).map(|c| format!("{c},{},{},0\n", c % 2 * 2 + c / 4, c % 2)).collect();
    let e = error_of(&format!("# CPU,Core,Socket,Node\n{rows}"), Some(NicNode::Node(0)));
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    assert!(e.message.contains("neither QEMU's"), "{e}");
    let uneven = "# CPU,Core,Socket,Node\n0,0,0,0\n1,0,0,0\n2,1,0,0\n";
    let e = error_of(uneven, Some(NicNode::Node(0)));
    assert!(e.message.contains("the core of CPU 2 has 1 thread, the first core has 2"), "{e}");
}

/// A firmware SLIT that is not symmetric is what the user's machine has;
/// the kernel accepts it (model/src/topology/validate.rs says how), so the import keeps it
/// and the topology carries the same warning a hand-written file gets.
#[test]
fn an_asymmetric_slit_is_imported_with_the_kernels_warning() {
    let text = SEED_002_LSCPU.replace("  0:  10  20", "  0:  10  21");
    let imported = import_text(&text, Some(NicNode::Node(0))).expect("an asymmetric SLIT imports");
    assert!(imported.toml.contains("[10, 21]") && imported.toml.contains("[20, 10]"), "{}", imported.toml);
    let warnings = imported.topology.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("numa.distances[0][1]: 21 but the reverse distance is 20"), "{}", warnings[0]);
}
