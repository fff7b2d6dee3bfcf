//! Checking KCIDB output with KernelCI's own validator: the `kcidb-io`
//! package from PyPI (pinned), installed on first use into a private venv in
//! the cache (`<cache>/venv-kcidb`, `python3 -m venv` + `pip install`), never
//! into the host's Python. Its `kcidb_io.schema.V5_3.validate_exactly()` is
//! the check.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The kcidb-io release the check installs (its v5.3 schema is what
/// [`super::kcidb`] writes).
pub const KCIDB_IO_PIN: &str = "kcidb-io==141";

/// Time allowed for `python3 -m venv`.
const VENV_DEADLINE: Duration = Duration::from_secs(180);
/// Time allowed for `pip install` (downloads from PyPI).
const PIP_DEADLINE: Duration = Duration::from_secs(600);
/// Time allowed for one validation.
const CHECK_DEADLINE: Duration = Duration::from_secs(120);

/// What went wrong checking a KCIDB document.
#[derive(Debug, thiserror::Error)]
pub enum KcidbCheckError {
    /// The validator could not be installed or run.
    #[error("kcidb-io validator: {0}")]
    Setup(String),
    /// The document does not validate.
    #[error("{file}: not valid KCIDB v5.3: {message}")]
    Invalid {
        /// The document.
        file: String,
        /// kcidb-io's words: the failing property's path and the reason.
        message: String,
    },
}

/// The installed validator: a venv's Python with kcidb-io.
#[derive(Debug, Clone)]
pub struct KcidbValidator {
    python: PathBuf,
}

/// The stamp a finished venv holds: the pin it was installed with.
const STAMP: &str = "manarig-kcidb-io.pin";

/// The validator in `<cache>/venv-kcidb`, installed first when missing
/// (one process at a time: a lock file beside it). `progress` hears the steps.
///
/// # Errors
/// [`KcidbCheckError::Setup`]: no `python3`, venv or pip failed, a deadline passed.
pub fn validator(cache: &Path, progress: &mut dyn FnMut(&str)) -> Result<KcidbValidator, KcidbCheckError> {
    let setup = |m: String| KcidbCheckError::Setup(m);
    let venv = cache.join("venv-kcidb");
    let python = venv.join("bin/python");
    let stamp = venv.join(STAMP);
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == KCIDB_IO_PIN) {
        return Ok(KcidbValidator { python });
    }
    std::fs::create_dir_all(cache).map_err(|e| setup(format!("{}: {e}", cache.display())))?;
    let lock_path = cache.join("venv-kcidb.lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| setup(format!("{}: {e}", lock_path.display())))?;
    wait_for_lock(&lock).map_err(|e| setup(format!("{}: {e}", lock_path.display())))?;
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == KCIDB_IO_PIN) {
        return Ok(KcidbValidator { python });
    }
    progress(&format!("installing {KCIDB_IO_PIN} into {} (first use)", venv.display()));
    let mut venv_cmd = Command::new("python3");
    venv_cmd.arg("-m").arg("venv").arg(&venv);
    run_bounded(venv_cmd, VENV_DEADLINE, "python3 -m venv").map_err(|f| setup(f.to_string()))?;
    let mut pip = Command::new(&python);
    pip.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", KCIDB_IO_PIN]);
    run_bounded(pip, PIP_DEADLINE, "pip install").map_err(|f| setup(f.to_string()))?;
    std::fs::write(&stamp, KCIDB_IO_PIN).map_err(|e| setup(format!("{}: {e}", stamp.display())))?;
    Ok(KcidbValidator { python })
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

/// The script: validate the file named by argv[1] against v5.3, exactly.
const SCRIPT: &str = r#"
import json, sys
import jsonschema
import kcidb_io
with open(sys.argv[1]) as f:
    data = json.load(f)
try:
    kcidb_io.schema.V5_3.validate_exactly(data)
except jsonschema.exceptions.ValidationError as e:
    where = "/".join(str(p) for p in e.absolute_path) or "(document)"
    print(f"{where}: {e.message}"[:2000], file=sys.stderr)
    sys.exit(1)
print("valid")
"#;

impl KcidbValidator {
    /// Check `file` against KCIDB v5.3.
    ///
    /// # Errors
    /// [`KcidbCheckError::Invalid`] with kcidb-io's reason, or
    /// [`KcidbCheckError::Setup`] when the check itself cannot run.
    pub fn check(&self, file: &Path) -> Result<(), KcidbCheckError> {
        let mut cmd = Command::new(&self.python);
        cmd.arg("-c").arg(SCRIPT).arg(file);
        match run_bounded(cmd, CHECK_DEADLINE, "kcidb-io validation") {
            Ok(_) => Ok(()),
            Err(Failure { code: Some(1), stderr_tail, .. }) => {
                Err(KcidbCheckError::Invalid { file: file.display().to_string(), message: stderr_tail })
            }
            Err(f) => Err(KcidbCheckError::Setup(f.to_string())),
        }
    }
}

/// A command that did not succeed.
#[derive(Debug)]
struct Failure {
    /// What ran and how it ended (`pip install: exit status: 1`).
    what: String,
    /// Its exit code, when it exited.
    code: Option<i32>,
    /// Its stderr's last lines, joined by ` / `.
    stderr_tail: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.stderr_tail.is_empty() {
            f.write_str(&self.what)
        } else {
            write!(f, "{}: {}", self.what, self.stderr_tail)
        }
    }
}

/// Run `cmd` to its end within `deadline` (killed after it), stdout and
/// stderr into temporary files; `Ok(stdout)` on exit status 0.
fn run_bounded(mut cmd: Command, deadline: Duration, what: &str) -> Result<String, Failure> {
    let fail = |what: String| Failure { what, code: None, stderr_tail: String::new() };
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
    let tail = stderr.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join(" / ");
    match status {
        _ if timed_out => Err(fail(format!("{what}: no end within {} s (stopped)", deadline.as_secs()))),
        Ok(s) if s.success() => Ok(stdout),
        Ok(s) => Err(Failure { what: format!("{what}: {s}"), code: s.code(), stderr_tail: tail }),
        Err(e) => Err(fail(format!("{what}: {e}"))),
    }
}
