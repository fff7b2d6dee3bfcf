//! The matrix's progress on stderr: on a terminal an indicatif bar (pairs
//! done of total, the running pairs, the ETA) with a line per failure; else
//! one plain line per start and per result.

use crate::matrix::progress::{short_duration, Event, Tracker};
use crate::matrix::report::PairStatus;
use crate::matrix::spec::PlannedPair;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// The progress display of one matrix run.
pub struct Display {
    bar: Option<ProgressBar>,
    tracker: Tracker,
    started: HashMap<String, Instant>,
}

impl Display {
    /// A display for `pairs` run `jobs` at a time; a bar when stderr is a terminal.
    pub fn new(pairs: &[PlannedPair], jobs: u32) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(pairs.len() as u64), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:24} {pos}/{len} pairs {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Display { bar, tracker: Tracker::new(pairs, jobs), started: HashMap::new() }
    }

    /// A line above the bar (or on stderr).
    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(format!("matrix: {line}")),
            None => eprintln!("matrix: {line}"),
        }
    }

    fn status_line(&self) -> String {
        let running = self.tracker.running();
        let eta = self.tracker.eta(&|n| self.started.get(n).map_or(Duration::ZERO, Instant::elapsed));
        let shown: Vec<&str> = running.iter().take(3).copied().collect();
        let more = if running.len() > 3 { format!(" +{}", running.len() - 3) } else { String::new() };
        if running.is_empty() {
            return format!("· ETA {}", short_duration(eta));
        }
        format!("· running {}: {}{more} · ETA {}", running.len(), shown.join(", "), short_duration(eta))
    }

    /// Take an event.
    pub fn event(&mut self, e: Event<'_>) {
        self.tracker.update(&e);
        match e {
            Event::Started(p) => {
                self.started.insert(p.name.clone(), Instant::now());
                if self.bar.is_none() {
                    eprintln!("matrix: start {} ({} running)", p.name, self.tracker.running().len());
                }
            }
            Event::Finished(r) => {
                self.started.remove(&r.pair.name);
                let time = r.duration_s.map(|d| format!(" {d:.1} s")).unwrap_or_default();
                let why = match r.status {
                    PairStatus::Fail => r.first_mismatch.clone(),
                    PairStatus::RigError | PairStatus::NotRun | PairStatus::Skip => r.error.clone(),
                    PairStatus::Pass => None,
                };
                let why = why.map(|w| format!(": {}", w.chars().take(200).collect::<String>())).unwrap_or_default();
                let line = format!(
                    "[{}/{}] {} {}{time}{why}",
                    self.tracker.done(),
                    self.tracker.total(),
                    r.status.word(),
                    r.pair.name
                );
                match &self.bar {
                    Some(b) => {
                        if r.status != PairStatus::Pass {
                            b.println(format!("matrix: {line}"));
                        }
                        b.set_position(self.tracker.done() as u64);
                    }
                    None => eprintln!("matrix: {line} {}", self.status_line()),
                }
            }
            Event::Stopping => {
                self.note("stopping: no new pair starts, running guests are stopped; partial results follow")
            }
            Event::Tick => {}
        }
        if let Some(b) = &self.bar {
            b.set_message(self.status_line());
        }
    }

    /// Remove the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
