//! `run --svg/--html` and `compare --svg/--html` when the run ends in a rig error before any
//! guest boots (no QEMU needed): the topology is still drawn, marked no guest data, and the
//! exit code stays 2.

mod support;

use support::manarig;

fn cpus_in(svg: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is XML");
    doc.descendants().filter(|n| n.attribute("class") == Some("cpu")).count()
}

#[test]
fn a_rig_error_before_the_report_still_draws_the_topology_and_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let (svg, html) = (dir.path().join("run.svg"), dir.path().join("run.html"));
    let args = [
        "run",
        "topologies/seed-002.toml",
        "--kernel",
        "build:0000dead",
        "--cache-dir",
        cache.to_str().expect("utf-8"),
        "--svg",
        svg.to_str().expect("utf-8"),
        "--html",
        html.to_str().expect("utf-8"),
    ];
    let (code, _, err) = manarig(&args);
    assert_eq!(code, 2, "{err}");
    let svg = std::fs::read_to_string(&svg).expect("the SVG was written");
    assert_eq!(cpus_in(&svg), 8);
    assert!(svg.contains("NO GUEST DATA") && svg.contains("seed-002@build:0000dead"), "{svg}");
    let html = std::fs::read_to_string(&html).expect("the HTML was written");
    assert!(html.contains("verdict: RIG ERROR") && html.contains("<svg"), "{html}");
}

#[test]
fn compare_draws_both_sides_when_a_kernel_is_missing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let svg = dir.path().join("cmp.svg");
    let args = [
        "compare",
        "topologies/seed-002.toml",
        "--before",
        "build:0000dead",
        "--after",
        "6.12",
        "--cache-dir",
        cache.to_str().expect("utf-8"),
        "--svg",
        svg.to_str().expect("utf-8"),
    ];
    let (code, _, err) = manarig(&args);
    assert_eq!(code, 2, "{err}");
    let svg = std::fs::read_to_string(&svg).expect("the SVG was written");
    assert_eq!(cpus_in(&svg), 16, "before and after");
    assert!(svg.contains("before-cpu-0") && svg.contains("after-cpu-7"));
}

#[test]
fn run_from_a_bad_paste_is_one_error_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paste = dir.path().join("paste.txt");
    std::fs::write(
        &paste,
        "$ lscpu\nCPU(s): 4\nThread(s) per core: 2\nCore(s) per socket: 2\nSocket(s): 1\nNUMA node0 CPU(s): 0-2\n",
    )
    .expect("write");
    let (code, out, err) =
        manarig(&["run", "--from-lscpu", paste.to_str().expect("utf-8"), "--nic-node", "0", "--kernel", "6.12"]);
    assert_eq!(code, 2);
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("paste.txt:6: CPU 3 is in no node's list"), "{err}");
}

#[test]
fn a_picture_into_a_missing_folder_is_refused_before_anything_boots() {
    for cmd in
        [&["run", "topologies/seed-002.toml", "--kernel", "6.12-min"][..], &["compare", "topologies/seed-002.toml"]]
    {
        let mut args = cmd.to_vec();
        args.extend(["--svg", "/nonexistent-manarig-dir/x.svg"]);
        let (code, out, err) = manarig(&args);
        assert_eq!(code, 2, "{cmd:?}: {err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(
            err.trim(),
            "manarig: --svg /nonexistent-manarig-dir/x.svg: no folder /nonexistent-manarig-dir",
            "{cmd:?}"
        );
    }
}
