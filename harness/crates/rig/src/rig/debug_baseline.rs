//! What a debug kernel's reports are judged against ([`Against`]): for a
//! patched build of a Debian source, the report classes of the stock build of
//! the same source (same config fragments, no patches) on the same topology
//! and options; for anything else, the mana frames and the stock kernel's own
//! known findings (guest-images/debug-findings.toml).
//!
//! The stock run's classes are kept in `<cache>/debug-baselines/` per stock
//! build, topology and options, so only the first patched run of a
//! combination pays for the stock boot.

use super::outcome::RunOutcome;
use super::request::RunRequest;
use crate::kbuild::{self, source::SourceSpec, BuildRequest, KbuildError};
use crate::provision::KernelInstall;
use crate::verdict::debug_against::known_findings;
use crate::verdict::debug_reports::{all_reports, Against, DebugLog};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A stock run's report classes, as cached.
#[derive(Debug, Serialize, Deserialize)]
struct Baseline {
    /// The stock run (`6.12-debug stock (build 1a2b3c4d) on seed-002`).
    label: String,
    /// Its kernel release.
    release: String,
    /// Its report classes (`KASAN: BUG: KASAN: slab-use-after-free in f`, …).
    classes: BTreeSet<String>,
}

/// What a debug run is judged against could not be had.
#[derive(Debug, thiserror::Error)]
pub enum DebugBaselineError {
    /// guest-images/debug-findings.toml does not parse.
    #[error("{0}")]
    KnownFindings(String),
    /// The build, the pinned sources, or the stock build cannot be had.
    #[error(transparent)]
    Kbuild(Box<KbuildError>),
    /// The stock build does not build.
    #[error("building the stock debug kernel the patched build is judged against")]
    StockBuild(#[source] Box<KbuildError>),
    /// The stock build's run failed.
    #[error("the stock run of {label}")]
    StockRun {
        /// The stock run (`6.12-debug stock (build 1a2b3c4d) on seed-002`).
        label: String,
        /// Why (the run's error: [`RunError`](super::RunError)).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The topology file cannot be read for the options' key.
    #[error("{}: {error}", path.display())]
    Topology {
        /// The topology file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The stock run's classes cannot be kept in the cache.
    #[error("keeping the stock run's classes in {}: {error}", path.display())]
    Keep {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

impl From<KbuildError> for DebugBaselineError {
    fn from(e: KbuildError) -> Self {
        DebugBaselineError::Kbuild(Box::new(e))
    }
}

/// The shape of the kept classes ([`crate::verdict::debug_reports::DebugReport::class`]):
/// a stock run kept under another shape is run again, not compared.
const CLASSES_VERSION: &str = "c2";

/// What `req`'s run on `kernel` (a debug kernel) is judged against: the stock
/// build's classes when `kernel` is a patched build of a Debian source (the
/// stock build is built, and run once with `run_one` on this topology and
/// these options, when not cached), else the mana frames with the kernel's
/// known findings.
///
/// # Errors
/// [`DebugBaselineError`]: the stock build cannot be made, or its run fails
/// to report.
pub fn against<E: std::error::Error + Send + Sync + 'static>(
    req: &RunRequest,
    kernel: &KernelInstall,
    cache: &Path,
    run_one: &dyn Fn(&RunRequest) -> Result<RunOutcome, E>,
) -> Result<Against, DebugBaselineError> {
    let known = || -> Result<Against, DebugBaselineError> {
        Ok(Against::ManaFrames { known: known_findings(&kernel.release).map_err(DebugBaselineError::KnownFindings)? })
    };
    let Some(key) = kernel.build_key() else { return known() };
    let built = kbuild::load_build(key, cache)?;
    if built.stamp.patches.is_empty() {
        return known();
    }
    let Some(stock_req) = stock_request(&built.stamp, cache)? else {
        eprintln!(
            "manarig: debug reports: {} is not a patched Debian source with manarig's fragments: judged by the mana \
             frames, not against a stock run",
            built.stamp.source
        );
        return known();
    };
    let stock = kbuild::build(&stock_req, &mut |line| eprintln!("kernel stock debug: {line}"))
        .map_err(|e| DebugBaselineError::StockBuild(Box::new(e)))?;
    let short = &stock.stamp.key[..16.min(stock.stamp.key.len())];
    let path = cache.join("debug-baselines").join(format!("{short}-{}-{CLASSES_VERSION}.json", options_key(req)?));
    if let Some(b) = std::fs::read(&path).ok().and_then(|t| serde_json::from_slice::<Baseline>(&t).ok()) {
        return Ok(Against::Stock { label: b.label, classes: b.classes });
    }
    let topology = req.topology.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let label = format!("{} stock (build {}) on {topology}", stock.stamp.source, &short[..8]);
    eprintln!("manarig: debug reports: running {label} once for the classes of its reports (cached afterwards)");
    let mut stock_run = req.clone();
    stock_run.custom_kernel = Some(stock.install());
    stock_run.model_basis = stock.model_basis();
    stock_run.label = Some("stock".to_owned());
    let outcome =
        run_one(&stock_run).map_err(|e| DebugBaselineError::StockRun { label: label.clone(), source: Box::new(e) })?;
    let r = &outcome.report;
    let log = DebugLog {
        state: r.debug.as_deref(),
        kmemleak: &r.kmemleak,
        klog: &r.klog,
        vectors: &outcome.observed.vectors,
        nr_cpus: outcome.verdict.run.nr_cpu_ids,
    };
    let classes: BTreeSet<String> = all_reports(&log).iter().map(|r| r.class()).collect();
    let baseline = Baseline { label, release: stock.stamp.release.clone(), classes };
    std::fs::create_dir_all(path.parent().unwrap_or(cache))
        .and_then(|()| std::fs::write(&path, serde_json::to_vec_pretty(&baseline).unwrap_or_default()))
        .map_err(|error| DebugBaselineError::Keep { path: path.clone(), error })?;
    Ok(Against::Stock { label: baseline.label, classes: baseline.classes })
}

/// The stock build of a patched build's stamp: the same pinned Debian source
/// and debug config, no patches. `None` for a user's tree or an extra fragment.
fn stock_request(stamp: &kbuild::BuildStamp, cache: &Path) -> Result<Option<BuildRequest>, KbuildError> {
    let standard = stamp.fragments.len() == 2 && stamp.fragments.iter().any(|f| f == kbuild::DEBUG_FRAGMENT_NAME);
    let Some(rest) = stamp.source_identity.strip_prefix("debian:") else { return Ok(None) };
    let (package, rest) = rest.split_once('=').unwrap_or((rest, ""));
    let mut words = rest.split_whitespace();
    let (Some(version), Some(sha)) = (words.next(), words.next().and_then(|w| w.strip_prefix("sha256="))) else {
        return Ok(None);
    };
    let Some(pin) = kbuild::source::pins()?.into_iter().find(|p| p.package == package) else { return Ok(None) };
    if !standard {
        return Ok(None);
    }
    let source =
        SourceSpec::Debian(kbuild::source::SourcePin { version: version.to_owned(), sha256: sha.to_owned(), ..pin });
    Ok(Some(BuildRequest {
        debug: true,
        deadline: Duration::from_secs(4 * 3600),
        ..BuildRequest::new(source, cache.to_path_buf())
    }))
}

/// A short key of everything in `req` that changes what the guest does: the
/// topology file's bytes, its scenario, channels, re-probe, traffic,
/// irqbalance, selftests, injections, the extra command line, memory.
fn options_key(req: &RunRequest) -> Result<String, DebugBaselineError> {
    let file = std::fs::read(&req.topology)
        .map_err(|error| DebugBaselineError::Topology { path: req.topology.clone(), error })?;
    let mut h = Sha256::new();
    h.update(&file);
    let text = format!(
        "{:?}|{:?}|{}|{:?}|{:?}|{:?}|{:?}|{}",
        req.scenario,
        req.channels,
        req.reprobe,
        req.traffic,
        req.selftests,
        req.inject.iter().map(ToString::to_string).collect::<Vec<_>>(),
        req.extra_cmdline,
        req.mem_per_node_mib
    );
    h.update(text.as_bytes());
    Ok(h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect())
}
