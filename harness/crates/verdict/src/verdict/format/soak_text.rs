//! The text of a soak (`cargo xtask soak`): the device process's samples
//! (the judged ones marked), what the flatness rule found, the disruptions
//! counted, and the traffic rounds.

use super::super::outcome::Verdict;
use super::super::soak::SoakReport;
use super::text;
use crate::text::plural;

/// The section; empty for a run that was not a soak.
pub(super) fn soak(v: &Verdict) -> Vec<String> {
    let Some(r) = &v.soak else { return Vec::new() };
    let seconds = |s: Option<f64>| s.map_or_else(|| "-".to_owned(), |s| format!("{s:.0} s"));
    let mut lines = vec![format!(
        "Soak: {} minutes ({} guest, {} host wall clock between the first and last sample), channels {}:",
        r.minutes,
        seconds(r.guest_seconds),
        seconds(r.wall_seconds),
        if r.channels.is_empty() {
            "unchanged".to_owned()
        } else {
            r.channels.iter().map(u32::to_string).collect::<Vec<_>>().join(" → ")
        }
    )];
    lines.extend(samples(r));
    let t = &r.traffic;
    lines.push(format!(
        "  traffic: {} of {} verified ({} dropped), {} of {} verified by both ends; {} to the guest, {} \
         to the peer; verified rounds per minute: {}",
        t.rounds_verified,
        plural(t.rounds, "round"),
        t.rounds_dropped,
        t.flows_verified,
        plural(t.flows, "flow"),
        kib(t.bytes_to_guest / 1024),
        kib(t.bytes_to_host / 1024),
        t.per_minute.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
    ));
    let counts: Vec<String> = r.disruptions.iter().map(|d| format!("{} {}/{}", d.step, d.ok, d.planned)).collect();
    lines.push(format!("  disruptions that came through: {}", counts.join(", ")));
    lines.extend(r.notes.iter().map(|n| format!("  {n}")));
    lines
}

fn kib(k: u64) -> String {
    format!("{k} KiB")
}

/// One row per sample; `*` marks the judged ones.
fn samples(r: &SoakReport) -> Vec<String> {
    let from = r.flatness.as_ref().map_or(u32::MAX, |f| f.judged_from_minute);
    let mut rows = vec![["minute", "host s", "VmRSS KiB", "RssAnon KiB", "RssFile KiB", "RssShmem KiB", "fds"]
        .map(str::to_owned)
        .to_vec()];
    for s in &r.samples {
        rows.push(vec![
            format!("{}{}", s.minute, if s.minute >= from { "*" } else { "" }),
            format!("{:.0}", s.at_s),
            s.vm_rss_kib.to_string(),
            s.rss_anon_kib.to_string(),
            s.rss_file_kib.to_string(),
            s.rss_shmem_kib.to_string(),
            s.fds.to_string(),
        ]);
    }
    let mut lines: Vec<String> = text::align(&rows).into_iter().map(|l| format!("  {l}")).collect();
    lines.push(match &r.flatness {
        Some(f) => format!(
            "  * judged (from minute {}): RssAnon {:+} KiB (limit +{} KiB, max {} KiB{}), fds {}-{}",
            f.judged_from_minute,
            f.rss_growth_kib,
            f.rss_limit_kib,
            f.rss_max_kib,
            if f.rss_monotone_rise { ", rising at every sample" } else { "" },
            f.fds_min,
            f.fds_max
        ),
        None => "  too few samples after the warm-up to judge".to_owned(),
    });
    lines
}
