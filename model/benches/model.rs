//! Model benchmark: time to compute the full expected IRQ table for seed 003's
//! 256-CPU, 16-node AMD EPYC 7763 (the largest machine in `topologies/`).
//!
//! Run with `cargo xtask bench` (or `cargo bench -p manarig-model --bench model`). Prints the
//! median, min and max of N runs per kernel generation, and exits 1 if a median is over
//! the 10 ms budget. Optional argument: number of runs (default 200).

use manarig_model::model::{expected_table, KernelGen};
use manarig_model::topology::Topology;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Budget for one full table on the 256-CPU machine.
const BUDGET: Duration = Duration::from_millis(10);

fn measure(runs: usize, mut f: impl FnMut()) -> (Duration, Duration, Duration) {
    f(); // warm-up
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort_unstable();
    (times[times.len() / 2], times[0], times[times.len() - 1])
}

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; a bare number is the run count.
    let runs = std::env::args().skip(1).find_map(|a| a.parse::<usize>().ok()).unwrap_or(200).max(1);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../topologies/seed-003-epyc-7763.toml");
    let topo = match Topology::load(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    println!("model bench: {} ({} CPUs, {} nodes), {runs} runs each", topo.name(), topo.ncpu(), topo.nodes().len());
    let (med, min, max) = measure(runs, || {
        black_box(Topology::load(black_box(path)).ok());
    });
    println!("  load + validate          median {med:>10.3?}  min {min:>10.3?}  max {max:>10.3?}");
    let mut over = false;
    for gen in KernelGen::ALL {
        let (med, min, max) = measure(runs, || {
            black_box(expected_table(black_box(&topo), gen));
        });
        let verdict = if med < BUDGET { "ok" } else { "OVER BUDGET" };
        over |= med >= BUDGET;
        println!(
            "  expected_table {:<9} median {med:>10.3?}  min {min:>10.3?}  max {max:>10.3?}  (budget {BUDGET:?}: {verdict})",
            gen.as_str()
        );
    }
    if over {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
