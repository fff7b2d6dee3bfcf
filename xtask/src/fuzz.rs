//! `cargo xtask fuzz`: builds the libFuzzer targets of `fuzz/` with stable
//! Rust and runs them (docs/fuzzing.md).
//!
//! - `cargo xtask fuzz --smoke [--time S]`: the fuzz crate's tests, then
//!   every target for S seconds (default [`SMOKE_SECONDS`]); part of
//!   `cargo xtask test`.
//! - `cargo xtask fuzz TARGET [--time S]`: one target (default 600 s).
//! - `cargo xtask fuzz --list`: the targets.
//! - `cargo xtask fuzz --record`: rewrites the seed corpus from the driver
//!   model (`fuzz/corpus/<target>/`).
//!
//! Building: cargo-fuzz needs nightly (`-Zsanitizer=address`), but the
//! coverage instrumentation libFuzzer feeds on is a stable LLVM pass:
//! `-Cpasses=sancov-module` with `-Cllvm-args=-sanitizer-coverage-*`
//! ([`RUSTFLAGS`]), and `libfuzzer-sys` compiles libFuzzer itself with the
//! host's C++ compiler. `--target` is given so that the flags reach the
//! targets and not the build scripts. No AddressSanitizer on stable: safe
//! Rust is bounds-checked anyway, and the few `unsafe` blocks (fd passing,
//! fcntl) are what ASan would have watched.
//!
//! Each run keeps what it finds in `fuzz/target/corpus/<target>/` (the
//! committed seeds in `fuzz/corpus/<target>/` are read, never written) and
//! writes a crashing, hanging or leaking input to `fuzz/artifacts/<target>/`.
//! The summary gives executions, edges covered (`cov`) and features (`ft`).

use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Seconds each target runs in a smoke run (12 targets: about 1.5 minutes,
/// plus the fuzz crate's tests). Long enough to replay the seeds and reach
/// past them; the campaigns (docs/fuzzing.md) are where the depth comes from,
/// and CI's whole run stays under 30 minutes.
pub const SMOKE_SECONDS: u64 = 6;
/// Seconds a single-target run lasts unless `--time` says otherwise.
const DEFAULT_SECONDS: u64 = 600;
/// The target triple the instrumented build is made for.
const TRIPLE: &str = "x86_64-unknown-linux-gnu";
/// Coverage instrumentation for libFuzzer on stable Rust.
pub const RUSTFLAGS: &str = "-Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares \
    --cfg fuzzing";

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The fuzz targets: every `[[bin]]` of fuzz/Cargo.toml but the recorder.
pub fn targets() -> anyhow::Result<Vec<String>> {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml"))?;
    let mut targets = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if let Some(name) = line.strip_prefix("name = ").filter(|_| in_bin) {
            let name = name.trim_matches('"');
            if name != "record_corpus" {
                targets.push(name.to_owned());
            }
        }
    }
    Ok(targets)
}

/// What one run of one target reached.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Target name.
    pub target: String,
    /// Executions (`stat::number_of_executed_units`).
    pub execs: u64,
    /// Edges covered at the end (`cov:`).
    pub cov: u64,
    /// Features at the end (`ft:`).
    pub ft: u64,
    /// Whether libFuzzer ended without a finding.
    pub ok: bool,
}

/// Builds the targets (not the recorder: it has no `fuzz_target!`, so
/// libFuzzer, which defines the coverage callbacks, is not linked into it).
fn build() -> anyhow::Result<()> {
    eprintln!("fuzz: building the targets (release, {TRIPLE}, sanitizer coverage)");
    let mut args: Vec<String> = ["build", "--quiet", "--release", "--target", TRIPLE].map(str::to_owned).to_vec();
    for target in targets()? {
        args.push("--bin".into());
        args.push(target);
    }
    let status = Command::new(cargo()).args(&args).env("RUSTFLAGS", RUSTFLAGS).current_dir(fuzz_dir()).status()?;
    anyhow::ensure!(status.success(), "building fuzz/ failed ({status})");
    Ok(())
}

/// The number after `key` in `text`'s last line that has it.
fn last_number(text: &str, key: &str) -> u64 {
    text.lines()
        .rev()
        .find_map(|line| {
            let rest = &line[line.find(key)? + key.len()..];
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(0)
}

/// Runs `target` for `seconds`; its libFuzzer log goes to fuzz/target/logs/.
pub fn run_one(target: &str, seconds: u64) -> anyhow::Result<Outcome> {
    let dir = fuzz_dir();
    let work = dir.join("target/corpus").join(target);
    let artifacts = dir.join("artifacts").join(target);
    let logs = dir.join("target/logs");
    for d in [&work, &artifacts, &logs] {
        std::fs::create_dir_all(d)?;
    }
    let seeds = dir.join("corpus").join(target);
    let binary = dir.join("target").join(TRIPLE).join("release").join(target);
    // RUST_LIB_BACKTRACE=0: with RUST_BACKTRACE=1 in the environment every
    // `anyhow` error the driver model makes of a refused input captured a
    // backtrace (a few per cent of `backend`'s time); panics keep theirs.
    let output = Command::new(&binary)
        .env("RUST_LIB_BACKTRACE", "0")
        .arg(&work)
        .arg(&seeds)
        .arg(format!("-max_total_time={seconds}"))
        .arg("-timeout=10")
        .arg("-rss_limit_mb=2048")
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    let log = String::from_utf8_lossy(&output.stderr).into_owned();
    std::fs::write(logs.join(format!("{target}.log")), &log)?;
    let outcome = Outcome {
        target: target.to_owned(),
        execs: last_number(&log, "stat::number_of_executed_units:"),
        cov: last_number(&log, "cov: "),
        ft: last_number(&log, "ft: "),
        ok: output.status.success(),
    };
    if !outcome.ok {
        let tail: Vec<&str> = log.lines().rev().take(25).collect();
        eprintln!("fuzz: {target} FAILED ({}):", output.status);
        for line in tail.into_iter().rev() {
            eprintln!("  {line}");
        }
    }
    Ok(outcome)
}

fn report(outcomes: &[Outcome], seconds: u64) -> bool {
    println!("target        seconds  executions      cov       ft  result");
    for o in outcomes {
        let result = if o.ok { "ok" } else { "FINDING (fuzz/artifacts/)" };
        println!("{:<12} {:>8} {:>11} {:>8} {:>8}  {result}", o.target, seconds, o.execs, o.cov, o.ft);
    }
    let total: u64 = outcomes.iter().map(|o| o.execs).sum();
    println!("total executions: {total}");
    outcomes.iter().all(|o| o.ok)
}

/// The fuzz crate's own tests (seeds line up with the machines they are
/// replayed on, checkpoints, the growth watch, the threads target's setup):
/// `cargo test --lib` in fuzz/, without the coverage flags.
fn unit_tests() -> anyhow::Result<bool> {
    eprintln!("fuzz: the fuzz crate's tests (cargo test --lib in fuzz/)");
    let status = Command::new(cargo()).args(["test", "--quiet", "--lib"]).current_dir(fuzz_dir()).status()?;
    if !status.success() {
        eprintln!("fuzz: the fuzz crate's tests failed ({status})");
    }
    Ok(status.success())
}

/// `cargo xtask fuzz --smoke` as a gate: `Ok(true)` when the fuzz crate's
/// tests pass and every target ran [`SMOKE_SECONDS`] without a finding
/// (the `persistent` target included: one device for every input, failing
/// when a collection or the heap keeps growing).
///
/// # Errors
/// The build fails or a target cannot run.
pub fn smoke(seconds: u64) -> anyhow::Result<bool> {
    let tests_ok = unit_tests()?;
    build()?;
    let mut outcomes = Vec::new();
    for target in targets()? {
        eprintln!("fuzz: {target} for {seconds} s");
        outcomes.push(run_one(&target, seconds)?);
    }
    Ok(report(&outcomes, seconds) && tests_ok)
}

/// `cargo xtask fuzz [...]`.
pub fn main(args: &[std::ffi::OsString]) -> ExitCode {
    let args: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let mut seconds = None;
    let mut target = None;
    let mut mode = "one";
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--smoke" => mode = "smoke",
            "--list" => mode = "list",
            "--record" => mode = "record",
            "--time" => match it.next().map(|s| parse_seconds(s)) {
                Some(Ok(s)) => seconds = Some(s),
                Some(Err(why)) => return usage(&why),
                None => return usage("--time needs a number of seconds"),
            },
            name if !name.starts_with('-') => match target {
                None => target = Some(name.to_owned()),
                Some(first) => return usage(&format!("one target at a time ({first:?} and {name:?} given)")),
            },
            other => return usage(&format!("unknown option {other}")),
        }
    }
    if mode != "one" && target.is_some() {
        return usage(&format!("--{mode} takes no target"));
    }
    if matches!(mode, "list" | "record") && seconds.is_some() {
        return usage(&format!("--{mode} takes no --time"));
    }
    let result = match (mode, target) {
        ("list", _) => targets().map(|t| {
            println!("{}", t.join("\n"));
            true
        }),
        ("record", _) => record(),
        ("smoke", _) => smoke(seconds.unwrap_or(SMOKE_SECONDS)),
        (_, Some(target)) => match known_target(&target) {
            Ok(()) => {
                let seconds = seconds.unwrap_or(DEFAULT_SECONDS);
                build().and_then(|()| run_one(&target, seconds)).map(|o| report(&[o], seconds))
            }
            Err(why) => return usage(&why),
        },
        (_, None) => return usage("name a target (--list) or give --smoke"),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("cargo xtask fuzz: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The longest `--time`: libFuzzer keeps `-max_total_time` in a C `int`, and
/// a larger value wraps to 0 or below, which it reads as "no limit".
const MAX_SECONDS: u64 = i32::MAX as u64;

/// `--time`'s value: whole seconds, 1 to [`MAX_SECONDS`]. libFuzzer reads
/// `-max_total_time=0` as "no limit", so 0 would be a run without a deadline.
fn parse_seconds(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("--time must be at least 1 second (libFuzzer would read 0 as no limit)".to_owned()),
        Ok(s) if s > MAX_SECONDS => Err(format!("--time {s} is more than libFuzzer's limit of {MAX_SECONDS} seconds")),
        Ok(s) => Ok(s),
        Err(_) => Err(format!("--time needs a whole number of seconds, not {text:?}")),
    }
}

/// `Ok` when `name` is one of [`targets`]; otherwise says which there are,
/// before anything is built.
fn known_target(name: &str) -> Result<(), String> {
    let known = targets().map_err(|e| format!("reading fuzz/Cargo.toml: {e:#}"))?;
    if known.iter().any(|t| t == name) {
        Ok(())
    } else {
        Err(format!("no fuzz target {name:?}; the targets are: {}", known.join(", ")))
    }
}

fn record() -> anyhow::Result<bool> {
    let status =
        Command::new(cargo()).args(["run", "--quiet", "--bin", "record_corpus"]).current_dir(fuzz_dir()).status()?;
    Ok(status.success())
}

fn usage(why: &str) -> ExitCode {
    eprintln!(
        "cargo xtask fuzz: {why}\n\
         usage: cargo xtask fuzz --smoke [--time S] | TARGET [--time S] | --list | --record"
    );
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_of_zero_is_refused_because_libfuzzer_reads_it_as_no_limit() {
        assert!(parse_seconds("0").expect_err("0 is no limit").contains("at least 1"));
        assert!(parse_seconds("-3").expect_err("negative").contains("\"-3\""));
        assert!(parse_seconds("abc").is_err());
        assert_eq!(parse_seconds("2000"), Ok(2000));
        // 2^32 would wrap to 0 in libFuzzer's int, 2^31 to a negative number.
        assert!(parse_seconds("4294967296").is_err());
        assert!(parse_seconds("2147483648").is_err());
        assert_eq!(parse_seconds("2147483647"), Ok(2_147_483_647));
    }

    #[test]
    fn an_unknown_target_is_refused_with_the_list_of_targets() {
        let why = known_target("nosuch").expect_err("not a target");
        assert!(why.contains("\"nosuch\"") && why.contains("threads"), "{why}");
        assert_eq!(known_target("threads"), Ok(()));
    }
}
