//! A selftest run's guest side (`run --selftests`, `cargo xtask selftests`):
//! the kernel source's test tree, the tests chosen, the series' baseline,
//! the guest tools and the remote NIC's driver, prepared before the boot
//! ([`prepare`]) and put into the boot request ([`add_to_boot`]).

use crate::kbuild::source::{self, SourceSpec};
use crate::provision::tools::{GuestFile, GuestLink};
use crate::provision::{selftest_tools, KernelInstall, Provisioned};
use crate::qemu::BootRequest;
use crate::selftests::baseline::Baseline;
use crate::selftests::{self as st, catalog, remote_modules, tree};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a run's selftests are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelftestsRequest {
    /// `--tests` patterns (empty: the tests the rig knows, [`catalog::KNOWN`]).
    pub patterns: Vec<String>,
    /// `--source`: the tree the tests come from (None: the Debian
    /// `linux-source-<series>` pinned for the kernel's series, or its fallback).
    pub source: Option<SourceSpec>,
    /// Guest seconds one test program may take.
    pub timeout_s: u32,
    /// The test programs' timer slack, microseconds (0: the kernel's own;
    /// [`st::DEFAULT_TIMER_SLACK_US`]).
    pub timer_slack_us: u32,
}

impl Default for SelftestsRequest {
    fn default() -> Self {
        SelftestsRequest {
            patterns: Vec::new(),
            source: None,
            timeout_s: st::DEFAULT_TEST_TIMEOUT_S,
            timer_slack_us: st::DEFAULT_TIMER_SLACK_US,
        }
    }
}

/// A selftest run, prepared.
#[derive(Debug, Clone)]
pub struct PreparedSelftests {
    /// The test programs, in the order they run (relative to drivers/net).
    pub tests: Vec<String>,
    /// The series' baseline.
    pub baseline: Baseline,
    /// The tests' source.
    pub source_label: String,
    /// Guest seconds one program may take.
    pub timeout_s: u32,
    /// The programs' timer slack, microseconds (0: the kernel's own).
    pub timer_slack_us: u32,
    files: Vec<GuestFile>,
    links: Vec<GuestLink>,
}

/// A selftest run that cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SelftestsError {
    /// The cache has no selftest tools, even after provisioning them.
    #[error("the selftests' guest tools are still missing in {} after setup", cache.display())]
    NoTools {
        /// The cache folder.
        cache: PathBuf,
    },
    /// Linux 6.1 has almost none of the tests.
    #[error(
        "Linux 6.1 has almost none of the drivers/net selftests (no drivers/net/lib/py: the Python library and \
         its tests came in 6.10): selftest runs take 6.12 or 7.x"
    )]
    TooOld,
    /// The kernel has no pinned source and no `--source` was given.
    #[error(
        "kernel {release} has no pinned Debian source of its series in guest-images/kernel-sources.lock: name the \
         tests' tree with --source"
    )]
    NoSource {
        /// The kernel's release.
        release: String,
    },
    /// The source cannot be downloaded or unpacked.
    #[error("the selftests' source {label}")]
    Source {
        /// The source's label.
        label: String,
        /// Why.
        #[source]
        source: Box<crate::kbuild::KbuildError>,
    },
    /// The tree or its helpers cannot be prepared.
    #[error(transparent)]
    Tree(#[from] tree::TreeError),
    /// A `--tests` pattern matches nothing.
    #[error(transparent)]
    Select(#[from] catalog::SelectError),
    /// The source has none of the tests the rig runs.
    #[error("{source_label} has none of the tests the rig runs ({})", tests.join(", "))]
    NoneKnown {
        /// The source's label.
        source_label: String,
        /// The tests it has.
        tests: Vec<String>,
    },
    /// The series' baseline cannot be read.
    #[error(transparent)]
    Baseline(#[from] crate::selftests::baseline::BaselineError),
    /// The remote NIC's modules or the tools' files are not there.
    #[error(transparent)]
    Provision(Box<crate::provision::ProvisionError>),
    /// The tests' `net.config` files cannot be written.
    #[error("net.config in {}: {error}", dir.display())]
    NetConfig {
        /// The run's temporary folder.
        dir: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// A file of the run's temporary folder cannot be written.
    #[error("{}: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

impl From<crate::provision::ProvisionError> for SelftestsError {
    fn from(e: crate::provision::ProvisionError) -> Self {
        SelftestsError::Provision(Box::new(e))
    }
}

/// Prepare the tests of `kernel` for a run whose temporary folder is `dir`:
/// the source (downloaded and unpacked on first use), its tree and helpers,
/// the selection, the baseline, the guest tools and the remote NIC's modules.
///
/// # Errors
/// [`SelftestsError`]: tools that cannot be provisioned, a kernel without a
/// pinned source (and no `--source`), a source without the tests, a helper
/// that does not build, a `--tests` pattern that matches nothing.
pub fn prepare(
    req: &SelftestsRequest,
    prov: &Provisioned,
    kernel: &KernelInstall,
    dir: &Path,
) -> Result<PreparedSelftests, SelftestsError> {
    // A cache that predates the lock's [selftests], or holds other pins of
    // it: provisioned now, as a first run provisions everything.
    let provisioned_now;
    let tools = match prov.selftest_tools.as_ref() {
        Some(t) => t,
        None => {
            eprintln!(
                "manarig: the selftests' guest tools in {} are missing or pinned otherwise; provisioning them",
                prov.cache.display()
            );
            provisioned_now =
                crate::provision::setup(&prov.cache, &crate::provision::SetupOptions::default(), &mut |line| {
                    eprintln!("setup: {line}")
                })?;
            provisioned_now
                .selftest_tools
                .as_ref()
                .ok_or_else(|| SelftestsError::NoTools { cache: prov.cache.clone() })?
        }
    };
    let spec = match &req.source {
        Some(s) => s.clone(),
        None if kernel.release.starts_with("6.1.") => return Err(SelftestsError::TooOld),
        None => {
            let pin = st::debian_source_of(&kernel.release)
                .ok_or_else(|| SelftestsError::NoSource { release: kernel.release.clone() })?;
            SourceSpec::Debian(pin)
        }
    };
    let mut progress = |line: &str| eprintln!("manarig: {line}");
    // The pin itself while it is unpacked or in the archive, else the newest
    // version of its package (the series), as kernel builds take it.
    let spec = source::resolve(&spec, &prov.cache, &mut progress)
        .map_err(|e| SelftestsError::Source { label: spec.label(), source: Box::new(e) })?;
    let src = source::prepare(&spec, &prov.cache, &mut progress)
        .map_err(|e| SelftestsError::Source { label: spec.label(), source: Box::new(e) })?;
    let series = st::series(&src).unwrap_or_default();
    let t = tree::prepare(&src, &spec.identity(), &spec.label(), &prov.cache, &mut progress)?;
    let tests = catalog::select(&t.tests, &req.patterns, &t.source_label)?;
    if tests.is_empty() {
        return Err(SelftestsError::NoneKnown { source_label: t.source_label, tests: t.tests });
    }
    let baseline = Baseline::shipped(&series)?;
    let modules = remote_modules::remote_modules(&prov.cache, kernel)?;
    let (mut files, links) = selftest_tools::guest_entries(&tools.dir)?;
    files.extend(tree::guest_files(&t)?);
    files.extend(
        st::net_config_files(dir).map_err(|error| SelftestsError::NetConfig { dir: dir.to_path_buf(), error })?,
    );
    let order = dir.join("remote-order");
    let mut names = String::new();
    for m in &modules {
        let name = m.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        names.push_str(&name);
        names.push('\n');
        files.push(GuestFile {
            guest_path: format!("lib/modules/manarig/remote/{name}"),
            host: m.clone(),
            mode: 0o644,
        });
    }
    std::fs::write(&order, names).map_err(|error| SelftestsError::Write { path: order.clone(), error })?;
    files.push(GuestFile { guest_path: "lib/modules/manarig/remote/order".into(), host: order, mode: 0o644 });
    Ok(PreparedSelftests {
        tests,
        baseline,
        source_label: t.source_label,
        timeout_s: req.timeout_s,
        timer_slack_us: req.timer_slack_us,
        files,
        links,
    })
}

/// The selftests into `boot`: their files and links (a link where the
/// initramfs already has a file, ethtool's loader, is left out), the agent's
/// `manarig.selftests`, and the host deadline stretched by each program's timeout.
pub fn add_to_boot(boot: &mut BootRequest<'_>, prepared: &PreparedSelftests) {
    let taken: std::collections::HashSet<String> = boot.extra_files.iter().map(|f| f.guest_path.clone()).collect();
    boot.extra_files.extend(prepared.files.iter().filter(|f| !taken.contains(&f.guest_path)).cloned());
    boot.extra_links.extend(prepared.links.iter().filter(|l| !taken.contains(&l.guest_path)).cloned());
    boot.agent.selftests = Some(prepared.tests.clone());
    boot.agent.selftest_timeout = Some(prepared.timeout_s);
    boot.agent.selftest_slack_ns = (prepared.timer_slack_us > 0).then(|| u64::from(prepared.timer_slack_us) * 1000);
    let n = u64::try_from(prepared.tests.len()).unwrap_or(u64::MAX);
    boot.deadline += Duration::from_secs(n.saturating_mul(u64::from(prepared.timeout_s)) + 120);
}
