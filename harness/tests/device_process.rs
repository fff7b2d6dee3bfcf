//! A broken emulated NIC is a rig error, not a hung or crashed rig: the
//! `mana-device` process is made to fail in the middle of the driver's probe
//! (`MANARIG_DEVICE_FAULT`, `mana-device --inject-fault`: at its 30th BAR0
//! write, after REGISTER_DEVICE on seed 002 with the 6.12 driver) and
//! `manarig run` must end within seconds with exit code 2, an error that names
//! the device and carries its last log lines, and no QEMU or device process
//! of that run left behind. Each test boots seed 002 on the minimal 6.12
//! kernel (`cargo xtask test` builds it) under TCG.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn topology_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../topologies").join(format!("{file}.toml"))
}

/// What `manarig run` left: its exit code, stderr, and when it ended (UTC
/// seconds of the day).
struct Ended {
    code: Option<i32>,
    stderr: String,
    at: f64,
}

/// `manarig run seed-002 --kernel 6.12-min` with `MANARIG_DEVICE_FAULT=fault`
/// and `TMPDIR=tmp` (so that every process of this run names `tmp` on its
/// command line: the QEMU `-device` socket and `-initrd` paths, the device's
/// `--socket`). `--deadline 300` bounds a rig that would not notice.
fn run_with_fault(fault: &str, tmp: &Path) -> Ended {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_manarig"))
        .arg("run")
        .arg(topology_path("seed-002"))
        .args(["--kernel", "6.12-min", "--deadline", "300"])
        .env("MANARIG_DEVICE_FAULT", fault)
        .env("TMPDIR", tmp)
        .output()
        .expect("manarig runs");
    Ended {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        at: utc_seconds_of_day_now(),
    }
}

fn utc_seconds_of_day_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs_f64() % 86_400.0
}

/// UTC seconds of the day of a device log line (`2026-12-01T09:55:03.902947Z ERROR …`).
fn logged_at(line: &str) -> Option<f64> {
    let stamp = line.split_whitespace().next()?;
    let time = stamp.split_once('T')?.1.trim_end_matches('Z');
    let mut parts = time.split(':');
    let (h, m, s) =
        (parts.next()?.parse::<f64>().ok()?, parts.next()?.parse::<f64>().ok()?, parts.next()?.parse::<f64>().ok()?);
    Some(h * 3600.0 + m * 60.0 + s)
}

/// Processes whose command line names `dir` (this run's QEMU and device).
fn processes_naming(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok().map(|c| (e.file_name(), c)))
        .map(|(pid, c)| (pid, String::from_utf8_lossy(&c).replace('\0', " ")))
        .filter(|(_, c)| c.contains(&needle))
        .map(|(pid, c)| format!("{}: {c}", pid.to_string_lossy()))
        .collect()
}

/// The checks every fault shares; `what` is how the error describes the end.
fn ends_the_run_cleanly(fault: &str, what: &str, within: Duration) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ended = run_with_fault(fault, tmp.path());
    let stderr = &ended.stderr;
    assert_eq!(ended.code, Some(2), "exit code; stderr:\n{stderr}");
    // The error names the device, says what happened, and carries its log.
    let error = stderr.split_once("rig error: ").map(|(_, e)| e).unwrap_or_else(|| panic!("no rig error:\n{stderr}"));
    assert!(error.contains("the emulated NIC (`mana-device`, pid "), "{error}");
    assert!(error.contains(what), "{error}");
    assert!(error.contains("its last log lines:"), "{error}");
    let fault_line = error
        .lines()
        .find(|l| l.contains(&format!("injected fault: {fault} at BAR0 write")))
        .unwrap_or_else(|| panic!("the device's own last line is not in the error:\n{error}"));
    assert!(error.contains("QEMU was stopped"), "{error}");
    // Within seconds of the fault (the run itself is bounded by --deadline).
    let at = logged_at(fault_line).unwrap_or_else(|| panic!("no time on {fault_line:?}"));
    let took = (ended.at - at).rem_euclid(86_400.0);
    assert!(took < within.as_secs_f64(), "the run ended {took:.1} s after the fault (limit {within:?}):\n{stderr}");
    eprintln!("{fault}: the run ended {took:.2} s after the fault");
    // Nothing of the run is left: no QEMU, no device, no temporary folder.
    assert_eq!(processes_naming(tmp.path()), Vec::<String>::new(), "processes of this run are still there");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).expect("tmp").flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

/// SIGKILL, as the OOM killer would: seen at once by the exit waiter.
#[test]
fn on_seed_002_a_device_killed_mid_probe_ends_the_run_with_exit_2_and_no_qemu_left() {
    ends_the_run_cleanly("kill:30", "ended (signal: 9 (SIGKILL)) while it served the guest", Duration::from_secs(10));
}

/// A device hung inside a guest message (holding its lock): the watchdog's
/// ping goes unanswered for 5 s, the device is killed and the run ends.
#[test]
fn on_seed_002_a_device_hung_mid_probe_ends_the_run_with_exit_2_and_no_qemu_left() {
    ends_the_run_cleanly(
        "hang:30",
        "stopped answering (no answer to a ping within 5s; killed)",
        Duration::from_secs(20),
    );
}
