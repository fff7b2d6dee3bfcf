//! What a running matrix reports as it goes ([`Event`]) and the numbers a
//! progress line shows ([`Tracker`]: pairs done of total, what runs, ETA).
//! Printing them is the command line's business.

use super::report::PairRecord;
use super::spec::PlannedPair;
use std::time::Duration;

/// Something that happened in a running matrix.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A pair's guest is starting.
    Started(&'a PlannedPair),
    /// A pair has its result (also pairs that never started: broken files, kernels).
    Finished(&'a PairRecord),
    /// The matrix was asked to stop: no new pair starts; running ones end.
    Stopping,
    /// Nothing happened for a moment (a chance to refresh a progress line).
    Tick,
}

/// Done/total, running pairs and the estimated time left.
///
/// The ETA is the planned cost of what is left (running pairs counted from
/// when they started), scaled by how the finished pairs' real times compare
/// with their planned costs on this host, divided by the jobs.
#[derive(Debug, Clone)]
pub struct Tracker {
    total: usize,
    done: usize,
    jobs: u32,
    cost_left_s: f64,
    /// (name, planned cost, seconds since it started when last ticked).
    running: Vec<(String, f64)>,
    planned_done_s: f64,
    actual_done_s: f64,
}

impl Tracker {
    /// A tracker for `pairs` run `jobs` at a time.
    pub fn new(pairs: &[PlannedPair], jobs: u32) -> Self {
        Tracker {
            total: pairs.len(),
            done: 0,
            jobs: jobs.max(1),
            cost_left_s: pairs.iter().map(|p| p.cost_s).sum(),
            running: Vec::new(),
            planned_done_s: 0.0,
            actual_done_s: 0.0,
        }
    }

    /// Take an event into account.
    pub fn update(&mut self, event: &Event<'_>) {
        match event {
            Event::Started(p) => self.running.push((p.name.clone(), p.cost_s)),
            Event::Finished(r) => {
                self.done += 1;
                self.running.retain(|(n, _)| *n != r.pair.name);
                self.cost_left_s = (self.cost_left_s - r.pair.cost_s).max(0.0);
                if let Some(d) = r.duration_s.filter(|_| r.pair.cost_s > 0.0) {
                    self.planned_done_s += r.pair.cost_s;
                    self.actual_done_s += d;
                }
            }
            Event::Stopping | Event::Tick => {}
        }
    }

    /// Pairs with a result.
    pub fn done(&self) -> usize {
        self.done
    }

    /// Pairs in the matrix (or shard).
    pub fn total(&self) -> usize {
        self.total
    }

    /// Names of the running pairs, in start order.
    pub fn running(&self) -> Vec<&str> {
        self.running.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Real seconds per planned second so far (1 until a pair finished).
    pub fn speed_ratio(&self) -> f64 {
        if self.planned_done_s > 0.0 {
            self.actual_done_s / self.planned_done_s
        } else {
            1.0
        }
    }

    /// The time left, given how long each running pair has run (`elapsed`, by
    /// name; missing names count as just started).
    pub fn eta(&self, elapsed: &dyn Fn(&str) -> Duration) -> Duration {
        let ratio = self.speed_ratio();
        let running_left: f64 =
            self.running.iter().map(|(n, c)| (c * ratio - elapsed(n).as_secs_f64()).max(0.0)).sum::<f64>();
        let running_cost: f64 = self.running.iter().map(|(_, c)| c).sum();
        let queued = (self.cost_left_s - running_cost).max(0.0) * ratio;
        Duration::from_secs_f64((queued + running_left) / f64::from(self.jobs))
    }
}

/// A duration as `1h02m`, `3m20s` or `42s`.
pub fn short_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::report::PairRecord;

    fn pair(name: &str, cost_s: f64) -> PlannedPair {
        PlannedPair {
            name: name.into(),
            topology: name.into(),
            file: format!("{name}.toml"),
            kernel: "6.12-min".into(),
            arch: None,
            vcpus: Some(8),
            cost_s,
            shard: 1,
        }
    }

    #[test]
    fn the_eta_follows_the_plan_scaled_by_what_finished_pairs_took() {
        let pairs = [pair("a", 10.0), pair("b", 10.0), pair("c", 20.0)];
        let mut t = Tracker::new(&pairs, 2);
        let none = |_: &str| Duration::ZERO;
        assert_eq!(t.eta(&none), Duration::from_secs(20), "40 planned seconds on 2 jobs");
        t.update(&Event::Started(&pairs[0]));
        t.update(&Event::Started(&pairs[1]));
        assert_eq!(t.running(), ["a", "b"]);
        let mut r = PairRecord::not_run(pairs[0].clone(), "x");
        r.duration_s = Some(20.0);
        t.update(&Event::Finished(&r));
        // Twice as slow as planned: b (10 s planned, 5 s run) and c are left.
        assert_eq!(t.speed_ratio(), 2.0);
        let five = |n: &str| {
            if n == "b" {
                Duration::from_secs(5)
            } else {
                Duration::ZERO
            }
        };
        assert_eq!(t.eta(&five), Duration::from_secs_f64((40.0 + 15.0) / 2.0));
        assert_eq!((t.done(), t.total(), t.running()), (1, 3, vec!["b"]));
    }

    #[test]
    fn durations_print_short() {
        assert_eq!(short_duration(Duration::from_secs(42)), "42s");
        assert_eq!(short_duration(Duration::from_secs(200)), "3m20s");
        assert_eq!(short_duration(Duration::from_secs(3720)), "1h02m");
    }
}
