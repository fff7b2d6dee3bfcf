//! The report's selftest items (`manarig.selftests=FILE,…`,
//! guest-images/README.md): how the remote end's setup went and each test
//! program's output and exit, as the agent printed them. The output is read
//! as KTAP by `manarig_selftests::selftests::ktap`; this module only collects it.

/// What `manarig.selftests` did (empty without it).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct GuestSelftests {
    /// `selftest-setup: <status>`: the exit status of the remote end's setup
    /// (0: the second NIC is in netns `remote` with its addresses, and the
    /// MANA netdev has its own), None when it did not run.
    /// (Its error lines are the report's `stderr selftest-setup: …`.)
    pub setup: Option<i32>,
    /// One entry per test program, in the order they ran.
    pub runs: Vec<GuestSelftestRun>,
}

/// One test program's run.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct GuestSelftestRun {
    /// The program, relative to drivers/net (`queues.py`, `hw/csum.py`).
    pub file: String,
    /// Its output (stdout and stderr, one line each: `selftest <file>: <line>`).
    pub output: Vec<String>,
    /// How it ended (`selftest-exit <file>: <status>|timeout <seconds>`), None
    /// when the report has no exit line for it.
    pub exit: Option<SelftestExit>,
    /// Guest seconds it took.
    pub seconds: Option<f64>,
}

/// How a test program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SelftestExit {
    /// It exited with this status (ksft: 0 all passed or skipped, 1 a failure,
    /// 4 its library could not be imported).
    Status(i32),
    /// The agent stopped it at `manarig.selftest_timeout`.
    Timeout,
}

impl GuestSelftests {
    /// The run of `file`, made when its first line arrives.
    pub(super) fn run_mut(&mut self, file: &str) -> &mut GuestSelftestRun {
        if let Some(i) = self.runs.iter().position(|r| r.file == file) {
            return &mut self.runs[i];
        }
        self.runs.push(GuestSelftestRun { file: file.to_owned(), ..GuestSelftestRun::default() });
        let last = self.runs.len() - 1;
        &mut self.runs[last]
    }

    /// One `selftest-exit` value: `<status>|timeout <seconds>`.
    pub(super) fn exit_line(&mut self, file: &str, value: &str) -> Result<(), String> {
        let (status, seconds) = value.trim().split_once(' ').unwrap_or((value.trim(), "-"));
        let exit = match status {
            "timeout" => SelftestExit::Timeout,
            n => SelftestExit::Status(n.parse().map_err(|_| format!("exit status {n:?} is not a number"))?),
        };
        let run = self.run_mut(file);
        run.exit = Some(exit);
        run.seconds = seconds.trim().parse().ok();
        Ok(())
    }
}
