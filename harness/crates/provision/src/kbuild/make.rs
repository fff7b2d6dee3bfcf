//! Running kbuild's `make` for an out-of-tree build: niced (the machine also
//! runs guests), with ccache when the host has it, reproducible build stamps,
//! output to a log file, and a deadline after which the whole make process
//! group is killed and reaped.

use super::KbuildError;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How to run make.
#[derive(Debug, Clone)]
pub struct Make {
    /// What is built for: make variables (`ARCH=`, `CROSS_COMPILE=`) and the compiler ccache wraps.
    pub target: super::target::Target,
    /// The kernel source tree (`-C`).
    pub tree: PathBuf,
    /// The object folder (`O=`).
    pub obj: PathBuf,
    /// Parallel jobs (`-j`).
    pub jobs: usize,
    /// `CCACHE_DIR` when ccache is used; `None` builds with plain gcc.
    pub ccache_dir: Option<PathBuf>,
    /// Wall-clock limit of one make invocation.
    pub deadline: Duration,
    /// Where make's output goes (appended).
    pub log: PathBuf,
    /// Appended to the release after CONFIG_LOCALVERSION (`make LOCALVERSION=`),
    /// so that `uname -r` in a report names the build (`6.12.117-manarig-ea5a865f`).
    pub localversion: Option<String>,
}

/// True when `tool` runs (`tool --version`).
pub fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

impl Make {
    /// Run `make <args>`; returns how long it took.
    ///
    /// # Errors
    /// [`KbuildError::Make`] with the log's last lines on failure,
    /// [`KbuildError::Deadline`] when the deadline passed (make was killed).
    pub fn run(&self, args: &[&str], extra_env: &[(&str, &Path)]) -> Result<Duration, KbuildError> {
        use std::os::unix::process::CommandExt;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| KbuildError::io(&self.log, e))?;
        let log2 = log.try_clone().map_err(|e| KbuildError::io(&self.log, e))?;
        let mut cmd = Command::new("nice");
        cmd.args(["-n", "10", "make", "-C"])
            .arg(&self.tree)
            .arg(format!("O={}", self.obj.display()))
            .arg(format!("-j{}", self.jobs.max(1)))
            .args(self.target.make_vars())
            .args(args)
            // Reproducible: the same inputs give the same bzImage (and ccache hits).
            .env("KBUILD_BUILD_TIMESTAMP", "1970-01-01 00:00:00 UTC")
            .env("KBUILD_BUILD_USER", "manarig")
            .env("KBUILD_BUILD_HOST", "manarig")
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            // Its own process group, so that the deadline can stop every compiler.
            .process_group(0);
        if let Some(lv) = &self.localversion {
            cmd.arg(format!("LOCALVERSION=-{lv}"));
        }
        if let Some(dir) = &self.ccache_dir {
            cmd.arg(format!("CC=ccache {}", self.target.compiler()))
                .arg("HOSTCC=ccache gcc")
                .env("CCACHE_DIR", dir)
                .env("CCACHE_NOHASHDIR", "1")
                .env("CCACHE_BASEDIR", dir.parent().unwrap_or(dir));
        }
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        crate::children::die_with_parent(&mut cmd);
        let what = format!("make {}", args.join(" "));
        let start = Instant::now();
        let mut child = cmd.spawn().map_err(|e| KbuildError::Tool { tool: "nice make".into(), error: e })?;
        // A Ctrl-C (SIGINT, SIGTERM, SIGHUP) kills the whole make process group.
        crate::children::install_signal_thread();
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        crate::children::track(-pid);
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            crate::children::wait_exit_unreaped(pid);
            // Untrack, then reap: a tracked group id is never a recycled one.
            crate::children::untrack(-pid);
            let r = child.wait();
            let _ = tx.send(());
            r
        });
        let timed_out = rx.recv_timeout(self.deadline).is_err();
        if timed_out {
            crate::children::kill_if_tracked(-pid);
        }
        let status = waiter
            .join()
            .map_err(|_| KbuildError::Make {
                what: what.clone(),
                log: self.log.clone(),
                tail: "waiter thread panicked".into(),
            })?
            .map_err(|e| KbuildError::io(&self.log, e))?;
        if crate::children::interrupted() {
            return Err(KbuildError::Make {
                what,
                log: self.log.clone(),
                tail: "interrupted by a signal; make was stopped".into(),
            });
        }
        if timed_out {
            return Err(KbuildError::Deadline { what, after: self.deadline, log: self.log.clone() });
        }
        if !status.success() {
            return Err(KbuildError::Make { what, log: self.log.clone(), tail: log_tail(&self.log, 25) });
        }
        Ok(start.elapsed())
    }
}

/// The last `n` lines of a log, for error messages (errors first: lines
/// with `error:` are kept even when earlier).
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let errors: Vec<&str> =
        lines.iter().copied().filter(|l| l.contains("error:") || l.contains("Error ")).take(10).collect();
    let tail = &lines[lines.len().saturating_sub(n)..];
    let mut out: Vec<&str> = errors.iter().copied().filter(|e| !tail.contains(e)).collect();
    out.extend_from_slice(tail);
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_tail_keeps_errors_and_the_end() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("log");
        let mut text = String::from("a.c:1:2: error: boom\n");
        for i in 0..40 {
            text.push_str(&format!("line {i}\n"));
        }
        std::fs::write(&p, text).expect("w");
        let t = log_tail(&p, 3);
        assert_eq!(t, "a.c:1:2: error: boom\nline 37\nline 38\nline 39");
    }

    #[test]
    fn a_make_past_its_deadline_is_killed_and_reported() {
        if !manarig_test_support::tools_present("kbuild::make", &["make"]) {
            return;
        }
        let d = tempfile::tempdir().expect("tmp");
        // A Makefile whose target waits for stdin-less `cat` of a FIFO: never ends on its own.
        std::fs::write(d.path().join("Makefile"), "all:\n\ttail -f /dev/null\n").expect("w");
        let m = Make {
            target: super::super::target::Target::X86_64,
            tree: d.path().to_path_buf(),
            obj: d.path().join("obj"),
            jobs: 1,
            ccache_dir: None,
            deadline: Duration::from_millis(300),
            log: d.path().join("log"),
            localversion: None,
        };
        let e = m.run(&["all"], &[]).expect_err("deadline");
        assert!(matches!(e, KbuildError::Deadline { .. }), "{e}");
    }
}
