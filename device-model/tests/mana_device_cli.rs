//! The `mana-device` binary as the harness starts it: readiness line,
//! clean SIGTERM, clear errors on bad arguments.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Generous deadline for a loaded 2-core machine; not a timing assertion.
const DEADLINE: Duration = Duration::from_secs(60);

fn mana_device(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mana-device"));
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Waits for the first stdout line, with a deadline.
fn first_line(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(line) => line,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mana-device printed no readiness line within {DEADLINE:?}");
        }
    }
}

/// Waits for exit, with a deadline.
fn wait(mut child: Child) -> std::process::Output {
    let (tx, rx) = mpsc::channel();
    let pid = child.id();
    let stderr = child.stderr.take();
    std::thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send(status);
    });
    let status = rx
        .recv_timeout(DEADLINE)
        .unwrap_or_else(|_| {
            // SAFETY: plain kill(2) of our own child's pid; no memory is involved.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("mana-device did not exit within {DEADLINE:?}")
        })
        .expect("wait");
    let mut err = Vec::new();
    if let Some(mut stderr) = stderr {
        let _ = std::io::Read::read_to_end(&mut stderr, &mut err);
    }
    std::process::Output {
        status,
        stdout: Vec::new(),
        stderr: err,
    }
}

#[test]
fn prints_ready_then_exits_cleanly_on_sigterm_and_removes_the_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("dev.sock");
    let status = dir.path().join("status.json");
    let mut child = mana_device(&[
        "--socket",
        socket.to_str().expect("utf-8"),
        "--status-file",
        status.to_str().expect("utf-8"),
        "--msix-table-size",
        "17",
    ])
    .spawn()
    .expect("spawn");
    let line = first_line(&mut child);
    assert_eq!(line.trim_end(), format!("ready {}", socket.display()));
    assert!(socket.exists());
    // SAFETY: plain kill(2) of our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let output = wait(child);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!socket.exists(), "socket removed on SIGTERM");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&status).expect("status file")).expect("json");
    assert_eq!(json["shell"]["config"]["msix_table_size"], 17);
    assert_eq!(json["shell"]["connected"], false);
}

#[test]
fn bad_arguments_fail_with_a_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("dev.sock");
    let socket = socket.to_str().expect("utf-8");
    for (args, needle) in [
        (
            vec!["--socket", socket, "--msix-table-size", "0"],
            "outside 1..=2048",
        ),
        (vec!["--socket", socket, "--mac", "00:11"], "six hex bytes"),
        (
            vec!["--socket", socket, "--config", "/nonexistent.json"],
            "cannot read device config",
        ),
        (vec!["--msix-table-size", "9"], "--socket"),
    ] {
        let output = wait(mana_device(&args).spawn().expect("spawn"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    assert!(!dir.path().join("dev.sock").exists());
}

#[test]
fn an_existing_socket_path_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("dev.sock");
    std::fs::write(&socket, b"").expect("file");
    let output = wait(
        mana_device(&["--socket", socket.to_str().expect("utf-8")])
            .spawn()
            .expect("spawn"),
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("already exists"));
    assert!(socket.exists(), "someone else's file is left alone");
}
