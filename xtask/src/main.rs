//! `cargo xtask`: project automation.
//!
//! `cargo xtask test` provisions what the tests need (the harness's `setup`:
//! QEMU, the pinned kernels and busybox, into the cache named by
//! `MANARIG_CACHE` or the default) and then runs the test suite with nextest
//! (the command README.md and .ci/run use). Every other subcommand, `setup`
//! included, is the harness's `manarig` command line.
//! `cargo xtask bench` runs the benchmarks (release build).

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match args.get(1).and_then(|a| a.to_str()) {
        Some("test") => run_tests(&args[2..]),
        Some("bench") => run_benches(&args[2..]),
        _ => harness::cli::main_with_args(
            std::iter::once(std::ffi::OsString::from("cargo xtask")).chain(args.into_iter().skip(1)),
        ),
    }
}

/// `cargo xtask test [nextest args]`: provision, then run the whole suite with nextest.
fn run_tests(extra: &[std::ffi::OsString]) -> ExitCode {
    // The boot tests need the provisioned cache; setup is idempotent and takes
    // well under a second once done.
    let setup = harness::provision::command::SetupArgs { cache_dir: None, update_lock: false, private_qemu: false };
    if harness::provision::command::run(&setup) != ExitCode::from(harness::cli::EXIT_PASS) {
        eprintln!("cargo xtask test: setup failed (see above); the boot tests cannot run without it");
        return ExitCode::from(2);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["nextest", "run", "--workspace", "--no-fail-fast"])
        .args(extra)
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
const BENCHES: &[(&str, &str, &str)] =
    &[("harness", "model", "expected IRQ table for the 256-CPU 16-node machine (budget 10 ms)")];

/// `cargo xtask bench [args]`: run every benchmark in [`BENCHES`] with `cargo bench`
/// (optimised build), passing `args` to each (the model bench takes a run count).
fn run_benches(extra: &[std::ffi::OsString]) -> ExitCode {
    if extra.first().is_some_and(|a| a == "kernel") {
        return run_kernel_bench(&extra[1..]);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut failed = false;
    for (package, bench, what) in BENCHES {
        println!("== {package}/{bench}: {what}");
        let status = Command::new(&cargo)
            .args(["bench", "--quiet", "-p", package, "--bench", bench, "--"])
            .args(extra)
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(_) => failed = true,
            Err(e) => {
                eprintln!("cargo xtask bench: cannot run cargo bench: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `cargo xtask bench kernel [--skip-cold]`: cold and incremental guest-kernel
/// builds and boot-to-report, minimal vs Debian kernel (harness::kbuild::bench).
fn run_kernel_bench(extra: &[std::ffi::OsString]) -> ExitCode {
    let skip_cold = extra.iter().any(|a| a == "--skip-cold");
    let result = harness::provision::cache_dir(None)
        .map_err(anyhow::Error::from)
        .and_then(|cache| harness::kbuild::bench::run(&cache, skip_cold));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cargo xtask bench kernel: {e:#}");
            ExitCode::from(2)
        }
    }
}
