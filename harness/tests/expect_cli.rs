//! `manarig expect` (= `cargo xtask expect`) end to end: output and exit codes; and
//! topology files `run` refuses before it starts anything.

mod support;

use support::manarig;

#[test]
fn expect_prints_seed_002_table() {
    // Seed 002 on 6.12: HWC on CPU 0, then the commit message's table (MSI-X 1..8).
    let (code, out, err) = manarig(&["expect", "topologies/seed-002.toml", "--kernel", "6.12"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Vec<&str>> =
        out.lines().filter(|l| !l.starts_with('#')).skip(1).map(|l| l.split_whitespace().collect()).collect();
    let cpus: Vec<&str> = rows.iter().map(|r| r[5]).collect();
    assert_eq!(cpus, ["0", "0-1", "2-3", "0-1", "2-3", "4-5", "6-7", "4-5", "6-7"]);
    assert_eq!(rows[1][..3], ["0", "1", "mana_q0"]);
}

#[test]
fn expect_json_is_machine_readable() {
    let (code, out, err) = manarig(&["expect", "topologies/r05-dyn-skip.toml", "--kernel", "7.3", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    // R05: HWC on {0,1}, first queue vector on {2,3}.
    assert_eq!(v["vectors"][0]["smp_affinity_list"], "0-1");
    assert_eq!(v["vectors"][1]["smp_affinity_list"], "2-3");
    assert_eq!(v["vectors"][1]["name"], "mana_msi1@pci:{bdf}");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let (code, out, err) = manarig(&["expect", "topologies/does-not-exist.toml", "--kernel", "6.12"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: topologies/does-not-exist.toml: cannot read"), "{err}");
    let (code, _, err) = manarig(&["expect", "topologies/seed-002.toml", "--kernel", "5.4"]);
    assert_eq!(code, 2);
    assert!(err.contains("\"5.4\" is not modelled"), "{err}");
}

#[test]
fn expect_takes_the_minimal_kernels_names_as_their_generations() {
    for (min, generation) in [("6.1-min", "6.1"), ("6.12-min", "6.12"), ("7.x-min", "7.x")] {
        let (code, out, err) = manarig(&["expect", "topologies/seed-002.toml", "--kernel", min]);
        assert_eq!(code, 0, "{min}: {err}");
        let (_, want, _) = manarig(&["expect", "topologies/seed-002.toml", "--kernel", generation]);
        assert_eq!(out, want, "{min} vs {generation}");
    }
    let (code, _, err) = manarig(&["expect", "topologies/seed-002.toml", "--kernel", "5.4-min"]);
    assert_eq!(code, 2);
    assert!(err.contains("\"5.4-min\" is not modelled"), "{err}");
    assert!(err.contains("6.12-min"), "the refusal names the minimal kernels too: {err}");
    // 6.3 is a model, not a pinned kernel: it has no minimal build.
    let (code, _, err) = manarig(&["expect", "topologies/seed-002.toml", "--kernel", "6.3-min"]);
    assert_eq!(code, 2);
    assert!(err.contains("\"6.3-min\" is not modelled"), "{err}");
}

#[test]
fn expect_prints_the_6_3_model_naming_its_hop_aware_spread() {
    // The 6.3 model (MANA of Linux 6.3-6.8): one CPU per vector from the hop-aware
    // cpumask_local_spread(). Seed 003 from node 14: node 14's CPUs 112-119 first
    // (its "After" list), and 6.4 and 6.8 name the same model.
    let (code, out, err) = manarig(&["expect", "topologies/seed-003-epyc-7763.toml", "--kernel", "6.3"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("on Linux 6.3 (upstream 6.3-6.8)") && out.contains("NUMA-hop-aware"), "{out}");
    let row = out.lines().find(|l| l.contains(" mana_q0 ")).unwrap_or_default();
    assert!(row.contains(" 113 ") && row.ends_with("local_spread(hops)"), "{row:?}");
    for alias in ["6.4", "6.8"] {
        let (_, same, _) = manarig(&["expect", "topologies/seed-003-epyc-7763.toml", "--kernel", alias]);
        assert_eq!(same, out, "{alias}");
    }
}

/// A new temporary folder `manarig-WHAT-PID` and the text of
/// topologies/scen-cpu-hotplug.toml, to write broken variants of it there.
fn dir_and_hotplug_file(what: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("manarig-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../topologies/scen-cpu-hotplug.toml"))
        .expect("topology");
    (dir, text)
}

/// A scenario the kernel cannot have is refused before anything starts: one line
/// naming the file and the field, exit 2.
#[test]
fn an_impossible_scenario_is_one_error_line_and_exit_2() {
    let (dir, text) = dir_and_hotplug_file("scen");
    for (from, to, want) in [
        ("offline = \"3\"", "offline = \"0,3\"", "scenario.offline: CPU 0 cannot go offline"),
        ("maxcpus = 7", "maxcpus = 9", "scenario.maxcpus: 9: must be 1..=8"),
    ] {
        let file = dir.join("bad.toml");
        std::fs::write(&file, text.replace(from, to)).expect("write");
        let shown = file.display().to_string();
        let (code, out, err) = manarig(&["run", &shown, "--kernel", "6.12-min"]);
        assert_eq!(code, 2, "{err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.contains("scenario.")).collect();
        assert_eq!(errors.len(), 1, "{err}");
        assert!(errors[0].contains(&format!("{shown}: {want}")), "{err}");
        assert!(!err.contains("boot to report"), "nothing started: {err}");
        let _ = out;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A wrongly typed value is one line naming the file, line:column and the field's
/// TOML path (in a table, and in an array of tables), exit 2.
#[test]
fn a_wrongly_typed_value_is_one_line_naming_its_field() {
    let (dir, text) = dir_and_hotplug_file("type");
    let line_of = |t: &str, what: &str| t.lines().position(|l| l == what).expect("line") + 1;
    for (from, to, col, want) in [
        (
            "online_after = \"3,7\"",
            "online_after = \"3,7\"\nirqbalance = \"yes\"",
            14,
            "scenario.irqbalance: invalid type: string \"yes\", expected a boolean",
        ),
        ("cpus = \"4-7\"", "cpus = 5", 8, "numa.nodes[1].cpus: invalid type: integer `5`, expected a string"),
    ] {
        let file = dir.join("typo.toml");
        let broken = text.replace(from, to);
        std::fs::write(&file, &broken).expect("write");
        let shown = file.display().to_string();
        let (code, out, err) = manarig(&["expect", &shown, "--kernel", "6.12"]);
        assert_eq!(code, 2, "{err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let line = line_of(&broken, to.lines().last().expect("line"));
        assert_eq!(err.trim_end(), format!("error: {shown}:{line}:{col}: {want}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An asymmetric SLIT loads: one warning line per asymmetric pair on stderr, and the
/// table built from node 0's row (node 2 at 20 before node 1 at 30).
#[test]
fn an_asymmetric_slit_is_accepted_with_a_warning_per_pair() {
    let (code, out, err) = manarig(&["expect", "topologies/scen-asymmetric-slit.toml", "--kernel", "6.12"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("warning: ") && l.contains("asymmetric SLIT")).count(), 3, "{err}");
    assert!(err.contains("numa.distances[0][1]: 30 but the reverse distance is 20"), "{err}");
    assert!(out.contains("hops from the NIC node: 0-1 | 4-5 | 2-3"), "{out}");
}

/// irqbalance on a minimal kernel (no CONFIG_UNIX: irqbalance 1.9 exits without its
/// AF_UNIX socket) and on a machine left with one CPU are refused before anything
/// boots: one error line, exit 2.
#[test]
fn irqbalance_where_it_cannot_run_is_one_error_line_and_exit_2() {
    let (code, _, err) = manarig(&["run", "topologies/scen-irqbalance.toml", "--kernel", "6.12-min"]);
    assert_eq!(code, 2, "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("rig error")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains("kernel 6.12-min is built with manarig's minimal config"), "{err}");
    assert!(errors[0].contains("no CONFIG_UNIX"), "{err}");
    let (code, _, err) =
        manarig(&["run", "topologies/seed-002.toml", "--kernel", "6.12", "--irqbalance", "--maxcpus", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("scenario.irqbalance: needs at least two online CPUs after the probe"), "{err}");
    assert!(!err.contains("boot to report"), "nothing started: {err}");
}
