//! `manarig import` and the `--from-*` inputs of `expect` end to end: output and exit codes.

mod support;

use support::manarig;

const PASTE: &str = "harness/tests/fixtures/import/seed-003-lscpu-numactl.txt";
const SEED_003: &str = "topologies/seed-003-epyc-7763.toml";

#[test]
fn the_imported_seed_003_paste_has_seed_003s_expect_table_on_every_kernel() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("seed-003.toml");
    let out = out.to_str().expect("utf-8 path");
    let (code, stdout, err) = manarig(&["import", PASTE, "--name", "seed-003-epyc-7763", "-o", out]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.is_empty(), "{stdout}");
    for kernel in ["6.1", "6.3", "6.12", "7.x"] {
        let (code, got, err) = manarig(&["expect", out, "--kernel", kernel]);
        assert_eq!(code, 0, "{err}");
        let (_, want, _) = manarig(&["expect", SEED_003, "--kernel", kernel]);
        assert_eq!(got, want, "kernel {kernel}");
        let (_, got, _) = manarig(&["expect", out, "--kernel", kernel, "--qemu-numbering"]);
        let (_, want, _) = manarig(&["expect", SEED_003, "--kernel", kernel, "--qemu-numbering"]);
        assert_eq!(got, want, "kernel {kernel}, guest numbering");
    }
}

#[test]
fn expect_takes_the_pasted_machine_directly() {
    let (code, got, err) = manarig(&["expect", "--from-lscpu", PASTE, "--kernel", "6.12"]);
    assert_eq!(code, 0, "{err}");
    let (_, want, _) = manarig(&["expect", SEED_003, "--kernel", "6.12"]);
    // Only the name in the first line differs.
    assert_eq!(got.lines().skip(1).collect::<Vec<_>>(), want.lines().skip(1).collect::<Vec<_>>());
    assert!(got.starts_with("# seed-003-lscpu-numactl on Linux 6.12"), "{got}");
    // hwloc XML of the same machine, with the NIC's node given by hand.
    let xml = "harness/tests/fixtures/import/hwloc-seed-003.xml";
    let (code, hw, err) = manarig(&["expect", "--from-hwloc", xml, "--nic-node", "14", "--kernel", "6.12"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(hw.lines().skip(1).collect::<Vec<_>>(), want.lines().skip(1).collect::<Vec<_>>());
}

#[test]
fn bad_inputs_exit_2_with_one_line_naming_the_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cut = dir.path().join("cut.txt");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../",
        "harness/tests/fixtures/import/seed-003-lscpu-numactl.txt"
    ))
    .expect("fixture");
    let cut_at = text.find(" 15:  32").expect("row 15");
    std::fs::write(&cut, &text[..cut_at]).expect("write");
    let cut = cut.to_str().expect("utf-8");
    let (code, out, err) = manarig(&["import", cut]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("error: {cut}:59: the distance matrix stops after 15 of its 16 rows")), "{err}");
    let (code, _, err) = manarig(&["expect", "--from-hwloc", PASTE, "--kernel", "6.12"]);
    assert_eq!(code, 2);
    assert!(err.contains("given as --from-hwloc but it holds lscpu/numactl text"), "{err}");
    // --nic-node only goes with an import.
    let (code, _, _) = manarig(&["expect", SEED_003, "--nic-node", "3", "--kernel", "6.12"]);
    assert_eq!(code, 2);
    let (code, _, _) = manarig(&["expect", SEED_003, "--from-lscpu", PASTE, "--kernel", "6.12"]);
    assert_eq!(code, 2, "a file and an import at once");
}
