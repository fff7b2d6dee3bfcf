//! `matrix` and `matrix-merge` without guests (the hidden `--dry-run`: every
//! pair answered by the model): shards merge into the unsharded matrix, specs
//! that differ refuse to merge, a missing shard or a broken topology file
//! make the run a rig error while the other pairs run, and the KCIDB output
//! passes kcidb-io's validator. The real-guest versions are in matrix_cli.rs.

mod matrix_support;

use harness::matrix::report::{MatrixReport, PairStatus};
use matrix_support::{load, manarig, repo, text};

/// Pair name → (status, first mismatch, shard), the facts a merge must keep.
fn facts(m: &MatrixReport) -> Vec<(String, PairStatus, Option<String>, u32)> {
    m.pairs.iter().map(|r| (r.pair.name.clone(), r.status, r.first_mismatch.clone(), r.pair.shard)).collect()
}

/// The summary's table rows without the times.
fn table_rows(summary: &str) -> Vec<String> {
    summary
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("vCPUs"))
        .map(|l| l.split(' ').filter(|w| *w != "s" && w.parse::<f64>().is_err()).collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn sharded_dry_runs_merge_into_the_unsharded_matrix_and_its_kcidb_is_valid() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = |n: &str| tmp.path().join(n).display().to_string();
    let whole = manarig(&[
        "matrix",
        "--dry-run",
        "topologies",
        "--kernel",
        "6.1,6.12-min,7.x",
        "--out",
        &out("whole"),
        "--run-id",
        "t",
    ]);
    assert_eq!(whole.status.code(), Some(0), "{}", text(&whole));
    for k in 1..=3 {
        let o = manarig(&[
            "matrix",
            "--dry-run",
            "topologies",
            "--kernel",
            "6.1,6.12-min,7.x",
            "--shard",
            &format!("{k}/3"),
            "--out",
            &out(&format!("shards/{k}")),
            "--run-id",
            "t",
            "--format",
            "json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let doc = MatrixReport::from_json(&String::from_utf8_lossy(&o.stdout)).expect("--format json is the document");
        assert!(doc.pairs.iter().all(|p| p.pair.shard == k));
    }
    let merged = manarig(&["matrix-merge", &out("shards"), "--out", &out("merged"), "--check-kcidb"]);
    assert_eq!(merged.status.code(), Some(0), "{}", text(&merged));
    assert!(String::from_utf8_lossy(&merged.stderr).contains("valid KCIDB v5.3"), "{}", text(&merged));
    let (w, m) = (load(&tmp.path().join("whole/matrix.json")), load(&tmp.path().join("merged/matrix.json")));
    assert_eq!(w.header.spec, {
        let mut s = m.header.spec.clone();
        s.shards = 1;
        s
    });
    let strip_shard = |v: Vec<(String, PairStatus, Option<String>, u32)>| {
        v.into_iter().map(|(n, s, f, _)| (n, s, f)).collect::<Vec<_>>()
    };
    assert_eq!(strip_shard(facts(&w)), strip_shard(facts(&m)));
    assert_eq!(m.header.shards.len(), 3);
    assert!(m.header.complete);
    let summary = |d: &str| std::fs::read_to_string(tmp.path().join(d).join("summary.md")).expect("summary.md");
    assert_eq!(table_rows(&summary("whole")), table_rows(&summary("merged")));
    assert!(summary("merged").contains("| 3/3 |"), "each shard's cost:\n{}", summary("merged"));
    // Every format is there, and the verdict documents keep their schema.
    for f in ["summary.md", "junit.xml", "results.ktap", "matrix.json", "kcidb.json"] {
        assert!(tmp.path().join("merged").join(f).is_file(), "{f}");
    }
    let ktap = std::fs::read_to_string(tmp.path().join("merged/results.ktap")).expect("ktap");
    assert!(ktap.starts_with(&format!("KTAP version 1\n1..{}\n", m.pairs.len())), "{ktap}");
    let junit = std::fs::read_to_string(tmp.path().join("merged/junit.xml")).expect("junit");
    assert_eq!(junit.matches("<testsuite ").count(), 3, "one testsuite per kernel");
}

#[test]
fn the_kcidb_validator_refuses_a_document_that_breaks_the_schema() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let o = manarig(&["matrix", "--dry-run", "topologies/seed-002.toml", "--kernel", "6.12-min", "--format", "kcidb"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("KCIDB JSON");
    assert_eq!(doc["version"], serde_json::json!({"major": 5, "minor": 3}));
    let test = &doc["tests"][0];
    assert_eq!((test["path"].as_str(), test["status"].as_str()), (Some("manarig.seed-002"), Some("PASS")));
    let cache = harness::provision::cache_dir(None).expect("cache");
    let validator = harness::matrix::kcidb_check::validator(&cache, &mut |l| eprintln!("{l}")).expect("kcidb-io");
    let good = tmp.path().join("good.json");
    std::fs::write(&good, &o.stdout).expect("write");
    validator.check(&good).expect("valid");
    doc["tests"][0]["status"] = serde_json::json!("GREAT");
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, doc.to_string()).expect("write");
    let e = validator.check(&bad).expect_err("an unknown status");
    assert!(e.to_string().contains("tests/0/status"), "{e}");
}

#[test]
fn shards_of_different_matrices_or_the_same_shard_twice_refuse_to_merge() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = |name: &str, extra: &[&str]| {
        let dir = tmp.path().join(name).display().to_string();
        let mut args =
            vec!["matrix", "--dry-run", "topologies/seed-002.toml", "topologies/r24-no-smt.toml", "--out", &dir];
        args.extend_from_slice(extra);
        let o = manarig(&args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        tmp.path().join(name).join("matrix.json").display().to_string()
    };
    let a = run("a", &["--shard", "1/2"]);
    let b = run("b", &["--shard", "2/3"]);
    let c = run("c", &["--shard", "2/2", "--kernel", "6.1"]);
    let o = manarig(&["matrix-merge", &a, &b]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("split into 2 vs 3 shards"), "{}", text(&o));
    let o = manarig(&["matrix-merge", &a, &c]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("kernels differ"), "{}", text(&o));
    // A dry run and a boot of the same matrix do not merge either.
    let mut boot = load(std::path::Path::new(&b));
    boot.header.mode = "boot".into();
    let boot_path = tmp.path().join("boot.json");
    std::fs::write(&boot_path, serde_json::to_string(&boot).expect("JSON")).expect("write");
    let dry = run("d", &["--shard", "1/3"]);
    let o = manarig(&["matrix-merge", &dry, &boot_path.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the other as \"boot\""), "{}", text(&o));
    let o = manarig(&["matrix-merge", &a, &a]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("shard 1/2 is in both"), "{}", text(&o));
    // A missing shard: the merge says so and exits 2; its pairs are NOT RUN.
    let o = manarig(&["matrix-merge", &a]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let summary = String::from_utf8_lossy(&o.stdout);
    assert!(summary.contains("INCOMPLETE") && summary.contains("NOT RUN"), "{summary}");
    assert!(summary.contains("| 2/2 |") && summary.contains("not in this document"), "{summary}");
}

/// A folder `DIR/topologies` with seed 002 and `r24-broken.toml` (r24-no-smt with
/// `sockets = 0`, which does not load).
fn seed_002_and_a_broken_file(tmp: &std::path::Path) -> std::path::PathBuf {
    let dir = tmp.join("topologies");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::copy(repo().join("topologies/seed-002.toml"), dir.join("seed-002.toml")).expect("copy");
    let broken = std::fs::read_to_string(repo().join("topologies/r24-no-smt.toml"))
        .expect("r24")
        .replace("sockets = 2", "sockets = 0");
    std::fs::write(dir.join("r24-broken.toml"), broken).expect("write");
    dir
}

#[test]
fn a_broken_topology_file_is_a_rig_error_with_its_one_line_error_and_the_others_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = seed_002_and_a_broken_file(tmp.path());
    let out = tmp.path().join("out");
    let o = manarig(&[
        "matrix",
        "--dry-run",
        &dir.display().to_string(),
        "--kernel",
        "6.12-min,6.1",
        "--out",
        &out.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let m = load(&out.join("matrix.json"));
    let status: Vec<(String, PairStatus)> = m.pairs.iter().map(|r| (r.pair.name.clone(), r.status)).collect();
    assert_eq!(
        status,
        [
            ("r24-broken@6.12-min".into(), PairStatus::RigError),
            ("r24-broken@6.1".into(), PairStatus::RigError),
            ("seed-002@6.12-min".into(), PairStatus::Pass),
            ("seed-002@6.1".into(), PairStatus::Pass),
        ]
    );
    let error = m.pairs[0].error.clone().expect("the file's error");
    assert!(error.contains("r24-broken.toml") && error.contains("sockets") && !error.contains('\n'), "{error}");
    let summary = String::from_utf8_lossy(&o.stdout);
    assert!(summary.contains("**ERROR**") && summary.contains("broken file"), "{summary}");
}

#[test]
fn jobs_beyond_the_tcg_vcpu_limit_are_lowered_with_a_note() {
    let o = manarig(&[
        "matrix",
        "--dry-run",
        "topologies/seed-003-epyc-7763.toml",
        "topologies/seed-001-azure-128.toml",
        "--kernel",
        "6.12-min",
        "--jobs",
        "4",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 3 {
        // 256 + 128 vCPUs do not fit in 128 per host core on 2 cores.
        assert!(String::from_utf8_lossy(&o.stderr).contains("--jobs 4 lowered to 1"), "{}", text(&o));
    }
}

/// The files of a folder, by name, with their contents.
fn files_of(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("folder")
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).expect("file")))
        .collect();
    out.sort();
    out
}

#[test]
fn random_topologies_are_the_same_for_the_same_seed_and_their_shards_merge_into_the_unsharded_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = |n: &str| tmp.path().join(n).display().to_string();
    let random = |o: &str, extra: &[&str]| {
        let seed = if extra.contains(&"--seed") { [].as_slice() } else { ["--seed", "7"].as_slice() };
        let mut args =
            vec!["matrix", "--dry-run", "--random", "20", "--kernel", "6.12-min", "--out", o, "--run-id", "t"];
        args.extend_from_slice(seed);
        args.extend_from_slice(extra);
        manarig(&args)
    };
    for run in ["a", "b"] {
        let o = random(&out(run), &[]);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    }
    let (a, b) = (files_of(&tmp.path().join("a/random")), files_of(&tmp.path().join("b/random")));
    assert_eq!(a.len(), 20);
    assert_eq!(a, b, "same seed, same topologies");
    let (ma, mb) = (load(&tmp.path().join("a/matrix.json")), load(&tmp.path().join("b/matrix.json")));
    assert_eq!(ma.header.spec, mb.header.spec, "the spec does not depend on --out");
    assert_eq!(facts(&ma), facts(&mb));
    let r = ma.header.spec.random.expect("the spec records --random");
    assert_eq!((r.seed, r.count, r.max_cpus), (7, 20, 32));
    assert!(ma.header.spec.inputs.iter().all(|i| i.path.starts_with("random/random-s7-")));
    for k in 1..=2 {
        let o = random(&out(&format!("shards/{k}")), &["--shard", &format!("{k}/2")]);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    }
    let merged = manarig(&["matrix-merge", &out("shards"), "--out", &out("merged")]);
    assert!(matches!(merged.status.code(), Some(0 | 1)), "{}", text(&merged));
    let m = load(&tmp.path().join("merged/matrix.json"));
    assert_eq!(ma.header.spec, {
        let mut s = m.header.spec.clone();
        s.shards = 1;
        s
    });
    let strip = |v: Vec<(String, PairStatus, Option<String>, u32)>| {
        v.into_iter().map(|(n, s, f, _)| (n, s, f)).collect::<Vec<_>>()
    };
    assert_eq!(strip(facts(&ma)), strip(facts(&m)));
    // Another seed is another matrix.
    let o = random(&out("other"), &["--seed", "8"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    assert_ne!(files_of(&tmp.path().join("other/random")), a);
    let no_out = manarig(&["matrix", "--dry-run", "--random", "2", "--kernel", "6.12-min"]);
    assert_eq!(no_out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_out.stderr).contains("give --out"), "{}", text(&no_out));
}

#[test]
fn the_properties_oracle_passes_6_12_on_the_seeds_and_fails_balance_for_6_1_on_seed_002() {
    let seeds: Vec<String> = std::fs::read_dir(repo().join("topologies"))
        .expect("topologies")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("seed-") && n.ends_with(".toml"))
        .map(|n| format!("topologies/{n}"))
        .collect();
    assert!(seeds.len() >= 4);
    let mut args: Vec<&str> =
        vec!["matrix", "--dry-run", "--oracle", "properties", "--kernel", "6.12-min", "--format", "json"];
    args.extend(seeds.iter().map(String::as_str));
    let o = manarig(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc = MatrixReport::from_json(&String::from_utf8_lossy(&o.stdout)).expect("json");
    assert_eq!(doc.header.spec.oracle, "properties");
    let v = doc.pairs[0].verdict().expect("a verdict");
    let names: Vec<&str> = v.checks.iter().map(|c| c.name.as_str()).collect();
    assert!(names.contains(&"property_balance") && names.contains(&"property_locality"), "{names:?}");
    assert!(!names.contains(&"vector_count") && !names.contains(&"mana_q0"), "no model checks: {names:?}");
    assert!(v.checks.iter().any(|c| c.name == "property_balance" && c.message.contains("source: ")));

    let o = manarig(&[
        "matrix",
        "--dry-run",
        "--oracle",
        "properties",
        "--kernel",
        "6.1",
        "topologies/seed-002.toml",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let doc = MatrixReport::from_json(&String::from_utf8_lossy(&o.stdout)).expect("json");
    let failed: Vec<&str> = doc.pairs[0].verdict().expect("verdict").failures().map(|c| c.name.as_str()).collect();
    assert_eq!(failed, ["property_balance"]);
    assert!(doc.pairs[0].first_mismatch.as_deref().unwrap_or("").starts_with("property_balance: "));

    // Without --oracle the pinned kernels are judged by the model.
    let o = manarig(&["matrix", "--dry-run", "--kernel", "6.1", "topologies/seed-002.toml", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc = MatrixReport::from_json(&String::from_utf8_lossy(&o.stdout)).expect("json");
    assert_eq!(doc.header.spec.oracle, "auto");
    assert!(doc.pairs[0].verdict().expect("verdict").checks.iter().any(|c| c.name == "vector_count"));
}

#[test]
fn random_pairs_the_oracle_fails_are_shrunk_into_small_topology_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let o = manarig(&[
        "matrix",
        "--dry-run",
        "--random",
        "20",
        "--seed",
        "7",
        "--kernel",
        "6.1",
        "--oracle",
        "properties",
        "--out",
        &out.display().to_string(),
        "--run-id",
        "t",
    ]);
    assert_eq!(o.status.code(), Some(1), "6.1's spreading breaks the properties: {}", text(&o));
    let doc = load(&out.join("matrix.json"));
    let found = &doc.header.shards[0].found;
    let failed = doc.pairs.iter().filter(|p| p.status == PairStatus::Fail).count();
    assert!(failed > 0 && found.len() == failed, "{found:#?}");
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary");
    for f in found {
        assert!(summary.contains(&f.file), "{summary}");
        let path = out.join(&f.file);
        let t = harness::topology::Topology::load(&path).expect("a valid topology file");
        assert!(t.ncpu() <= 8 && t.nodes().len() <= 4, "{}: {} CPUs", f.file, t.ncpu());
        assert!(!f.steps.is_empty());
        let text_of = std::fs::read_to_string(&path).expect("file");
        assert!(text_of.contains("verdict = \"mismatch\"") && text_of.contains("[source]"), "{text_of}");
        // The shrunk machine still disagrees.
        let again =
            manarig(&["matrix", "--dry-run", "--oracle", "properties", "--kernel", "6.1", &path.display().to_string()]);
        assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    }
    assert!(!out.join("found/.tries").exists());
}

#[test]
fn matrix_and_merge_draw_every_pair_failures_first_without_changing_the_exit_code() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = seed_002_and_a_broken_file(tmp.path());
    let p = |n: &str| tmp.path().join(n).display().to_string();
    let dir = dir.display().to_string();
    // The properties oracle fails 6.1 on seed 002 (balance); the broken file is a rig error.
    let base = ["matrix", "--dry-run", "--oracle", "properties", "--kernel", "6.12-min,6.1", &dir];
    let plain = manarig(&base);
    let mut args = base.to_vec();
    let (html, svgs) = (p("m.html"), p("svg"));
    args.extend(["--html", &html, "--svg", &svgs]);
    let drawn = manarig(&args);
    assert_eq!(plain.status.code(), Some(2), "{}", text(&plain));
    assert_eq!(drawn.status.code(), plain.status.code(), "pictures do not change the exit code: {}", text(&drawn));
    let page = std::fs::read_to_string(&html).expect("the HTML report");
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s} in the report"));
    assert!(
        at("FAIL</span> seed-002@6.1<") < at("ERROR</span> r24-broken@6.12-min")
            && at("ERROR</span> r24-broken@6.1<") < at("PASS</span> seed-002@6.12-min")
    );
    assert!(page.contains("first mismatch: property_balance: "), "the failure's reason");
    assert_eq!(page.matches("<svg").count(), 2, "seed 002's two pairs; the broken file has no picture");
    assert!(
        page.contains("no picture: the topology file did not load when the matrix ran: ") && page.contains("sockets")
    );
    let mut files: Vec<String> = std::fs::read_dir(&svgs)
        .expect("the SVG folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["seed-002@6.1.svg", "seed-002@6.12-min.svg"]);
    let one = std::fs::read_to_string(tmp.path().join("svg/seed-002@6.1.svg")).expect("svg");
    let doc = roxmltree::Document::parse(&one).expect("an SVG document");
    assert_eq!(doc.descendants().filter(|n| n.attribute("class") == Some("cpu")).count(), 8);
    assert!(text(&drawn).contains("no picture of r24-broken@6.1: "), "{}", text(&drawn));

    // The shards' documents merge into the same report.
    for k in 1..=2 {
        let mut args = base.to_vec();
        let (shard, out) = (format!("{k}/2"), p(&format!("shard-{k}")));
        args.extend(["--shard", &shard, "--out", &out, "--run-id", "t"]);
        let _ = manarig(&args);
    }
    let merged_html = p("merged.html");
    let merged = manarig(&["matrix-merge", &p("shard-1"), &p("shard-2"), "--html", &merged_html]);
    assert_eq!(merged.status.code(), Some(2), "{}", text(&merged));
    let page = std::fs::read_to_string(&merged_html).expect("the merged report");
    assert_eq!(page.matches("<svg").count(), 2);
    assert!(page.find("FAIL</span> seed-002@6.1<") < page.find("PASS</span> seed-002@6.12-min"));

    // A report that cannot be written is refused before anything runs.
    let o = manarig(&["matrix", "--dry-run", &dir, "--html", &p("no/such/dir/m.html")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--html") && text(&o).contains("no folder"), "{}", text(&o));
}

/// `matrix --inject SPEC`: the injections are part of the spec (in the JSON
/// and the summary), shards with other injections refuse to merge, another
/// oracle than the model is refused (a run with injections is judged by
/// driver_survived) and a bad spec is one line, exit 2, nothing run.
#[test]
fn injections_are_part_of_the_matrix_spec_and_shards_with_others_refuse_to_merge() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = |name: &str, extra: &[&str]| {
        let dir = tmp.path().join(name).display().to_string();
        let mut args =
            vec!["matrix", "--dry-run", "topologies/seed-000-4ch.toml", "--kernel", "6.12-min,7.x", "--out", &dir];
        args.extend_from_slice(extra);
        manarig(&args)
    };
    let a = run("a", &["--shard", "1/2", "--inject", "reset@5", "--inject", "link-down@2"]);
    assert_eq!(a.status.code(), Some(0), "{}", text(&a));
    let doc = load(&tmp.path().join("a/matrix.json"));
    assert_eq!(doc.header.spec.inject, ["reset@5", "link-down@2"]);
    let summary = std::fs::read_to_string(tmp.path().join("a/summary.md")).expect("summary.md");
    assert!(summary.contains("Fault injection in every pair: `reset@5`, `link-down@2`"), "{summary}");
    let b = run("b", &["--shard", "2/2", "--inject", "reset@6"]);
    assert_eq!(b.status.code(), Some(0), "{}", text(&b));
    let paths = ["a", "b"].map(|n| tmp.path().join(n).join("matrix.json").display().to_string());
    let o = manarig(&["matrix-merge", &paths[0], &paths[1]]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(r#"injections differ: ["reset@5", "link-down@2"] vs ["reset@6"]"#),
        "{}",
        text(&o)
    );
    let o = run("c", &["--inject", "reset@5", "--oracle", "properties"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--inject: each pair is judged by driver_survived"),
        "{}",
        text(&o)
    );
    let o = run("d", &["--inject", "stall@1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown fault \"stall\" (one of: status,"), "{}", text(&o));
    assert!(!tmp.path().join("d").exists(), "nothing run");
}
