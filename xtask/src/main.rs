//! `cargo xtask`: project automation.
//!
//! `cargo xtask test` runs the lint gates ([`lint`]: fmt, clippy, rustdoc,
//! shellcheck), provisions what the tests need (the harness's `setup`: QEMU, the
//! pinned kernels and busybox, into the cache named by `MANARIG_CACHE` or the
//! default), builds the test kernels and then runs the test suite with nextest
//! (the command README.md and .ci/run use); `cargo xtask lint` runs the gates
//! alone. Every other subcommand, `setup` included, is the harness's `manarig`
//! command line.
//! `cargo xtask check-workflow` validates `.github/workflows/manarig-matrix.yml`
//! against GitHub's workflow schema ([`workflow_check`]).
//! `cargo xtask bench [model] [boot] [--slow] [--runs N] [--update-baseline]`
//! runs the benchmarks: `model` (release build, `cargo bench`) and `boot`
//! (real runs, see [`bench_boot`]); both when no section is named.
//! `cargo xtask bench kernel [--skip-cold]` times guest-kernel builds (cold and
//! incremental) and boot-to-report, minimal vs Debian kernel, and each debug kernel.
//! `cargo xtask bench matrix [--kernel K[,K2…]] [--out DIR]` runs the fast
//! matrix ([`bench_matrix`]: every topology under 96 vCPUs × the minimal kernels).
//! `cargo xtask fuzz --smoke | TARGET [--time S] | --list | --record` builds
//! and runs the libFuzzer targets of fuzz/ on stable Rust ([`fuzz`]); `test`
//! ends with the smoke run.
//!
//! The commands that boot a guest (`run`, `compare`, `boot`, `matrix`, `soak`, `bench`, `test`)
//! first build the emulated NIC's binary, `mana-device`, in this program's
//! profile ([`build_device`]): the rig runs it from beside this executable
//! (harness/crates/rig/src/rig/device.rs), and `cargo run -p xtask` builds only xtask.

use std::process::{Command, ExitCode};

mod bench_boot;
mod bench_boot_arm64;
mod bench_kernel;
mod bench_matrix;
mod bench_selftests;
mod bench_traffic;
mod boot_split;
mod fuzz;
mod lint;
mod test_kernels;
mod workflow_check;

/// The subcommands that boot a guest with the emulated NIC (or may: `bench`, `test`).
const BOOTING: [&str; 7] = ["run", "compare", "boot", "bench", "test", "matrix", "soak"];

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let command = args.get(1).and_then(|a| a.to_str());
    if command.is_some_and(|c| BOOTING.contains(&c)) {
        if let Err(e) = build_device() {
            eprintln!("cargo xtask: {e}");
            return ExitCode::from(2);
        }
    }
    match command {
        Some("test") => run_tests(&args[2..]),
        Some("lint") => run_lint(),
        Some("check-workflow") => workflow_check::main(),
        Some("fuzz") => fuzz::main(&args[2..]),
        Some("bench") => run_benches(&args[2..]),
        _ => harness::cli::main_with_args(
            std::iter::once(std::ffi::OsString::from("cargo xtask")).chain(args.into_iter().skip(1)),
        ),
    }
}

/// `cargo xtask lint`: formatting, clippy, rustdoc and shellcheck ([`lint`]).
fn run_lint() -> ExitCode {
    match lint::run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("cargo xtask lint: a gate failed (see above)");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("cargo xtask lint: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// `cargo build --quiet -p device-model --bin mana-device` in the profile this
/// program was built in (its folder: `release` → `--release`, `debug` → the
/// default, another name → `--profile NAME`), so that the binary beside this
/// one is current. Takes about 0.15 s when nothing changed.
///
/// # Errors
/// Cargo cannot run or the build fails (cargo has printed why).
fn build_device() -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let profile = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().and_then(|d| d.file_name()).map(|n| n.to_string_lossy().into_owned()));
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--quiet",
        "-p",
        "device-model",
        "--bin",
        "mana-device",
        "-p",
        "manarig-flows",
        "--bin",
        "manarig-flows",
    ]);
    match profile.as_deref() {
        Some("release") => {
            cmd.arg("--release");
        }
        Some("debug") | None => {}
        Some(other) => {
            cmd.args(["--profile", other]);
        }
    }
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => {
            Err(format!("building the emulated NIC (`cargo build -p device-model --bin mana-device`) failed ({s})"))
        }
        Err(e) => Err(format!("cannot run cargo to build the emulated NIC: {e}")),
    }
}

/// The test tiers (`.config/nextest.toml` has each profile's filter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    /// Unit, model, device and CLI tests: no guest, no kernel, no provisioning.
    Quick,
    /// What CI runs: the quick tier and the VM tests (nextest's default profile).
    Default,
    /// Everything: also the 96-vCPU+ machines and the debug kernels.
    Slow,
}

impl Tier {
    fn profile(self) -> &'static str {
        match self {
            Tier::Quick => "quick",
            Tier::Default => "default",
            Tier::Slow => "slow",
        }
    }
}

/// `cargo xtask test [--quick | --slow] [nextest args]`.
///
/// - `--quick`: nextest's `quick` profile alone (no lint, no provisioning, no
///   kernel, no fuzzing): the loop for a change to the model, the verdict or
///   the device.
/// - default (CI): the lint gates, provisioning, every kernel the tests boot
///   built first and said so ([`test_kernels`]), the default profile with
///   kernel builds refused inside tests, then the fuzz smoke run.
/// - `--slow`: the same with the slow profile and the debug kernels.
fn run_tests(extra: &[std::ffi::OsString]) -> ExitCode {
    let wants_help = extra.iter().any(|a| a == "--help" || a == "-h");
    if wants_help {
        println!(
            "cargo xtask test [--quick | --slow] [NEXTEST ARGS]\n  --quick  unit, model, device and CLI tests \
             without a guest (nextest profile quick)\n  (none)   lint, setup, test kernels, the default profile \
             (quick + VM tests), fuzz smoke (what CI runs)\n  --slow   also the 96-vCPU+ machines and the debug \
             kernels (nextest profile slow)\n"
        );
        return nextest(Tier::Default, extra);
    }
    let tier = if extra.iter().any(|a| a == "--quick") {
        Tier::Quick
    } else if extra.iter().any(|a| a == "--slow") {
        Tier::Slow
    } else {
        Tier::Default
    };
    let extra: Vec<std::ffi::OsString> = extra.iter().filter(|a| *a != "--quick" && *a != "--slow").cloned().collect();
    if tier == Tier::Quick {
        return nextest(tier, &extra);
    }
    // The gates first: a formatting or clippy failure must not wait for a kernel build.
    // All of them run, and the tests too, so that one CI run shows every problem.
    let lint_ok = match lint::run() {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("cargo xtask test: lint: {e:#}");
            false
        }
    };
    // The boot tests need the provisioned cache, the arm64 guests' part too
    // (harness/tests/arm64.rs: provisioned here, not by two tests at once);
    // setup is idempotent and takes well under a second once done.
    for arch in harness::topology::Arch::ALL {
        let setup = harness::cli::setup::SetupArgs { cache_dir: None, update_lock: false, private_qemu: false, arch };
        if harness::cli::setup::run(&setup) != ExitCode::from(harness::cli::Exit::Pass) {
            eprintln!("cargo xtask test: setup ({arch}) failed (see above); the boot tests cannot run without it");
            return ExitCode::from(2);
        }
    }
    let kernels = harness::provision::cache_dir(None)
        .map_err(anyhow::Error::from)
        .and_then(|cache| test_kernels::ensure(&cache, tier == Tier::Slow));
    if let Err(e) = kernels {
        eprintln!("cargo xtask test: kernel build failed: {e:#}");
        return ExitCode::from(2);
    }
    let tests = nextest(tier, &extra);
    // Every fuzz target briefly (fuzz/, docs/fuzzing.md): a crash the seeds
    // or a short run find fails the suite like a test would. Only for the
    // whole suite (CI), not when nextest arguments pick some tests.
    let fuzz_ok = !extra.is_empty()
        || match fuzz::smoke(fuzz::SMOKE_SECONDS) {
            Ok(ok) => ok,
            Err(e) => {
                eprintln!("cargo xtask test: fuzz smoke run: {e:#}");
                false
            }
        };
    if !fuzz_ok {
        eprintln!(
            "cargo xtask test: a fuzz target failed (see `fuzz:` above); `cargo xtask fuzz --smoke` runs them alone"
        );
        return ExitCode::from(1);
    }
    if !lint_ok {
        eprintln!("cargo xtask test: the lint gates failed (see `lint:` above); `cargo xtask lint` runs them alone");
        return ExitCode::from(1);
    }
    tests
}

/// `cargo nextest run --workspace --no-fail-fast --profile P EXTRA`, with
/// kernel builds refused inside the tests (`MANARIG_NO_KERNEL_BUILD`: the
/// kernels were built first).
fn nextest(tier: Tier, extra: &[std::ffi::OsString]) -> ExitCode {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["nextest", "run", "--workspace", "--no-fail-fast", "--profile", tier.profile()])
        .args(extra)
        .env(harness::kbuild::NO_BUILD_ENV, "1")
        .status();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("cargo xtask test: cannot run cargo nextest: {e}");
            ExitCode::from(2)
        }
    }
}

/// Benchmarks `cargo xtask bench` runs, in order: (package, bench target, what it measures).
/// Add a row for each new measurement (e.g. guest boot timings).
const BENCHES: &[(&str, &str, &str)] = &[
    ("manarig-model", "model", "expected IRQ table for the 256-CPU 16-node machine (budget 10 ms)"),
    (
        "device-model",
        "datapath",
        "device data path: 64-byte frames TX and RX through CQ/EQ/MSI-X, one core (target 1 M frames/s each)",
    ),
];

/// `cargo xtask bench --help`.
const BENCH_USAGE: &str =
    "usage: cargo xtask bench [model] [boot] [traffic] [selftests] [--slow] [--arch A] [--runs N] [--update-baseline]
       cargo xtask bench kernel …   (kernel build and boot times)
       cargo xtask bench matrix …   (a matrix's wall time)

Sections (default: model and boot):
  model      the model's and the device's criterion-style benches (extra arguments go to them)
  boot       boot-to-verdict wall time on seed 002 (with --slow also 128 and 256 vCPUs), each run
             paired with a bare boot; prints where the run's added time goes, phase by phase
  traffic    seed 002 with and without --traffic
  selftests  the CI set of the kernel's selftests on 7.x
Options:
  --slow             the large machines too
  --arch arm64       the boot section on arm64 guests: seed 002 without SMT on Debian's arm64
                     6.12 and 7.x (TCG, UEFI; README, arm64 guests)
  --runs N           runs per measurement (the median is reported; seed 002 takes at least 9)
  --update-baseline  write the medians into benches/baseline.json";

/// `cargo xtask bench [sections] [options]`: the `model` section runs every
/// benchmark in [`BENCHES`] with `cargo bench` (optimised build), passing the
/// remaining arguments (a run count); the `boot` section runs [`bench_boot`]
/// (`--slow` adds the 128- and 256-CPU rows, `--runs N` the repetitions,
/// `--update-baseline` rewrites benches/baseline.json); the `traffic` section
/// (only when named) runs [`bench_traffic`], the `selftests` section (only
/// when named) [`bench_selftests`]; `bench kernel` is
/// [`run_kernel_bench`].
fn run_benches(args: &[std::ffi::OsString]) -> ExitCode {
    if args.first().is_some_and(|a| a == "kernel") {
        return run_kernel_bench(&args[1..]);
    }
    if args.first().is_some_and(|a| a == "matrix") {
        return run_matrix_bench(&args[1..]);
    }
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{BENCH_USAGE}");
        return ExitCode::SUCCESS;
    }
    let mut sections = Vec::new();
    let mut opts =
        bench_boot::Options { slow: false, runs: 3, update_baseline: false, arch: harness::topology::Arch::X86_64 };
    let mut extra = Vec::new();
    let mut it = args.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = it.next() {
        match a.as_str() {
            "model" | "boot" | "traffic" | "selftests" => sections.push(a),
            "--slow" => opts.slow = true,
            "--update-baseline" => opts.update_baseline = true,
            "--arch" => match it.next().map(|v| v.parse::<harness::topology::Arch>()) {
                Some(Ok(arch)) => opts.arch = arch,
                Some(Err(e)) => {
                    eprintln!("cargo xtask bench: --arch: {e}");
                    return ExitCode::from(2);
                }
                None => {
                    eprintln!("cargo xtask bench: --arch needs x86_64 or arm64");
                    return ExitCode::from(2);
                }
            },
            "--runs" => match it.next().and_then(|n| n.parse().ok()) {
                Some(n) => opts.runs = n,
                None => {
                    eprintln!("cargo xtask bench: --runs needs a number");
                    return ExitCode::from(2);
                }
            },
            _ => extra.push(a),
        }
    }
    if sections.is_empty() {
        sections = vec!["model".into(), "boot".into()];
    }
    let mut failed = false;
    for section in &sections {
        let ok = if section == "model" {
            match run_model_benches(&extra) {
                Some(ok) => ok,
                None => return ExitCode::from(2),
            }
        } else if section == "selftests" {
            println!("== selftests: seed 002 on 7.x with --tests quick (CI's set; target: a few minutes)");
            match bench_selftests::run(opts.runs.min(3)) {
                Ok(ok) => ok,
                Err(e) => {
                    eprintln!("cargo xtask bench selftests: {e:#}");
                    return ExitCode::from(2);
                }
            }
        } else if section == "traffic" {
            println!("== traffic: seed 002 on 6.12-min without and with run --traffic (target: under twice as long)");
            match bench_traffic::run(opts.runs) {
                Ok(ok) => ok,
                Err(e) => {
                    eprintln!("cargo xtask bench traffic: {e:#}");
                    return ExitCode::from(2);
                }
            }
        } else {
            if opts.arch == harness::topology::Arch::Arm64 {
                println!(
                    "== boot: boot-to-verdict wall time of arm64 guests, Debian's arm64 kernels (README, arm64 guests)"
                );
            } else {
                println!("== boot: boot-to-verdict wall time, minimal 6.12 kernel (fast path) and Debian 6.12 (docs/boot-speed.md)");
            }
            let run = if opts.arch == harness::topology::Arch::Arm64 { bench_boot_arm64::run } else { bench_boot::run };
            match run(&opts) {
                Ok(ok) => ok,
                Err(e) => {
                    eprintln!("cargo xtask bench boot: {e:#}");
                    return ExitCode::from(2);
                }
            }
        };
        failed |= !ok;
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Every benchmark in [`BENCHES`] with `cargo bench`; `None` when cargo cannot run.
fn run_model_benches(extra: &[String]) -> Option<bool> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut ok = true;
    for (package, bench, what) in BENCHES {
        println!("== {package}/{bench}: {what}");
        let status =
            Command::new(&cargo).args(["bench", "--quiet", "-p", package, "--bench", bench, "--"]).args(extra).status();
        match status {
            Ok(s) if s.success() => {}
            Ok(_) => ok = false,
            Err(e) => {
                eprintln!("cargo xtask bench: cannot run cargo bench: {e}");
                return None;
            }
        }
    }
    Some(ok)
}

/// `cargo xtask bench matrix [--kernel K[,K2…]] [--out DIR]`: the fast matrix
/// ([`bench_matrix`]); exit 0 when every pair passed within the target, 1 when
/// not, 2 when it could not run.
fn run_matrix_bench(args: &[std::ffi::OsString]) -> ExitCode {
    let mut opts = bench_matrix::Options { kernels: bench_matrix::FAST_KERNELS.map(String::from).to_vec(), out: None };
    let mut it = args.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(a) = it.next() {
        match (a.as_str(), it.next()) {
            ("--kernel", Some(k)) => opts.kernels = k.split(',').map(str::to_owned).collect(),
            ("--out", Some(d)) => opts.out = Some(d.into()),
            _ => {
                eprintln!("cargo xtask bench matrix [--kernel K[,K2...]] [--out DIR]: unexpected {a:?}");
                return ExitCode::from(2);
            }
        }
    }
    println!("== matrix: every topology under 96 vCPUs × {}, target ≤ 10 minutes", opts.kernels.join(", "));
    match bench_matrix::run(&opts) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("cargo xtask bench matrix: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// `cargo xtask bench kernel [--skip-cold]`: cold and incremental guest-kernel
/// builds and boot-to-report, minimal vs Debian kernel, and the debug kernels
/// (bench_kernel.rs).
fn run_kernel_bench(extra: &[std::ffi::OsString]) -> ExitCode {
    let skip_cold = extra.iter().any(|a| a == "--skip-cold");
    let result = harness::provision::cache_dir(None)
        .map_err(anyhow::Error::from)
        .and_then(|cache| bench_kernel::run(&cache, skip_cold));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cargo xtask bench kernel: {e:#}");
            ExitCode::from(2)
        }
    }
}
