//! Private Python venvs in the cache for the checkers the project runs from
//! PyPI (kcidb-io for KCIDB output, check-jsonschema for the GitHub workflow):
//! `python3 -m venv <cache>/<name>` + `pip install PIN…`, never into the host's
//! Python, one process at a time (a lock file beside the venv), and a stamp in
//! the venv naming the pins so that a second call only reads it. Also
//! [`run_bounded`], the one way these tools are run: with a deadline, stdin
//! closed, the child reaped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Time allowed for `python3 -m venv`.
const VENV_DEADLINE: Duration = Duration::from_secs(180);
/// Time allowed for `pip install` (downloads from PyPI).
const PIP_DEADLINE: Duration = Duration::from_secs(600);
/// The stamp a finished venv holds: its pins, one a line.
const STAMP: &str = "manarig-pins.txt";

/// The venv `<cache>/<name>` with `pins` (pip requirement specifiers such as
/// `kcidb-io==141`) installed, made first when missing or installed with
/// other pins. `progress` hears the steps. Returns the venv's folder (its
/// programs are in `bin/`).
///
/// # Errors
/// [`VenvError::Io`] when the cache is not writable; [`VenvError::Run`] when
/// there is no `python3`, venv or pip failed (no network, unknown package) or
/// a deadline passed.
pub fn ensure(cache: &Path, name: &str, pins: &[&str], progress: &mut dyn FnMut(&str)) -> Result<PathBuf, VenvError> {
    let venv = cache.join(name);
    let stamp = venv.join(STAMP);
    let want = pins.join("\n");
    let ready = || std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == want);
    if ready() {
        return Ok(venv);
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |error| VenvError::Io { path, error }
    };
    std::fs::create_dir_all(cache).map_err(io(cache))?;
    let lock_path = cache.join(format!("{name}.lock"));
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io(&lock_path))?;
    wait_for_lock(&lock).map_err(io(&lock_path))?;
    if ready() {
        return Ok(venv);
    }
    progress(&format!("installing {} into {} (first use)", pins.join(" "), venv.display()));
    let mut venv_cmd = Command::new("python3");
    venv_cmd.arg("-m").arg("venv").arg(&venv);
    run_bounded(venv_cmd, VENV_DEADLINE, "python3 -m venv")?;
    let mut pip = Command::new(venv.join("bin/python"));
    pip.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]).args(pins);
    run_bounded(pip, PIP_DEADLINE, "pip install")?;
    std::fs::write(&stamp, &want).map_err(io(&stamp))?;
    Ok(venv)
}

/// A venv that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum VenvError {
    /// The cache, the lock file or the stamp cannot be written.
    #[error("{path}: {error}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// `python3 -m venv` or `pip install` did not succeed.
    #[error(transparent)]
    Run(#[from] Failure),
}

/// flock(LOCK_EX), waiting for the install of another process (bounded by
/// that process's own deadlines).
fn wait_for_lock(f: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock(2) on a descriptor this function borrows; no pointers.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// A command that did not succeed.
#[derive(Debug)]
pub struct Failure {
    /// What ran and how it ended (`pip install: exit status: 1`).
    pub what: String,
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// Its stderr's last lines, joined by ` / ` (stdout's when stderr was empty).
    pub output_tail: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.output_tail.is_empty() {
            f.write_str(&self.what)
        } else {
            write!(f, "{}: {}", self.what, self.output_tail)
        }
    }
}

impl std::error::Error for Failure {}

/// Run `cmd` to its end within `deadline` (killed after it), stdout and
/// stderr into temporary files; `Ok(stdout)` on exit status 0.
///
/// # Errors
/// [`Failure`]: the command could not start, exited non-zero, was killed, or
/// outlived `deadline`.
pub fn run_bounded(mut cmd: Command, deadline: Duration, what: &str) -> Result<String, Failure> {
    let fail = |what: String| Failure { what, code: None, output_tail: String::new() };
    let out = tempfile::tempfile().map_err(|e| fail(format!("{what}: temporary file: {e}")))?;
    let err = tempfile::tempfile().map_err(|e| fail(format!("{what}: temporary file: {e}")))?;
    let (out_r, err_r) = (out.try_clone(), err.try_clone());
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    crate::children::die_with_parent(&mut cmd);
    crate::children::install_signal_thread();
    let mut child = cmd.spawn().map_err(|e| fail(format!("{what}: cannot start {:?}: {e}", cmd.get_program())))?;
    let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    crate::children::track(pid);
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        crate::children::wait_exit_unreaped(pid);
        // Untrack, then reap: a tracked pid is never a recycled one.
        crate::children::untrack(pid);
        let status = child.wait();
        let _ = tx.send(());
        status
    });
    let timed_out = rx.recv_timeout(deadline).is_err();
    if timed_out {
        crate::children::kill_if_tracked(pid);
    }
    let status = waiter.join().map_err(|_| fail(format!("{what}: the waiting thread panicked")))?;
    let read = |f: std::io::Result<std::fs::File>| -> String {
        use std::io::{Read, Seek};
        let mut s = String::new();
        if let Ok(mut f) = f {
            let _ = f.rewind();
            let _ = f.read_to_string(&mut s);
        }
        s
    };
    let (stdout, stderr) = (read(out_r), read(err_r));
    let tail_of =
        |s: &str| s.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join(" / ");
    let tail = if stderr.trim().is_empty() { tail_of(&stdout) } else { tail_of(&stderr) };
    match status {
        _ if timed_out => Err(fail(format!("{what}: no end within {} s (stopped)", deadline.as_secs()))),
        Ok(s) if s.success() => Ok(stdout),
        Ok(s) => Err(Failure { what: format!("{what}: {s}"), code: s.code(), output_tail: tail }),
        Err(e) => Err(fail(format!("{what}: {e}"))),
    }
}
