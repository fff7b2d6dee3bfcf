//! `cargo xtask bench kernel`: what a kernel patch costs to test on this machine.
//!
//! 1. cold build of Debian's linux-source-6.12 with manarig's config (no
//!    ccache, fresh object folder) — target under 10 minutes on 2 cores;
//! 2. incremental rebuild after touching gdma_main.c — target under 1 minute;
//! 3. boot to report on seed 002's machine: the minimal kernel vs Debian's
//!    pinned 6.12 cloud kernel;
//! 4. the debug kernels (`6.1-debug`, `6.12-debug`, `7.x-debug`: KASAN,
//!    kmemleak, lockdep): each one's build time (as recorded in its build.json
//!    when it is cached, marked when that build went on from an earlier one's objects) and
//!    its boot to report on seed 002, with the `debug_reports` check's outcome.
//!
//! Numbers are printed, not asserted (the machine may be shared).

use anyhow::Context as _;
use harness::kbuild::{build, copy_tree, detect, source, source::SourceSpec, BuildRequest};
use harness::model::KernelGen;
use harness::rig::{run_one, RunRequest};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The source the benchmark builds.
pub const BENCH_SOURCE: &str = "debian:linux-source-6.12";

fn request(source: SourceSpec, cache: &Path, fresh: bool) -> BuildRequest {
    BuildRequest {
        // Cold means cold: no compiler cache either.
        ccache: false,
        deadline: Duration::from_secs(3 * 3600),
        fresh,
        ..BuildRequest::new(source, cache.to_path_buf())
    }
}

/// Run the benchmark; `skip_cold` reuses the benchmark tree's last build
/// (incremental and boot only). Prints one line per measurement.
///
/// # Errors
/// Build or run failures.
pub fn run(cache: &Path, skip_cold: bool) -> anyhow::Result<()> {
    let log = |l: &str| eprintln!("bench kernel: {l}");
    let debian = SourceSpec::parse(BENCH_SOURCE)?;
    let pristine = source::prepare(&debian, cache, &mut |l| log(l))?;
    // A private hard-link copy, so that touching a file does not touch the cache's source.
    let tree = cache.join("kbuild/bench/linux-6.12");
    if !tree.join("Makefile").is_file() {
        std::fs::create_dir_all(tree.parent().unwrap_or(cache))?;
        copy_tree(&pristine, &tree)?;
    }
    let gdma = tree.join(detect::GDMA_MAIN);
    unshare(&gdma)?;
    let spec = SourceSpec::Tree(tree.canonicalize()?);
    let nproc = std::thread::available_parallelism().map_or(2, |n| n.get());

    if !skip_cold {
        let b = build(&request(spec.clone(), cache, true), &mut |l| log(l))?;
        let t = b.stamp.timings;
        println!(
            "kernel cold build (linux-source-6.12, manarig config, no ccache, -j{nproc}, nice): {:.0} s (config {:.0} s + make {:.0} s; target < 600 s)",
            t.config_s + t.make_s,
            t.config_s,
            t.make_s
        );
    }
    // Incremental: a new mtime on gdma_main.c (content unchanged).
    let text = std::fs::read(&gdma).with_context(|| format!("reading {}", gdma.display()))?;
    std::fs::write(&gdma, text).with_context(|| format!("writing {}", gdma.display()))?;
    let b = build(&request(spec, cache, false), &mut |l| log(l))?;
    println!(
        "kernel incremental rebuild after touching gdma_main.c: {:.1} s (make {:.1} s; target < 60 s)",
        b.stamp.timings.config_s + b.stamp.timings.make_s,
        b.stamp.timings.make_s
    );

    let topo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../topologies/seed-002.toml");
    for (label, custom) in [("minimal (built)", Some(b.install())), ("Debian 6.12.117 cloud", None)] {
        let mut req = RunRequest::new(&topo, KernelGen::V6_12);
        req.cache_dir = Some(cache.to_path_buf());
        req.custom_kernel = custom;
        let out = run_one(&req)?;
        println!(
            "boot to report, seed-002, {label} kernel ({}): {:.1} s (whole run {:.1} s, verdict {:?})",
            out.observed.kernel_release,
            out.timings.boot_to_report.as_secs_f64(),
            out.timings.total.as_secs_f64(),
            out.verdict.status
        );
    }
    debug_kernels(cache, &topo)
}

/// Step 4: the debug kernels' build and boot times, one generation after the
/// other (each built on first use: about an hour on 2 cores).
fn debug_kernels(cache: &Path, topo: &Path) -> anyhow::Result<()> {
    for gen in [KernelGen::V6_1, KernelGen::V6_12, KernelGen::V7] {
        debug_kernel(gen, cache, topo)?;
    }
    Ok(())
}

/// One debug kernel: its build time and its boot to report on `topo`.
fn debug_kernel(gen: KernelGen, cache: &Path, topo: &Path) -> anyhow::Result<()> {
    let log = |l: &str| eprintln!("bench kernel: {l}");
    let built = harness::kbuild::minimal::ensure(gen, cache, true, &mut |l| log(l))?;
    let t = built.stamp.timings;
    let recorded = match (built.cached, t.incremental) {
        (_, true) => ", incremental: on the objects of an earlier or interrupted build",
        (true, false) => ", as recorded when it was built",
        (false, false) => "",
    };
    println!(
        "debug kernel build ({gen}-debug, manarig + debug config, ccache, -j{}, nice{recorded}): {:.0} s (config {:.0} s + make {:.0} s)",
        std::thread::available_parallelism().map_or(2, |n| n.get()),
        t.config_s + t.make_s,
        t.config_s,
        t.make_s
    );
    // The build in hand, not `kernel_choice::resolve`, which would look it up again.
    let mut req = RunRequest::new(topo, gen);
    req.custom_kernel = Some(built.install());
    req.model_basis = built.model_basis();
    req.label = Some(format!("{gen}-debug"));
    req.debug = true;
    req.cache_dir = Some(cache.to_path_buf());
    let out = run_one(&req)?;
    let check = out.verdict.checks.iter().find(|c| c.name == harness::verdict::DEBUG_REPORTS_CHECK);
    println!(
        "boot to report, seed-002, debug kernel ({}): {:.1} s (whole run {:.1} s, verdict {:?}, debug_reports: {})",
        out.observed.kernel_release,
        out.timings.boot_to_report.as_secs_f64(),
        out.timings.total.as_secs_f64(),
        out.verdict.status,
        check.map_or_else(|| "missing".to_string(), |c| format!("{:?}: {}", c.status, c.message))
    );
    Ok(())
}

/// Give `path` its own inode, so that touching it leaves the cache's hard-linked source alone.
fn unshare(path: &Path) -> anyhow::Result<()> {
    let tmp = path.with_extension("bench-unshare");
    std::fs::copy(path, &tmp).with_context(|| format!("copying {}", path.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {}", tmp.display()))
}
