#![doc = include_str!("matrix-schema.md")]

use super::kernels::KernelFacts;
use super::oracle::Judged;
use super::shard::Shard;
use super::spec::{MatrixSpec, PlannedPair};
use crate::verdict::baseline::Baseline;
use crate::verdict::{CheckStatus, RigErrorReport, RowOutcome, Status, Verdict, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};

/// Version of the matrix document ([`MatrixReport`]). Bumped on any change a
/// consumer could notice (a renamed or removed field, a changed meaning); new
/// fields may appear without a bump. The verdict documents inside carry their
/// own `schema_version` ([`SCHEMA_VERSION`]).
pub const MATRIX_SCHEMA_VERSION: u32 = 1;

/// The matrix document's `kind`.
pub const KIND: &str = "manarig-matrix";

/// A matrix's results (one shard's, or several merged): `--format json` and
/// `<out>/matrix.json`, the input of `matrix-merge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixReport {
    /// [`MATRIX_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always [`KIND`].
    pub kind: String,
    /// The matrix and how this document's shards ran.
    pub header: Header,
    /// The pairs of this document's shards, in plan order.
    pub pairs: Vec<PairRecord>,
}

/// The matrix and how this document's shards ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// What the matrix runs (equal on every shard).
    pub spec: MatrixSpec,
    /// [`MatrixSpec::digest`].
    pub spec_digest: String,
    /// Every pair of the matrix, all shards, in plan order.
    pub plan: Vec<PlannedPair>,
    /// The shards this document holds, by index.
    pub shards: Vec<ShardRun>,
    /// What the matrix knows of each kernel (release, build), by spec order.
    pub kernels: Vec<KernelFacts>,
    /// `boot` or `model (dry run)`.
    pub mode: String,
    /// Names this run of the matrix (KCIDB object ids): `--run-id`, else
    /// GitHub's `GITHUB_RUN_ID`-`GITHUB_RUN_ATTEMPT`, else the start time.
    pub run_id: String,
    /// True when every pair of every shard of the matrix has a result (no
    /// shard missing, nothing interrupted).
    pub complete: bool,
    /// The verdict documents' schema version ([`SCHEMA_VERSION`]).
    pub verdict_schema_version: u32,
}

/// How one shard ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRun {
    /// Which shard.
    pub shard: Shard,
    /// Its pairs.
    pub pairs: usize,
    /// The sum of its pairs' estimated costs, seconds.
    pub planned_cost_s: f64,
    /// When it started (RFC 3339, UTC).
    pub started: String,
    /// Its wall time, seconds (kernel preparation included).
    pub wall_s: f64,
    /// Guests it ran at once, at most.
    pub jobs: u32,
    /// Host CPUs it had.
    pub host_cores: u32,
    /// False when it was interrupted.
    pub complete: bool,
    /// Notes (`--jobs` lowered, interruption).
    pub notes: Vec<String>,
    /// `--random`: the topologies this shard found (shrunk), in plan order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub found: Vec<FoundTopology>,
}

/// How a pair ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PairStatus {
    /// The oracle passed it.
    Pass,
    /// It cannot run on this kernel by what the topology asks for (e.g.
    /// `[scenario] irqbalance` on a kernel without AF_UNIX sockets); nothing booted.
    Skip,
    /// The oracle failed it (a mismatch).
    Fail,
    /// The rig could not run or judge it (bad file, kernel, QEMU, guest, oracle).
    RigError,
    /// It did not run (the matrix was interrupted, or its shard is missing).
    NotRun,
}

impl PairStatus {
    /// `PASS`, `SKIP`, `FAIL`, `ERROR`, `NOT RUN`.
    pub fn word(self) -> &'static str {
        match self {
            PairStatus::Pass => "PASS",
            PairStatus::Skip => "SKIP",
            PairStatus::Fail => "FAIL",
            PairStatus::RigError => "ERROR",
            PairStatus::NotRun => "NOT RUN",
        }
    }
}

/// A pair's document: its verdict, or the rig-error document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PairResult {
    /// The verdict (`run --format json`'s document).
    Verdict(Box<Verdict>),
    /// The rig-error document.
    RigError(RigErrorReport),
}

/// A shrunk topology on which the guest disagrees with the oracle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoundTopology {
    /// The pair that disagreed (`random-s7-3@6.1`).
    pub pair: String,
    /// Its kernel's label.
    pub kernel: String,
    /// The file written, relative to `--out` (`found/random-s7-3-min.toml`).
    pub file: String,
    /// CPUs of the shrunk machine.
    pub cpus: u32,
    /// NUMA nodes of the shrunk machine.
    pub nodes: u32,
    /// The accepted simplifications, in order.
    pub steps: Vec<String>,
    /// Runs the shrink made.
    pub tries: u32,
    /// The original pair's first mismatch.
    pub first_mismatch: Option<String>,
}

/// One pair's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRecord {
    /// The pair as planned.
    #[serde(flatten)]
    pub pair: PlannedPair,
    /// How it ended.
    pub status: PairStatus,
    /// When it started (RFC 3339, UTC); `None` if it did not start.
    pub started: Option<String>,
    /// Its wall time, seconds.
    pub duration_s: Option<f64>,
    /// For a failure, the first mismatching vector (`mana_q0: expected 1, got
    /// 0-1`), else the first failing check.
    pub first_mismatch: Option<String>,
    /// For a rig error the error on one line; for a pair that did not run, why.
    pub error: Option<String>,
    /// The verdict or rig-error document (`None`: did not run).
    pub result: Option<PairResult>,
    /// `--oracle baseline`: the comparison with the baseline kernel's run
    /// (moved vectors, the reviewers' numbers before and after).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Box<Baseline>>,
}

impl PairRecord {
    /// A judged pair.
    pub fn judged(pair: PlannedPair, judged: Judged, started: String, duration_s: f64) -> Self {
        let Judged { verdict, baseline } = judged;
        let status = if verdict.status == Status::Pass { PairStatus::Pass } else { PairStatus::Fail };
        PairRecord {
            pair,
            status,
            started: Some(started),
            duration_s: Some(duration_s),
            first_mismatch: first_mismatch(&verdict),
            error: None,
            result: Some(PairResult::Verdict(Box::new(verdict))),
            baseline,
        }
    }

    /// A pair the rig could not run or judge.
    pub fn rig_error(
        pair: PlannedPair,
        err: &(dyn std::error::Error + 'static),
        started: Option<String>,
        duration_s: Option<f64>,
    ) -> Self {
        let report = RigErrorReport::new(err, &pair.name);
        PairRecord {
            pair,
            status: PairStatus::RigError,
            started,
            duration_s,
            first_mismatch: None,
            error: Some(report.error.clone()),
            result: Some(PairResult::RigError(report)),
            baseline: None,
        }
    }

    /// A pair that cannot run on its kernel, and why (nothing booted).
    pub fn skipped(pair: PlannedPair, why: &str) -> Self {
        PairRecord { status: PairStatus::Skip, ..Self::not_run(pair, why) }
    }

    /// A pair that did not run, and why.
    pub fn not_run(pair: PlannedPair, why: &str) -> Self {
        PairRecord {
            pair,
            status: PairStatus::NotRun,
            started: None,
            duration_s: None,
            first_mismatch: None,
            error: Some(why.to_owned()),
            result: None,
            baseline: None,
        }
    }

    /// The verdict, if the pair was judged.
    pub fn verdict(&self) -> Option<&Verdict> {
        match &self.result {
            Some(PairResult::Verdict(v)) => Some(v),
            _ => None,
        }
    }
}

/// The first mismatching vector of a failed verdict (`mana_q0: expected 1,
/// got 0-1`), else its first failed check (`probe: …`); `None` for a pass.
pub fn first_mismatch(v: &Verdict) -> Option<String> {
    if v.status == Status::Pass {
        return None;
    }
    let cpus = |m: &crate::cpulist::CpuMask| {
        let l = m.to_cpulist();
        if l.is_empty() {
            "none".to_owned()
        } else {
            l
        }
    };
    // A row counts when its check failed: an oracle other than the model drops the
    // per-vector checks, and then the rows' model outcomes decide nothing.
    let failed = |name: &str| v.checks.iter().any(|c| c.name == name && c.status == CheckStatus::Fail);
    let row = v.vectors.iter().find(|r| r.outcome != RowOutcome::Match && failed(&r.name));
    if let Some(r) = row {
        let exp = r.expected.as_ref().map(|e| cpus(&e.smp_affinity_list));
        let got = r.observed.as_ref().map(|o| cpus(&o.smp_affinity_list));
        return Some(match (r.outcome, exp, got) {
            (RowOutcome::Missing, Some(e), _) => format!("{}: missing (expected {e})", r.name),
            (RowOutcome::Unexpected, _, Some(g)) => format!("{}: unexpected (on {g})", r.name),
            (_, Some(e), Some(g)) => format!("{}: expected {e}, got {g}", r.name),
            _ => r.name.clone(),
        });
    }
    v.failures().next().map(|c| format!("{}: {}", c.name, c.message))
}

/// How a whole matrix ended, worst first: what the command's exit code says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Overall {
    /// Every pair passed.
    Pass,
    /// A pair failed, none had a rig error, and nothing is missing.
    Mismatch,
    /// A pair had a rig error, or the matrix is incomplete.
    RigError,
}

impl Overall {
    /// The word the summary and the HTML report give it: `PASS`, `FAIL` or `ERROR`.
    pub fn word(self) -> &'static str {
        match self {
            Overall::Pass => "PASS",
            Overall::Mismatch => "FAIL",
            Overall::RigError => "ERROR",
        }
    }
}

impl MatrixReport {
    /// How the matrix ended.
    pub fn overall(&self) -> Overall {
        let worst = self.pairs.iter().map(|p| p.status).max();
        match worst {
            _ if !self.header.complete => Overall::RigError,
            Some(PairStatus::RigError | PairStatus::NotRun) => Overall::RigError,
            Some(PairStatus::Fail) => Overall::Mismatch,
            _ => Overall::Pass,
        }
    }

    /// Pairs with each status: (pass, fail, rig error, not run).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let n = |s| self.pairs.iter().filter(|p| p.status == s).count();
        (n(PairStatus::Pass), n(PairStatus::Fail), n(PairStatus::RigError), n(PairStatus::NotRun))
    }

    /// `, N skipped` when pairs were skipped, for the count lines.
    pub fn skipped_note(&self) -> String {
        match self.pairs.iter().filter(|p| p.status == PairStatus::Skip).count() {
            0 => String::new(),
            n => format!(", {n} skipped"),
        }
    }

    /// Parse a matrix document, refusing other kinds and schema versions.
    ///
    /// # Errors
    /// A message naming what is wrong (not JSON, another document, another version).
    pub fn from_json(text: &str) -> Result<Self, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let kind = value.get("kind").and_then(|k| k.as_str()).unwrap_or("");
        if kind != KIND {
            return Err(format!(
                "not a manarig matrix document (kind {kind:?}; `matrix --format json` and <out>/matrix.json are)"
            ));
        }
        let version = value.get("schema_version").and_then(serde_json::Value::as_u64);
        if version != Some(u64::from(MATRIX_SCHEMA_VERSION)) {
            return Err(format!(
                "matrix schema_version {version:?}: this manarig reads version {MATRIX_SCHEMA_VERSION} only"
            ));
        }
        let verdicts = value.pointer("/header/verdict_schema_version").and_then(serde_json::Value::as_u64);
        if verdicts != Some(u64::from(SCHEMA_VERSION)) {
            return Err(format!(
                "verdict schema_version {verdicts:?}: this manarig reads version {SCHEMA_VERSION} only"
            ));
        }
        serde_json::from_value(value).map_err(|e| format!("matrix document: {e}"))
    }
}

/// `t` as RFC 3339 in UTC with milliseconds (`2026-12-01T09:58:00.123+00:00`).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
    chrono::DateTime::from_timestamp(secs, d.subsec_nanos())
        .map(|dt| dt.to_rfc3339_opts(chrono::SecondsFormat::Millis, false))
        .unwrap_or_else(|| "1970-01-01T00:00:00.000+00:00".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_764_583_080_123);
        assert_eq!(rfc3339(t), "2025-12-01T09:58:00.123+00:00");
    }

    #[test]
    fn the_first_mismatch_names_the_vector_expected_and_got() {
        use crate::model::{expected_table, KernelGen};
        use crate::topology::Topology;
        let path = format!("{}/../../../topologies/seed-002.toml", env!("CARGO_MANIFEST_DIR"));
        let topo = Topology::load(path).expect("seed 002").to_qemu_numbering();
        let guest =
            crate::verdict::Observed::as_model_predicts(&expected_table(&topo, KernelGen::V6_12), "0000:41:00.0", 24);
        let mut v = crate::verdict::judge(&topo, &guest, &expected_table(&topo, KernelGen::V6_1));
        // The guest ran 6.12 (irq_setup, seed 002's table), the 6.1 model wants one CPU each.
        // (The model's 6.12 table as the guest: the test is about the mismatch's wording.)
        v.status = Status::Fail;
        assert_eq!(first_mismatch(&v).as_deref(), Some("mana_q0: expected 1, got 0-1"));
        v.status = Status::Pass;
        assert_eq!(first_mismatch(&v), None);
    }

    #[test]
    fn other_documents_and_versions_are_refused() {
        assert!(MatrixReport::from_json("[]").expect_err("an array").contains("not a manarig matrix"));
        let e = MatrixReport::from_json(r#"{"kind":"manarig-matrix","schema_version":2}"#).expect_err("version 2");
        assert!(e.contains("schema_version Some(2)"), "{e}");
        assert!(MatrixReport::from_json("{").expect_err("not JSON").starts_with("not JSON"));
    }
}
