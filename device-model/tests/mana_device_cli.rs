//! The `mana-device` binary as the harness starts it: readiness line,
//! clean SIGTERM, clear errors on bad arguments, the control channel on
//! stdin/stdout, and a panicking or hanging device (`--inject-fault`).

mod wire_client;

use mana_device_api::control::{Op, Reply, Request, Response};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use vfio_bindings::bindings::vfio::VFIO_PCI_BAR0_REGION_INDEX;

/// Generous deadline for a loaded 2-core machine; not a timing assertion.
const DEADLINE: Duration = Duration::from_secs(60);

fn mana_device(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mana-device"));
    command.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
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
    std::process::Output { status, stdout: Vec::new(), stderr: err }
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
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!socket.exists(), "socket removed on SIGTERM");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&status).expect("status file")).expect("json");
    assert_eq!(json["shell"]["config"]["msix_table_size"], 17);
    assert_eq!(json["shell"]["connected"], false);
}

#[test]
fn bad_arguments_fail_with_a_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("dev.sock");
    let socket = socket.to_str().expect("utf-8");
    for (args, needle) in [
        (vec!["--socket", socket, "--msix-table-size", "0"], "outside 1..=2048"),
        (vec!["--socket", socket, "--mac", "00:11"], "six hex bytes"),
        (vec!["--socket", socket, "--config", "/nonexistent.json"], "cannot read device config"),
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
    let output = wait(mana_device(&["--socket", socket.to_str().expect("utf-8")]).spawn().expect("spawn"));
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("already exists"));
    assert!(socket.exists(), "someone else's file is left alone");
}

/// A device started with `--control stdio`: its stdin, and its stdout lines
/// (the readiness line first) as they come.
struct Controlled {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

fn controlled(socket: &std::path::Path, extra: &[&str]) -> Controlled {
    let mut args = vec!["--socket", socket.to_str().expect("utf-8"), "--control", "stdio"];
    args.extend_from_slice(extra);
    let mut child = mana_device(&args).stdin(Stdio::piped()).spawn().expect("spawn");
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut device = Controlled { child, stdin, lines };
    let ready = device.next_line(DEADLINE).expect("a readiness line");
    assert_eq!(ready, format!("ready {}", socket.display()));
    device
}

impl Controlled {
    fn next_line(&mut self, within: Duration) -> Option<String> {
        self.lines.recv_timeout(within).ok()
    }

    fn ask(&mut self, id: u64, op: Op) {
        let mut line = serde_json::to_string(&Request { id, op }).expect("json");
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).expect("write a request");
    }

    fn answer(&mut self, within: Duration) -> Option<Response> {
        self.next_line(within).map(|l| serde_json::from_str(&l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
    }
}

#[test]
fn with_control_stdio_it_answers_ping_and_typed_status_and_stops_when_stdin_closes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("dev.sock");
    let mut device = controlled(&socket, &["--msix-table-size", "17"]);
    device.ask(1, Op::Ping);
    assert_eq!(device.answer(DEADLINE), Some(Response { id: 1, reply: Reply::Pong }));
    device.ask(2, Op::Status);
    let response = device.answer(DEADLINE).expect("a status");
    assert_eq!(response.id, 2);
    let Reply::Status(status) = response.reply else {
        panic!("expected a status, got {response:?}");
    };
    assert_eq!(status.shell.config.msix_table_size, 17);
    assert!(!status.shell.connected);
    assert!(status.core.is_some_and(|core| core.eqs.is_empty()));
    // End of file on stdin: the controller is gone, the device stops cleanly.
    let Controlled { child, stdin, .. } = device;
    drop(stdin);
    let output = wait(child);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!socket.exists(), "socket removed");
}

#[test]
fn a_panic_in_the_serving_thread_ends_the_process_with_101_and_the_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("dev.sock");
    // The control thread keeps reading stdin: the panic hook must end the
    // process anyway.
    let device = controlled(&socket, &["--inject-fault", "panic:1"]);
    let mut client = vfio_user::Client::new(&socket).expect("connect and negotiate");
    // The first BAR0 write panics; the reply never comes, the socket closes.
    let offset = device_model::device::regs::DB_PAGE_OFFSET;
    let _ = client.region_write(VFIO_PCI_BAR0_REGION_INDEX, offset, &[0; 8]);
    let Controlled { child, stdin, .. } = device;
    let output = wait(child);
    drop(stdin);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(101), "{stderr}");
    // The last line says it all (a backtrace before it may be long).
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("mana-device: error: thread 'vfio-user-device' panicked at ")
            && last.ends_with(": injected fault: panic:1; exiting"),
        "{stderr}"
    );
}

#[test]
fn a_device_hung_inside_a_message_answers_no_ping() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("dev.sock");
    let mut device = controlled(&socket, &["--inject-fault", "hang:1"]);
    device.ask(1, Op::Ping);
    assert_eq!(device.answer(DEADLINE), Some(Response { id: 1, reply: Reply::Pong }));
    let path = socket.clone();
    // Blocks until the device is killed below (the socket then closes).
    let writer = std::thread::spawn(move || {
        let mut client = vfio_user::Client::new(&path).expect("connect and negotiate");
        let _ = client.region_write(VFIO_PCI_BAR0_REGION_INDEX, device_model::device::regs::DB_PAGE_OFFSET, &[0; 8]);
    });
    // Wait for the hang itself (its log line), not for a guessed time.
    let stderr = device.child.stderr.take().expect("piped stderr");
    let (tx, logged) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("injected fault: hang:1") {
                let _ = tx.send(());
            }
        }
    });
    logged.recv_timeout(DEADLINE).expect("the device logs the injected hang");
    device.ask(2, Op::Ping);
    // A ping is answered within microseconds otherwise; 2 s of silence is the hang.
    assert_eq!(device.answer(Duration::from_secs(2)), None, "a hung device answered a ping");
    let Controlled { mut child, stdin, .. } = device;
    child.kill().expect("kill");
    child.wait().expect("reap");
    drop(stdin);
    writer.join().expect("the client thread ends with the device");
}

#[test]
fn a_version_message_without_payload_is_refused_and_the_process_keeps_serving() {
    // Sent straight to the vfio_user crate, this message panics it
    // (CString::from_vec_with_nul(..).unwrap()); the device's front refuses
    // it with EINVAL first, and the session goes on.
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("dev.sock");
    let mut device = controlled(&socket, &[]);
    let stream = std::os::unix::net::UnixStream::connect(&socket).expect("connect");
    let mut client = wire_client::RawClient::new(stream);
    let reply = client.call(device_model::shell::vfio_wire::VERSION, &[0, 0, 0, 0], &[]);
    assert_eq!(reply.errno(), Some(libc::EINVAL), "{reply:?}");
    let json = wire_client::version_fields("{\"capabilities\":{}}");
    let reply = client.call(device_model::shell::vfio_wire::VERSION, &json, &[]);
    assert_eq!(reply.errno(), None, "{reply:?}");
    device.ask(1, Op::Ping);
    assert_eq!(device.answer(DEADLINE), Some(Response { id: 1, reply: Reply::Pong }));
    // The client leaves: the device ends cleanly.
    drop(client);
    let Controlled { child, stdin, .. } = device;
    let output = wait(child);
    drop(stdin);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!socket.exists(), "socket removed");
}
