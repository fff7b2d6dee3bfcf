//! How a pair is run: booted by the rig ([`BootRunner`]: [`crate::rig::run_one`]),
//! or answered by the model alone ([`ModelRunner`], the hidden `--dry-run`: a
//! guest that shows exactly what the model predicts, for exercising plans,
//! shards, merges and report formats without QEMU). Either way the result is
//! an [`Observation`] that an oracle judges.

use super::spec::PlannedPair;
use crate::accel::AccelChoice;
use crate::model::expected_table;
use crate::qemu::Speedups;
use crate::rig::kernel_choice::ResolvedKernel;
use crate::rig::{run_one, RunOutcome};
use crate::topology::Topology;
use crate::verdict::{judge, Observed, Verdict};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What running one pair produced.
#[derive(Debug)]
pub enum Observation {
    /// A real guest's run, judged by the model as `run` judges it.
    Boot(Box<RunOutcome>),
    /// The model's own table posing as a guest (dry run).
    Model {
        /// The vectors as the model predicts them.
        observed: Box<Observed>,
        /// The model's verdict on them.
        verdict: Box<Verdict>,
    },
}

impl Observation {
    /// The guest's vectors.
    pub fn observed(&self) -> &Observed {
        match self {
            Observation::Boot(o) => &o.observed,
            Observation::Model { observed, .. } => observed,
        }
    }

    /// The model's verdict (the default oracle's answer), with the rig's stage
    /// and queue checks for a boot.
    pub fn model_verdict(&self) -> &Verdict {
        match self {
            Observation::Boot(o) => &o.verdict,
            Observation::Model { verdict, .. } => verdict,
        }
    }

    /// The whole run (guest report, queue table, stages, timings), for a boot.
    pub fn run(&self) -> Option<&RunOutcome> {
        match self {
            Observation::Boot(o) => Some(o),
            Observation::Model { .. } => None,
        }
    }
}

/// A pair a runner could not run.
#[derive(Debug, thiserror::Error)]
pub enum PairError {
    /// The rig's run failed (QEMU, device, guest, setup).
    #[error(transparent)]
    Run(Box<crate::rig::RunError>),
    /// A test's runner failed on purpose.
    #[cfg(test)]
    #[error("{0}")]
    Fake(&'static str),
}

impl From<crate::rig::RunError> for PairError {
    fn from(e: crate::rig::RunError) -> Self {
        PairError::Run(Box::new(e))
    }
}

/// Runs one pair.
pub trait PairRunner: Send + Sync {
    /// Run `pair` on `topology` (loaded from the pair's file) and `kernel`.
    ///
    /// # Errors
    /// [`PairError`]: a rig error (QEMU, device, guest, setup); a mismatch is
    /// an observation.
    fn run(&self, pair: &PlannedPair, topology: &Topology, kernel: &ResolvedKernel) -> Result<Observation, PairError>;

    /// What this runner does, for reports: `boot` or `model (dry run)`.
    fn mode(&self) -> &'static str;
}

/// The rig options of a matrix's boots (as `run` takes them).
#[derive(Debug, Clone)]
pub struct RigSettings {
    /// Accelerator.
    pub accel: AccelChoice,
    /// Cache folder override.
    pub cache_dir: Option<PathBuf>,
    /// Guest RAM per NUMA node with memory, MiB.
    pub mem_per_node_mib: u32,
    /// Host wall-clock limit of each boot.
    pub deadline: Duration,
    /// The same for topologies marked slow (96 CPUs or more by default).
    pub slow_deadline: Duration,
    /// Boot speed-ups.
    pub speedups: Speedups,
    /// Extra kernel command-line items.
    pub extra_cmdline: Vec<String>,
    /// Keep each pair's console as `<dir>/<pair>.console.log`.
    pub console_dir: Option<PathBuf>,
    /// Faults every pair's device shows the driver (`--inject SPEC`).
    pub inject: Vec<mana_device_api::inject::InjectSpec>,
    /// Run the kernel's selftests in every pair's guest (`--selftests`).
    pub selftests: Option<crate::rig::SelftestsRequest>,
}

/// Boots every pair with [`run_one`].
#[derive(Debug, Clone)]
pub struct BootRunner {
    /// The options of every boot.
    pub settings: RigSettings,
}

/// A pair name as a file name: `/` and other path-unfriendly characters as `_`.
pub fn file_name(pair: &str) -> String {
    pair.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.@+".contains(c) { c } else { '_' }).collect()
}

impl PairRunner for BootRunner {
    fn run(&self, pair: &PlannedPair, topology: &Topology, kernel: &ResolvedKernel) -> Result<Observation, PairError> {
        let s = &self.settings;
        let mut req = kernel.request(Path::new(&pair.file));
        req.accel = s.accel;
        req.cache_dir.clone_from(&s.cache_dir);
        req.mem_per_node_mib = s.mem_per_node_mib;
        req.deadline = if topology.slow() { s.slow_deadline.max(s.deadline) } else { s.deadline };
        req.speedups = s.speedups;
        req.extra_cmdline.clone_from(&s.extra_cmdline);
        req.label = Some(pair.kernel.clone());
        req.console_log = s.console_dir.as_ref().map(|d| d.join(format!("{}.console.log", file_name(&pair.name))));
        req.inject.clone_from(&s.inject);
        req.selftests.clone_from(&s.selftests);
        req.arch = pair.arch;
        Ok(Observation::Boot(Box::new(run_one(&req)?)))
    }

    fn mode(&self) -> &'static str {
        "boot"
    }
}

/// Answers every pair with the model's own table (hidden `--dry-run`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelRunner;

/// The PCI address the dry run's NIC has (QEMU's pxb-pcie bus 0x41 behind a root port).
const DRY_RUN_BDF: &str = "0000:41:00.0";
/// Its first Linux IRQ number.
const DRY_RUN_FIRST_IRQ: u32 = 24;

impl PairRunner for ModelRunner {
    fn run(&self, pair: &PlannedPair, topology: &Topology, kernel: &ResolvedKernel) -> Result<Observation, PairError> {
        let expected = expected_table(&topology.to_qemu_numbering(), kernel.gen);
        // A dry run of the formats (no guest): the model's table stands in for one.
        let observed = Observed::as_model_predicts(&expected, DRY_RUN_BDF, DRY_RUN_FIRST_IRQ);
        let mut verdict = judge(topology, &observed, &expected);
        verdict.run.name.clone_from(&pair.name);
        Ok(Observation::Model { observed: Box::new(observed), verdict: Box::new(verdict) })
    }

    fn mode(&self) -> &'static str {
        "model (dry run)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_names_become_file_names() {
        assert_eq!(file_name("seed-002@build:79684e84"), "seed-002@build_79684e84");
        assert_eq!(file_name("a/b c@6.12-min"), "a_b_c@6.12-min");
    }
}
