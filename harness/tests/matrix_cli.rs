//! `matrix` and `matrix-merge` on real guests (QEMU, the minimal 6.12 kernel
//! and README's worked example built from `--source` + `--patches`; both built
//! by `cargo xtask test` first): two shards merge into what the unsharded
//! run gives, with valid KCIDB carrying the patch set; Ctrl-C stops the
//! guests and leaves a partial summary marked incomplete.

mod matrix_support;

use harness::matrix::report::{MatrixReport, PairStatus};
use matrix_support::{load, manarig, repo, text};
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Per pair: status and every vector's name and smp_affinity_list.
/// A pair's name, status, and (vector, smp_affinity_list) rows.
type PairOutcome = (String, PairStatus, Vec<(String, String)>);

fn outcome(m: &MatrixReport) -> Vec<PairOutcome> {
    m.pairs
        .iter()
        .map(|r| {
            let rows = r.verdict().map_or_else(Vec::new, |v| {
                v.vectors
                    .iter()
                    .map(|row| {
                        (
                            row.name.clone(),
                            row.observed.as_ref().map(|o| o.smp_affinity_list.to_cpulist()).unwrap_or_default(),
                        )
                    })
                    .collect()
            });
            (r.pair.name.clone(), r.status, rows)
        })
        .collect()
}

const MATRIX: [&str; 9] = [
    "matrix",
    "topologies/seed-002.toml",
    "topologies/r24-no-smt.toml",
    "--kernel",
    "6.12-min",
    "--source",
    "debian:linux-source-6.12",
    "--patches",
    "examples/patches/revert-irq-setup",
];

#[test]
fn two_shards_on_real_guests_merge_into_the_unsharded_run_with_valid_kcidb() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = |n: &str| tmp.path().join(n).display().to_string();
    for k in 1..=2 {
        let mut args = MATRIX.to_vec();
        let (shard, out) = (format!("{k}/2"), dir(&format!("shard{k}")));
        args.extend(["--shard", &shard, "--out", &out, "--run-id", "vm", "--jobs", "2"]);
        let o = manarig(&args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let mut args = MATRIX.to_vec();
    let whole = dir("whole");
    args.extend(["--out", &whole, "--run-id", "vm"]);
    let o = manarig(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let merged = dir("merged");
    let o = manarig(&[
        "matrix-merge",
        &dir("shard1"),
        &dir("shard2"),
        "--out",
        &merged,
        "--check-kcidb",
        "--format",
        "junit",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("<testsuite name=\"patched\""), "{}", text(&o));
    let (w, m) = (load(&tmp.path().join("whole/matrix.json")), load(&tmp.path().join("merged/matrix.json")));
    assert_eq!(m.pairs.len(), 4);
    assert_eq!(outcome(&w), outcome(&m), "the union of the shards is the unsharded run");
    assert!(m.pairs.iter().all(|r| r.verdict().is_some_and(|v| v.run.accel.starts_with("tcg"))), "real guests ran");
    // The patched kernel is README's worked example: judged by the 6.3 model.
    let patched = m.header.kernels.iter().find(|k| k.label == "patched").expect("patched kernel facts");
    assert_eq!(patched.model.as_deref(), Some("6.3"));

    // KCIDB: the patched checkout carries the patch file and the patch set's hash.
    let kcidb: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("merged/kcidb.json")).expect("kcidb.json"))
            .expect("JSON");
    let spec = m.header.spec.kernels.iter().find(|k| k.label == "patched").expect("patched");
    let hash = spec.patchset.as_ref().expect("a patch set").hash.clone();
    let checkout =
        kcidb["checkouts"].as_array().expect("checkouts").iter().find(|c| c["patchset_hash"] == hash.as_str()).cloned();
    let checkout = checkout.expect("a checkout with the patch set's hash");
    assert!(checkout["patchset_files"][0]["name"].as_str().is_some_and(|n| n.starts_with("0001-")), "{checkout}");
    assert_eq!(kcidb["builds"].as_array().map(Vec::len), Some(2));
    let pair_tests = kcidb["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .filter(|t| t["path"].as_str().is_some_and(|p| p.matches('.').count() == 1));
    assert_eq!(pair_tests.filter(|t| t["status"] == "PASS").count(), 4);
}

#[test]
fn ctrl_c_stops_the_guests_and_writes_a_partial_summary_marked_incomplete() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_manarig"))
        .current_dir(repo())
        .args([
            "matrix",
            "topologies/seed-002.toml",
            "topologies/r24-no-smt.toml",
            "--kernel",
            "6.12-min",
            "--jobs",
            "1",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("manarig starts");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            all.push(line);
        }
        all
    });
    // Wait (bounded) for the first guest to start, then Ctrl-C.
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.starts_with("matrix: start ") => break,
            Ok(_) => {}
            Err(e) => {
                let _ = child.kill();
                panic!("no pair started: {e}");
            }
        }
    }
    // SAFETY: kill(2) on our own child, not yet reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().expect("stdout"), &mut stdout).expect("stdout");
    let status = child.wait().expect("manarig ends");
    let lines = reader.join().expect("reader");
    assert_eq!(status.code(), Some(2), "{}\n{stdout}", lines.join("\n"));
    assert!(lines.iter().any(|l| l.contains("stopping")), "{}", lines.join("\n"));
    assert!(stdout.contains("INCOMPLETE") && stdout.contains("NOT RUN"), "{stdout}");
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary.md written");
    assert!(summary.contains("INCOMPLETE"), "{summary}");
    let m = load(&out.join("matrix.json"));
    assert!(!m.header.complete);
    assert!(m.pairs.iter().any(|r| r.status == PairStatus::NotRun), "{:#?}", m.pairs);
}

/// `--oracle baseline`: seed 002 on the minimal 6.12 kernel against
/// `build:79684e84` (the 6.3-style hop-aware one-CPU-per-IRQ spread, built by
/// `cargo xtask test` first): the 8 queue vectors move from single CPUs to
/// sibling groups, the reviewers' numbers are in the summary and the JSON,
/// and nothing is worse than the baseline.
///
/// On the guest, the cores whose siblings both took an IRQ stay at 4 on 6.12
/// (the model's `baseline` tests say 4 → 0): the numbers count each vector's
/// *effective* CPU, and x86's vector allocator puts the second IRQ of a
/// two-CPU mask on the idler sibling (`mana_q2` on `0-1` fires on CPU 1 while
/// `mana_q0` has CPU 0), where the model takes the mask's first CPU.
#[test]
fn the_baseline_oracle_reports_the_moved_vectors_of_seed_002_against_a_build() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let o = manarig(&[
        "matrix",
        "topologies/seed-002.toml",
        "--kernel",
        "6.12-min",
        "--oracle",
        "baseline",
        "--baseline",
        "build:79684e84",
        "--out",
        &out.display().to_string(),
        "--run-id",
        "t",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc = load(&out.join("matrix.json"));
    assert!(doc.header.spec.oracle.starts_with("baseline build:79684e84 = "), "{}", doc.header.spec.oracle);
    let pair = &doc.pairs[0];
    let b = pair.baseline.as_ref().expect("the comparison is in the JSON");
    let moves: Vec<(Option<u32>, String, String)> = b
        .moved
        .iter()
        .map(|m| {
            let cpus = |p: &Option<harness::verdict::baseline::Placement>| {
                p.as_ref().map(|p| p.cpus.to_cpulist()).unwrap_or_default()
            };
            (m.msix_index, cpus(&m.before), cpus(&m.after))
        })
        .collect();
    let want: Vec<(Option<u32>, String, String)> = [
        (1, "1", "0-1"),
        (2, "2", "2-3"),
        (3, "3", "0-1"),
        (4, "4", "2-3"),
        (5, "5", "4-5"),
        (6, "6", "6-7"),
        (7, "7", "4-5"),
        (8, "0", "6-7"),
    ]
    .iter()
    .map(|(i, x, y)| (Some(*i), (*x).to_owned(), (*y).to_owned()))
    .collect();
    assert_eq!(moves, want);
    assert_eq!(b.before.cores_with_busy_siblings, 4);
    assert!(b.after.cores_with_busy_siblings <= b.before.cores_with_busy_siblings);
    assert_eq!((b.before.outside_nic_node, b.after.outside_nic_node), (4, 4));
    let checks: Vec<&str> = pair.verdict().expect("verdict").checks.iter().map(|c| c.name.as_str()).collect();
    assert!(checks.contains(&"baseline_busy_siblings") && checks.contains(&"queue_irqs"), "{checks:?}");
    assert!(!checks.contains(&"mana_q0"), "no model checks: {checks:?}");
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary");
    assert!(summary.contains("## Against the baseline") && summary.contains("vectors moved: 8"), "{summary}");
}

/// `matrix --inject` on a real guest: the pair's device refuses
/// MANA_CONFIG_VPORT_TX, the pair is judged by driver_survived (the driver
/// fails `ip link set up` and still unloads: PASS), and the summary names
/// the injection.
#[test]
fn an_injection_reaches_a_real_pair_which_is_judged_by_driver_survived() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("m").display().to_string();
    let o = manarig(&[
        "matrix",
        "topologies/seed-000-4ch.toml",
        "--kernel",
        "6.12-min",
        "--inject",
        "status:config_vport=0xc000000d",
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = load(&tmp.path().join("m/matrix.json"));
    assert_eq!(m.header.spec.inject, ["status:config_vport_tx=0xc000000d"]);
    let verdict = m.pairs[0].verdict().expect("judged");
    let survived = verdict.checks.iter().find(|c| c.name == "driver_survived").expect("driver_survived");
    assert!(survived.message.contains("with status:config_vport_tx=0xc000000d: the probe gave eth0"), "{survived:?}");
    let summary = std::fs::read_to_string(tmp.path().join("m/summary.md")).expect("summary.md");
    assert!(summary.contains("Fault injection in every pair: `status:config_vport_tx=0xc000000d`"), "{summary}");
}

/// `matrix --random` on 7.x meets a machine its kernel does not bring up
/// (seed 1's third machine: 56 CPUs in 8 uneven nodes, Debian 7.3.4's timer
/// migration hierarchy) and shrinks it to a topology file that expects a
/// kernel finding in the kernel's own words.
#[test]
fn slow_a_random_machine_7_x_does_not_bring_up_is_shrunk_into_a_kernel_finding() {
    let out = tempfile::tempdir().expect("tempdir");
    let o = out.path().display().to_string();
    let run = manarig(&[
        "matrix",
        "--random",
        "3",
        "--seed",
        "1",
        "--max-cpus",
        "64",
        "--kernel",
        "7.x",
        "--jobs",
        "1",
        "--out",
        &o,
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "random machines fail on 7.x: {stderr}");
    let found = out.path().join("found/random-s1-2-min.toml");
    let text = std::fs::read_to_string(&found).unwrap_or_else(|e| panic!("{}: {e}\n{stderr}", found.display()));
    assert!(text.contains("verdict = \"kernel-finding\""), "{text}");
    assert!(text.contains("never came up") && text.contains("timer_migration.c"), "{text}");
    let t = harness::topology::Topology::from_toml_str(&found.display().to_string(), &text).expect("a valid file");
    assert!(t.ncpu() <= 56, "shrunk: {} CPUs", t.ncpu());
}

/// `matrix --arch x86_64,arm64`: the arch axis on real guests. Seed 002 on
/// Debian's 6.12 boots once as an x86 guest and once as an arm64 one (QEMU's
/// virt machine, Debian's arm64 cloud kernel); each pair names its
/// architecture, passes, and is a test under its architecture's KCIDB build,
/// which KernelCI's validator takes (`--check-kcidb`).
#[test]
fn slow_a_tiny_matrix_runs_each_pair_on_x86_64_and_on_arm64() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out").display().to_string();
    let o = manarig(&[
        "matrix",
        "topologies/seed-002.toml",
        "--kernel",
        "6.12",
        "--arch",
        "x86_64,arm64",
        "--out",
        &out,
        "--run-id",
        "vm",
        "--check-kcidb",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let m = load(&tmp.path().join("out/matrix.json"));
    let got: Vec<(String, PairStatus, String)> = m
        .pairs
        .iter()
        .map(|r| (r.pair.name.clone(), r.status, r.verdict().map(|v| v.run.kernel_release.clone()).unwrap_or_default()))
        .collect();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!((got[0].0.as_str(), got[0].1), ("seed-002@6.12@x86_64", PairStatus::Pass), "{got:?}");
    assert_eq!((got[1].0.as_str(), got[1].1), ("seed-002@6.12@arm64", PairStatus::Pass), "{got:?}");
    assert!(got[0].2.ends_with("-cloud-amd64") && got[1].2.ends_with("-cloud-arm64"), "{got:?}");
    let kcidb: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("out/kcidb.json")).expect("kcidb.json"))
            .expect("JSON");
    let archs: Vec<&str> =
        kcidb["builds"].as_array().expect("builds").iter().filter_map(|b| b["architecture"].as_str()).collect();
    assert_eq!(archs, ["x86_64", "arm64"]);
}
