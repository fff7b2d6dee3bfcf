//! `manarig kernel build --commits A..B` (= `cargo xtask kernel build …`): the argument
//! errors that stop before any git export or kernel build, each one line, exit 2.

use std::process::Command;

fn manarig(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_manarig")).args(args).output().expect("run manarig");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_range_of_a_folder_that_is_no_git_tree_is_a_rig_error_of_one_line() {
    let tree = tempfile::tempdir().expect("tmp");
    let cache = tempfile::tempdir().expect("tmp");
    let (t, c) = (tree.path().display().to_string(), cache.path().display().to_string());
    let (code, err) =
        manarig(&["kernel", "build", "--source", &t, "--commits", "v1..v2", "--cache-dir", &c, "--no-install-deps"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim(), format!("manarig kernel: source: --commits v1..v2: {t} is not a git tree"));
    // A single commit (the series' baseline) goes the same way.
    let (code, err) =
        manarig(&["kernel", "build", "--source", &t, "--commits", "v1", "--cache-dir", &c, "--no-install-deps"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim(), format!("manarig kernel: source: --commits v1: {t} is not a git tree"));
}

#[test]
fn commits_need_a_tree_and_exclude_patches() {
    let cache = tempfile::tempdir().expect("tmp");
    let c = cache.path().display().to_string();
    let (code, err) = manarig(&["kernel", "build", "--source", "debian:6.12", "--commits", "a..b", "--cache-dir", &c]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--commits a..b needs --source to be a git tree, not debian:6.12"), "{err}");
    let (code, err) = manarig(&["kernel", "build", "--source", ".", "--commits", "a..b", "--patches", "x.mbox"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}
