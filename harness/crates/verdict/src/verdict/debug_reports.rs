//! The `debug_reports` check of runs on debug kernels: the kernel's own bug
//! reports (KASAN, kmemleak, lockdep, WARN, BUG) split out of what the guest
//! agent sent (`kmemleak:` and `klog:` lines, guest-images/README.md), and a
//! failure for each one that touches the mana driver.
//!
//! A report touches the driver when one of its lines has a mana frame: a
//! `function+0xOFF/0xLEN` whose module tag is `[mana]` (or `[mana_ib]`), or
//! whose function is `mana_*` (a built-in driver), or a source path under
//! `drivers/net/ethernet/microsoft/mana/` (a WARN's location). For KASAN that
//! covers the access's call trace and the object's allocation and free stacks;
//! for kmemleak the object's allocation backtrace. Reports without a mana
//! frame (early boot, other subsystems) are notes of a passing check.
//!
//! One more report comes from the rig rather than the kernel: a MANA IRQ whose
//! `affinity_hint` reads as SLUB's free poison ([`poisoned_hints`]). The debug
//! kernels boot with `slub_debug`, which fills a freed object with
//! `POISON_FREE` (0x6b, include/linux/poison.h); a hint that reads 0x6b in
//! every byte points at a freed object. KASAN does not see that read with the
//! build host's compiler: `/proc/irq/N/affinity_hint` copies the mask with
//! `memcpy()`, and on x86 (GENERIC_ENTRY) KASAN checks compiler-emitted
//! `memcpy()` only when the compiler has `asan-kernel-mem-intrinsic-prefix`
//! (scripts/Makefile.kasan), which GCC 12 (Debian 12) lacks.

use super::check::{Check, CheckStatus};
pub use super::debug_against::{Against, KnownFinding};
use super::guest_irqs::ObservedVector;
use super::outcome::Verdict;
use crate::cpulist::CpuMask;
use std::fmt;

/// The check's name.
pub const DEBUG_REPORTS_CHECK: &str = "debug_reports";

/// How many of a report's first lines a check quotes.
const QUOTED_LINES: usize = 3;

/// Which checker wrote a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportKind {
    /// `BUG: KASAN: …` (mm/kasan/report.c).
    Kasan,
    /// An `unreferenced object …` of `/sys/kernel/debug/kmemleak` (mm/kmemleak.c).
    Kmemleak,
    /// A lockdep `WARNING: possible circular locking dependency detected` and
    /// the like (kernel/locking/lockdep.c): a `WARNING:` without `CPU:`.
    Lockdep,
    /// A `WARN()`: `------------[ cut here ]------------` and `WARNING: CPU: …`.
    Warn,
    /// Any other `BUG:` (e.g. DEBUG_ATOMIC_SLEEP's `BUG: sleeping function
    /// called from invalid context`), an `Oops` or a general protection fault.
    Bug,
    /// An IRQ's `affinity_hint` that reads as `slub_debug`'s free poison
    /// ([`poisoned_hints`]): the hint points at a freed object.
    SlubPoison,
}

impl fmt::Display for ReportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReportKind::Kasan => "KASAN",
            ReportKind::Kmemleak => "kmemleak",
            ReportKind::Lockdep => "lockdep",
            ReportKind::Warn => "WARN",
            ReportKind::Bug => "BUG",
            ReportKind::SlubPoison => "slub_debug",
        })
    }
}

/// One report of a checker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebugReport {
    /// The checker.
    pub kind: ReportKind,
    /// Its lines, from its title (`BUG: KASAN: …`, `unreferenced object …`).
    pub lines: Vec<String>,
    /// Its mana frames, in order, each once (`mana_gd_setup_irqs+0x1b/0x60 [mana]`).
    pub mana_frames: Vec<String>,
}

impl DebugReport {
    fn new(kind: ReportKind, lines: Vec<String>) -> Self {
        let mut mana_frames: Vec<String> = Vec::new();
        for f in lines.iter().flat_map(|l| mana_frames_of(l)) {
            if !mana_frames.contains(&f) {
                mana_frames.push(f);
            }
        }
        DebugReport { kind, lines, mana_frames }
    }

    /// True when a mana frame is in the report.
    pub fn touches_mana(&self) -> bool {
        !self.mana_frames.is_empty()
    }

    /// What makes two reports the same bug: its [`DebugReport::class`] and
    /// its mana frames. The task, PID and taint flags on later lines differ
    /// from report to report and are left out.
    fn signature(&self) -> String {
        format!("{}|{}", self.class(), self.mana_frames.join(","))
    }

    /// The report's class, by which a patched kernel's run is compared with
    /// the stock kernel's: the checker and the title line (past a WARN's `cut
    /// here` rule) with what differs from run to run and build to build
    /// masked: addresses (`ADDR`), function offsets (`f+0x1b/0x60` → `f`), and
    /// the CPU and PID numbers of a WARN's line (`WARNING: CPU: 1 PID: 97 at …`
    /// before Linux 6.15, `WARNING: … at f+0x1/0x2, CPU#1: rmmod/97` after).
    /// A kmemleak object's title says only its size, so its class also names
    /// where it was allocated: the first [`KMEMLEAK_CLASS_FRAMES`] functions
    /// of its backtrace past kmemleak's own (`kmemleak: unreferenced object
    /// ADDR (size 232): from kmem_cache_alloc_node_noprof < __alloc_skb < …`),
    /// so that a leak of the same size from another path is another class.
    pub fn class(&self) -> String {
        let title = self.masked_title();
        if self.kind != ReportKind::Kmemleak {
            return title;
        }
        let from: Vec<String> = self
            .lines
            .iter()
            .map(|l| l.trim())
            .skip_while(|l| !l.starts_with("backtrace"))
            .skip(1)
            .filter_map(frame_function)
            .filter(|f| !f.starts_with("kmemleak_"))
            .take(KMEMLEAK_CLASS_FRAMES)
            .collect();
        if from.is_empty() {
            title
        } else {
            format!("{title} from {}", from.join(" < "))
        }
    }

    fn masked_title(&self) -> String {
        let title =
            self.lines.iter().map(|l| l.trim()).find(|l| !l.starts_with("------------[ cut here")).unwrap_or("");
        let words: Vec<&str> = title.split_whitespace().collect();
        let masked: Vec<String> = words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let hex = w.trim_start_matches("0x").trim_end_matches([':', ',', ')']);
                let after = i.checked_sub(1).and_then(|j| words.get(j)).copied();
                if hex.len() >= 8 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    "ADDR".to_owned()
                } else if let Some((func, _)) = w.split_once("+0x") {
                    func.to_owned()
                } else if matches!(after, Some("CPU:" | "PID:")) && w.chars().all(|c| c.is_ascii_digit()) {
                    "N".to_owned()
                } else if w.starts_with("CPU#") {
                    // 6.15 on: `WARNING: file:line at f+0x1/0x2, CPU#1: rmmod/97` (kernel/panic.c).
                    "CPU#N:".to_owned()
                } else if after.is_some_and(|a| a.starts_with("CPU#")) {
                    let comm = w.rsplit_once('/').map_or(*w, |(comm, _)| comm);
                    format!("{comm}/N")
                } else {
                    (*w).to_owned()
                }
            })
            .collect();
        format!("{}: {}", self.kind, masked.join(" "))
    }

    /// `KIND: first line / second line / third line`; for kmemleak the title,
    /// the task and the first frames of the allocation backtrace (past
    /// kmemleak's own), not the hex dump: where the object came from.
    pub fn headline(&self) -> String {
        let lines = self.lines.iter().map(|l| l.trim());
        let first: Vec<&str> = match self.kind {
            ReportKind::Kmemleak => {
                let frames = lines
                    .clone()
                    .skip_while(|l| !l.starts_with("backtrace"))
                    .skip(1)
                    .filter(|l| !l.split_whitespace().any(|w| w.starts_with("kmemleak_")))
                    .take(QUOTED_LINES);
                lines.take(2).chain(frames).collect()
            }
            _ => lines.take(QUOTED_LINES).collect(),
        };
        format!("{}: {}", self.kind, first.join(" / "))
    }
}

/// How many allocation frames a kmemleak report's class names.
pub const KMEMLEAK_CLASS_FRAMES: usize = 4;

/// The function of a backtrace line (`__alloc_skb+0x1d1/0x260` →
/// `__alloc_skb`, also after a `[<ADDR>]` prefix, with its `[module]` tag),
/// None for a line that is not a reliable frame: an unwinder's guess is
/// printed after a `?` (arch/x86/kernel/dumpstack.c) and names a function
/// that may not be on the stack at all.
fn frame_function(line: &str) -> Option<String> {
    let mut words = line.split_whitespace().skip_while(|w| w.starts_with("[<"));
    let frame = words.next()?;
    let (func, off) = frame.split_once("+0x")?;
    if func.is_empty() || !off.contains("/0x") {
        return None;
    }
    Some(match words.next().filter(|m| m.starts_with('[') && m.ends_with(']')) {
        Some(module) => format!("{func} {module}"),
        None => func.to_owned(),
    })
}

/// The mana frames of one line (see the module doc). A frame after a lone
/// `?` is the unwinder's guess, not a caller (arch/x86/kernel/dumpstack.c
/// prints unreliable addresses that way), and is left out.
pub fn mana_frames_of(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 && words[i - 1] == "?" {
            continue;
        }
        if w.contains("/microsoft/mana/") {
            out.push(w.trim_end_matches(',').to_string());
            continue;
        }
        // `[<ffffffffc0123456>] f+0x1/0x2`, `RIP: 0010:f+0x1/0x2`, `in f+0x1/0x2`.
        let frame = w.rsplit(':').next().unwrap_or(w);
        let Some((func, off)) = frame.split_once("+0x") else { continue };
        if func.is_empty() || !off.contains("/0x") {
            continue;
        }
        let module = words.get(i + 1).filter(|m| m.starts_with('[') && m.ends_with(']'));
        let in_mana = matches!(module.copied(), Some("[mana]" | "[mana_ib]"));
        if in_mana || func.starts_with("mana_") {
            out.push(match module {
                Some(m) => format!("{frame} {m}"),
                None => frame.to_string(),
            });
        }
    }
    out
}

/// The kind of a `klog:` line that begins a report, if it begins one.
fn klog_start(line: &str) -> Option<ReportKind> {
    if line.starts_with("BUG: KASAN:") {
        Some(ReportKind::Kasan)
    } else if line.starts_with("------------[ cut here ]") || line.starts_with("WARNING: CPU:") {
        Some(ReportKind::Warn)
    } else if line.starts_with("WARNING: ") {
        Some(ReportKind::Lockdep)
    } else if line.starts_with("BUG: ") || line.starts_with("Oops") || line.starts_with("general protection fault") {
        Some(ReportKind::Bug)
    } else {
        None
    }
}

/// True for a line that ends a report: KASAN's closing `=====…` rule, a
/// WARN's or oops' `---[ end trace … ]---`.
fn klog_end(line: &str) -> bool {
    (line.len() >= 20 && line.chars().all(|c| c == '=')) || line.starts_with("---[ end trace")
}

/// Split the agent's `klog:` lines into reports. A `WARNING: CPU:` right after
/// a `cut here` line stays in its report; lines after a report's end (and
/// before the next report's first line) belong to none.
pub fn split_klog(lines: &[String]) -> Vec<DebugReport> {
    let mut out: Vec<(ReportKind, Vec<String>)> = Vec::new();
    let mut open = false;
    for line in lines.iter().map(|l| l.trim_end()) {
        if let Some(kind) = klog_start(line) {
            let after_cut = open
                && out.last().is_some_and(|(k, l)| {
                    *k == ReportKind::Warn && l.len() == 1 && l[0].starts_with("------------[ cut here ]")
                });
            if !after_cut {
                out.push((kind, Vec::new()));
            }
            open = true;
        }
        if !open {
            continue;
        }
        if let Some((_, l)) = out.last_mut() {
            l.push(line.to_string());
        }
        if klog_end(line) {
            open = false;
        }
    }
    out.into_iter().map(|(k, l)| DebugReport::new(k, l)).collect()
}

/// Split the agent's `kmemleak:` lines (the file
/// `/sys/kernel/debug/kmemleak`) into one report per `unreferenced object`.
pub fn split_kmemleak(lines: &[String]) -> Vec<DebugReport> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for line in lines.iter().map(|l| l.trim()) {
        if line.starts_with("unreferenced object") {
            out.push(Vec::new());
        }
        if let Some(l) = out.last_mut() {
            l.push(line.to_string());
        }
    }
    out.into_iter().map(|l| DebugReport::new(ReportKind::Kmemleak, l)).collect()
}

/// The byte SLUB writes over a freed object with `slub_debug` (`POISON_FREE`,
/// include/linux/poison.h).
const SLUB_POISON_FREE: u8 = 0x6b;

/// The fewest CPUs for which a hint can be told apart from the poison: one
/// whole byte of it (CPUs 0-1,3,5-6 of 8).
const POISON_MIN_CPUS: u32 = 8;

/// What memory filled with SLUB's free poison (0x6b) reads as, as a cpumask of
/// `nr_cpus` CPUs (`%*pb` prints `nr_cpu_ids` bits): bits 0, 1, 3, 5 and 6 of
/// every byte.
pub fn poison_mask(nr_cpus: u32) -> CpuMask {
    (0..nr_cpus).filter(|cpu| SLUB_POISON_FREE >> (cpu % 8) & 1 == 1).collect()
}

/// One [`ReportKind::SlubPoison`] report per MANA IRQ whose `affinity_hint`
/// is exactly [`poison_mask`] of the guest's `nr_cpus` CPUs (none below
/// 8 CPUs, where a real hint could look the same). Its "frame" is the IRQ.
pub fn poisoned_hints(vectors: &[ObservedVector], nr_cpus: u32) -> Vec<DebugReport> {
    if nr_cpus < POISON_MIN_CPUS {
        return Vec::new();
    }
    let poison = poison_mask(nr_cpus);
    vectors
        .iter()
        .filter(|v| v.affinity_hint.as_ref() == Some(&poison))
        .map(|v| DebugReport {
            kind: ReportKind::SlubPoison,
            lines: vec![
                format!(
                    "affinity_hint of IRQ {} ({}) reads {}: SLUB's free poison (0x6b in every byte) over {nr_cpus} CPUs",
                    v.irq,
                    v.name,
                    poison.to_cpulist()
                ),
                "the IRQ's hint points at a freed object".to_string(),
            ],
            mana_frames: vec![format!("{} (IRQ {})", v.name, v.irq)],
        })
        .collect()
}

/// What the guest agent sent in debug mode.
#[derive(Debug, Clone, Copy)]
pub struct DebugLog<'a> {
    /// The `debug:` line (`kmemleak=<scan points|absent|disabled>`); None: the agent did not run in debug mode.
    pub state: Option<&'a str>,
    /// The `kmemleak:` lines.
    pub kmemleak: &'a [String],
    /// The `klog:` lines.
    pub klog: &'a [String],
    /// The NIC's IRQs as read at the report (their `affinity_hint`s).
    pub vectors: &'a [ObservedVector],
    /// The guest's possible CPUs (`nr_cpu_ids`: the bits of an `affinity_hint`).
    pub nr_cpus: u32,
}

/// The `debug_reports` check against [`Against::ManaFrames`] with no known
/// findings: Fail when a report touches mana, else Pass with every other
/// report as a `note:` line; Skip when the agent did not run in debug mode, or
/// when kmemleak disabled itself and no other report touches mana.
pub fn debug_reports(log: &DebugLog<'_>) -> Check {
    debug_reports_against(log, &Against::default())
}

/// The `debug_reports` check (see the module's docs) judged `against` the
/// stock kernel or the mana frames:
/// - [`Against::ManaFrames`] (a stock debug kernel, or a build with no stock
///   run to compare with): a report that touches mana fails unless it is one
///   of the kernel's own known findings (guest-images/debug-findings.toml),
///   which are listed as such;
/// - [`Against::Stock`] (a patched build): a report whose [`DebugReport::class`]
///   the stock build's run on the same topology and options did not show is
///   the patch's and fails, whether or not a mana frame is in its trace (a
///   leak of what the networking core allocated has none); the classes the
///   stock run shows too are listed as such.
pub fn debug_reports_against(log: &DebugLog<'_>, against: &Against) -> Check {
    let Some(state) = log.state else {
        return Check::new(
            DEBUG_REPORTS_CHECK,
            CheckStatus::Skip,
            "the guest agent sent no debug state (manarig.debug=1 not seen): no report to judge",
        );
    };
    let disabled = state == "kmemleak=disabled";
    let kmemleak = match state.strip_prefix("kmemleak=") {
        Some("absent") => "kmemleak is not in this kernel".to_string(),
        Some("disabled") => "kmemleak disabled itself, so leaks were not checked (the kernel log's `kmemleak:` \
                             lines say why, e.g. \"Memory pool empty\": CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE too small \
                             for what the kernel allocates at boot)"
            .to_string(),
        Some(n) => format!("kmemleak scanned at {n} point(s)"),
        None => format!("debug state {state:?}"),
    };
    let reports = all_reports(log);
    let mut failing: Vec<&DebugReport> = Vec::new();
    let mut explained: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for r in &reports {
        match against {
            Against::ManaFrames { known } => match known.iter().find(|k| k.matches(&r.class())) {
                Some(k) if r.touches_mana() => {
                    explained.push(format!("known finding of this kernel: {} ({})", r.headline(), k.why))
                }
                _ if r.touches_mana() => failing.push(r),
                _ => notes.push(format!("note (no mana frame): {}", r.headline())),
            },
            Against::Stock { label, classes } => {
                if classes.contains(&r.class()) {
                    explained.push(format!("also in the stock run of {label}: {}", r.headline()));
                } else {
                    failing.push(r);
                }
            }
        }
    }
    let explained = dedup(explained);
    let Some(first) = failing.first() else {
        let (what, elsewhere) = match against {
            Against::ManaFrames { .. } => (
                "no KASAN, kmemleak, lockdep, WARN or BUG report touches mana and no hint reads freed memory",
                format!("{} report(s) elsewhere", notes.len()),
            ),
            Against::Stock { label, .. } => (
                "no KASAN, kmemleak, lockdep, WARN or BUG report the stock run does not show",
                format!("stock: {label}"),
            ),
        };
        let known = if explained.is_empty() { String::new() } else { format!("; {} explained below", explained.len()) };
        let mut c = Check::new(
            DEBUG_REPORTS_CHECK,
            // Not a pass: one of the checkers did not run.
            if disabled { CheckStatus::Skip } else { CheckStatus::Pass },
            format!("{what} ({kmemleak}; {elsewhere}{known})"),
        );
        c.detail = explained.into_iter().chain(notes).collect();
        return c;
    };
    let why = match against {
        Against::ManaFrames { .. } => "touch mana".to_owned(),
        Against::Stock { label, .. } => format!("the stock run of {label} does not show"),
    };
    let frames = if first.mana_frames.is_empty() {
        "no mana frame".to_owned()
    } else {
        format!("mana frames: {}", first.mana_frames.join(", "))
    };
    let mut c = Check::new(
        DEBUG_REPORTS_CHECK,
        CheckStatus::Fail,
        format!("{} report(s) {why}; first: {} ({frames})", failing.len(), first.headline()),
    );
    // The same report from every queue (one WARN per NAPI on rmmod) is listed once, with its count.
    let mut distinct: Vec<(String, String, String, usize)> = Vec::new();
    for r in &failing {
        let signature = r.signature();
        match distinct.iter_mut().find(|(sig, ..)| *sig == signature) {
            Some(seen) => seen.3 += 1,
            None => distinct.push((signature, r.headline(), r.mana_frames.join(", "), 1)),
        }
    }
    for (_, headline, frames, times) in distinct {
        c.detail.push(if times > 1 { format!("{headline} ({times} times)") } else { headline });
        c.detail.push(if frames.is_empty() {
            "  no mana frame".to_owned()
        } else {
            format!("  mana frames: {frames}")
        });
    }
    c.detail.push(kmemleak);
    c.detail.extend(explained);
    c.detail.extend(notes);
    c
}

/// Every report of a debug run: the kernel log's, kmemleak's, and the hints
/// that read freed memory.
pub fn all_reports(log: &DebugLog<'_>) -> Vec<DebugReport> {
    let mut reports = split_klog(log.klog);
    reports.extend(split_kmemleak(log.kmemleak));
    reports.extend(poisoned_hints(log.vectors, log.nr_cpus));
    reports
}

/// `lines` with repeats counted: `line (N times)`, in first-seen order.
fn dedup(lines: Vec<String>) -> Vec<String> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for l in lines {
        match out.iter_mut().find(|(s, _)| *s == l) {
            Some(seen) => seen.1 += 1,
            None => out.push((l, 1)),
        }
    }
    out.into_iter().map(|(l, n)| if n > 1 { format!("{l} ({n} times)") } else { l }).collect()
}

impl Verdict {
    /// Append the [`DEBUG_REPORTS_CHECK`] of a debug kernel's run, judged
    /// `against` the stock kernel or the mana frames
    /// ([`debug_reports_against`]); the status becomes Fail when it fails.
    pub fn add_debug_reports(&mut self, log: &DebugLog<'_>, against: &Against) {
        self.add_check(debug_reports_against(log, against));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    /// The check over kernel-log lines alone, kmemleak having scanned twice.
    fn judge_klog(klog: &[String]) -> Check {
        debug_reports(&DebugLog { state: Some("kmemleak=2"), kmemleak: &[], klog, vectors: &[], nr_cpus: 8 })
    }

    // The shapes of mm/kasan/report.c's report (print_report(): the title, the
    // access, the call trace, the allocation and free stacks, the closing rule)
    // and of mm/kmemleak.c's print_unreferenced(), with made-up addresses.
    const KASAN_UAF: &str = "BUG: KASAN: slab-use-after-free in bitmap_string+0x2f1/0x3a0
Read of size 8 at addr ffff888004a1c5a0 by task cat/97
CPU: 0 UID: 0 PID: 97 Comm: cat Not tainted 6.12.117-manarig #1
Call Trace:
 <TASK>
 dump_stack_lvl+0x51/0x70
 irq_affinity_hint_proc_show+0xa1/0x140
 seq_read_iter+0x1f2/0x6b0
 </TASK>
Allocated by task 81:
 __kmalloc_noprof+0x1a3/0x3c0
 irq_setup+0x3d/0x3a0 [mana]
 mana_gd_setup_irqs+0x2c1/0x5b0 [mana]
Freed by task 81:
 kfree+0xe1/0x2f0
 irq_setup+0x1b5/0x3a0 [mana]
The buggy address belongs to the object at ffff888004a1c5a0
==================================================================
mana 0000:41:00.0: Microsoft Azure Network Adapter protocol version: 0.1.1";

    const KMEMLEAK: &str = "unreferenced object 0xffff888003f6e000 (size 64):
comm \"insmod\", pid 80, jiffies 4294893406
hex dump (first 32 bytes):
00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
backtrace (crc 0):
kmemleak_alloc+0x4a/0x80
__kmalloc_noprof+0x2a5/0x3c0
mana_gd_setup_irqs+0x61/0x5b0 [mana]
mana_gd_probe+0x1e4/0x3f0 [mana]
unreferenced object 0xffff888003f6f000 (size 32):
comm \"swapper/0\", pid 1, jiffies 4294892000
backtrace (crc 5a1):
acpi_os_allocate_zeroed+0x1c/0x30";

    #[test]
    fn a_kasan_report_with_mana_allocation_and_free_stacks_fails_naming_them() {
        let r = split_klog(&lines(KASAN_UAF));
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].kind, ReportKind::Kasan);
        assert_eq!(
            r[0].mana_frames,
            ["irq_setup+0x3d/0x3a0 [mana]", "mana_gd_setup_irqs+0x2c1/0x5b0 [mana]", "irq_setup+0x1b5/0x3a0 [mana]"]
        );
        // The driver's message after the closing rule is not part of the report.
        assert!(r[0].lines.last().is_some_and(|l| l.starts_with("=====")), "{:?}", r[0].lines);
        let c = debug_reports(&DebugLog {
            state: Some("kmemleak=1"),
            kmemleak: &[],
            klog: &lines(KASAN_UAF),
            vectors: &[],
            nr_cpus: 8,
        });
        assert_eq!(c.status, CheckStatus::Fail);
        assert!(c.message.contains("KASAN: BUG: KASAN: slab-use-after-free in bitmap_string"), "{}", c.message);
        assert!(c.message.contains("mana frames: irq_setup+0x3d/0x3a0 [mana]"), "{}", c.message);
    }

    #[test]
    fn a_kmemleak_object_allocated_by_mana_fails_and_others_are_notes() {
        let r = split_kmemleak(&lines(KMEMLEAK));
        assert_eq!(r.len(), 2);
        assert!(r[0].touches_mana() && !r[1].touches_mana());
        let c = debug_reports(&DebugLog {
            state: Some("kmemleak=1"),
            kmemleak: &lines(KMEMLEAK),
            klog: &[],
            vectors: &[],
            nr_cpus: 8,
        });
        assert_eq!(c.status, CheckStatus::Fail);
        assert!(c.message.starts_with("1 report(s) touch mana; first: kmemleak: unreferenced object"), "{}", c.message);
        assert!(c.message.contains("mana_gd_setup_irqs+0x61/0x5b0 [mana]"), "{}", c.message);
        assert!(c
            .detail
            .iter()
            .any(|d| d.starts_with("note (no mana frame): kmemleak: unreferenced object 0xffff888003f6f000")));
    }

    /// Debian 7.3.4's mana on `--reprobe`: rmmod disables each NAPI without the
    /// netdev instance lock, one lockdep assertion WARN per queue, all alike.
    #[test]
    fn the_same_report_from_every_queue_is_listed_once_with_its_count() {
        let one = "------------[ cut here ]------------
WARNING: ../src/include/net/netdev_lock.h:17 at napi_disable_locked+0x3b1/0x580, CPU#0: rmmod/111
Modules linked in: mana(-) dimlib
Call Trace:
 mana_destroy_rxq+0x8e0/0xbf0 [mana]
 mana_remove+0x2b7/0x5c0 [mana]
---[ end trace 0000000000000000 ]---
";
        let klog = lines(&one.repeat(3));
        let c = judge_klog(&klog);
        assert_eq!(c.status, CheckStatus::Fail);
        assert!(c.message.starts_with("3 report(s) touch mana"), "{}", c.message);
        assert_eq!(c.detail.iter().filter(|d| d.contains("netdev_lock.h:17")).count(), 1, "{:#?}", c.detail);
        assert!(c.detail[0].ends_with("(3 times)"), "{:#?}", c.detail);
    }

    /// 6.1 with examples/patches/freed-affinity-hint-6.1: one KASAN report per
    /// hint read, differing only in the address, the task and the taint flags.
    #[test]
    fn kasan_reports_that_differ_only_in_address_and_task_are_one_bug() {
        let report = |addr: &str, pid: u32, taint: &str| {
            format!(
                "BUG: KASAN: use-after-free in irq_affinity_hint_proc_show+0x163/0x240
Read of size 8 at addr {addr} by task cat/{pid}
CPU: 0 PID: {pid} Comm: cat {taint} 6.1.192-manarig #3
Call Trace:
 irq_affinity_hint_proc_show+0x163/0x240
Allocated by task 8:
 mana_gd_setup+0x41b/0xb40 [mana]
Freed by task 8:
 mana_gd_setup+0x41b/0xb40 [mana]
==================================================================
"
            )
        };
        let text = report("ffff888004e5a908", 80, "Not tainted") + &report("ffff888004e5a878", 81, "Tainted: G    B");
        let c = judge_klog(&lines(&text));
        assert_eq!(c.status, CheckStatus::Fail);
        assert!(c.message.starts_with("2 report(s) touch mana"), "{}", c.message);
        assert!(c.detail[0].ends_with("(2 times)"), "{:#?}", c.detail);
        assert_eq!(c.detail.iter().filter(|d| d.contains("KASAN")).count(), 1, "{:#?}", c.detail);
    }

    /// Linux 7.3's debug kernel booted through PVH: kmemleak's early pool ran
    /// out ("Memory pool empty") and it disabled itself; the agent's scan got
    /// EPERM (mm/kmemleak.c kmemleak_write()) and it sent `kmemleak=disabled`.
    #[test]
    fn a_kmemleak_that_disabled_itself_is_not_a_pass() {
        let c = debug_reports(&DebugLog {
            state: Some("kmemleak=disabled"),
            kmemleak: &[],
            klog: &[],
            vectors: &[],
            nr_cpus: 8,
        });
        assert_eq!(c.status, CheckStatus::Skip, "{c:?}");
        assert!(c.message.contains("kmemleak disabled itself, so leaks were not checked"), "{}", c.message);
    }

    #[test]
    fn reports_elsewhere_are_notes_of_a_pass_and_no_debug_state_is_a_skip() {
        let klog = lines(
            "------------[ cut here ]------------
WARNING: CPU: 0 PID: 1 at kernel/irq/manage.c:2042 free_irq+0x2a/0x40
Call Trace:
 free_irq+0x2a/0x40
---[ end trace 0000000000000000 ]---
WARNING: possible circular locking dependency detected
 6.12.117-manarig #1 Not tainted
BUG: sleeping function called from invalid context at mm/slab.c:1
in_atomic(): 1, irqs_disabled(): 0",
        );
        let r = split_klog(&klog);
        let kinds: Vec<ReportKind> = r.iter().map(|x| x.kind).collect();
        assert_eq!(kinds, [ReportKind::Warn, ReportKind::Lockdep, ReportKind::Bug]);
        assert_eq!(r[0].lines.len(), 5, "the cut-here line and the WARNING line are one report");
        let c = judge_klog(&klog);
        assert_eq!(c.status, CheckStatus::Pass, "{c:?}");
        assert!(c.message.contains("kmemleak scanned at 2 point(s); 3 report(s) elsewhere"), "{}", c.message);
        assert_eq!(c.detail.len(), 3);
        let c = debug_reports(&DebugLog { state: None, kmemleak: &[], klog: &[], vectors: &[], nr_cpus: 8 });
        assert_eq!(c.status, CheckStatus::Skip);
    }

    fn vector(irq: u32, name: &str, hint: &str) -> ObservedVector {
        ObservedVector {
            irq,
            name: name.to_string(),
            smp_affinity: CpuMask::parse_cpulist(hint).expect("cpulist"),
            affinity_hint: Some(CpuMask::parse_cpulist(hint).expect("cpulist")),
            effective: None,
            counts: Vec::new(),
        }
    }

    /// examples/patches/freed-affinity-hint-6.12 on seed 000's 8 CPUs, as a real
    /// 6.12 debug kernel showed it: every hint read `0-1,3,5-6` (0x6b).
    #[test]
    fn a_hint_that_reads_slubs_free_poison_fails_naming_the_irq() {
        assert_eq!(poison_mask(8).to_cpulist(), "0-1,3,5-6");
        assert_eq!(poison_mask(16).to_cpulist(), "0-1,3,5-6,8-9,11,13-14");
        let vectors =
            [vector(25, "mana_hwc@pci:0000:41:00.0", "0-1"), vector(26, "mana_q0@pci:0000:41:00.0", "0-1,3,5-6")];
        let c = debug_reports(&DebugLog {
            state: Some("kmemleak=1"),
            kmemleak: &[],
            klog: &[],
            vectors: &vectors,
            nr_cpus: 8,
        });
        assert_eq!(c.status, CheckStatus::Fail, "{c:?}");
        assert!(
            c.message.starts_with("1 report(s) touch mana; first: slub_debug: affinity_hint of IRQ 26 (mana_q0@pci:0000:41:00.0) reads 0-1,3,5-6: SLUB's free poison"),
            "{}",
            c.message
        );
        // The same hint on 16 CPUs is a real mask, and below 8 CPUs nothing is judged.
        let c = debug_reports(&DebugLog {
            state: Some("kmemleak=1"),
            kmemleak: &[],
            klog: &[],
            vectors: &vectors,
            nr_cpus: 16,
        });
        assert_eq!(c.status, CheckStatus::Pass, "{c:?}");
        let small = [vector(26, "mana_q0", "0-1,3")];
        assert!(poisoned_hints(&small, 4).is_empty());
    }

    #[test]
    fn mana_frames_are_told_by_module_tag_name_or_source_path() {
        assert_eq!(mana_frames_of(" mana_hwc_rx_event_handler+0x1/0x2"), ["mana_hwc_rx_event_handler+0x1/0x2"]);
        assert_eq!(mana_frames_of("RIP: 0010:irq_setup+0x5/0x9 [mana]"), ["irq_setup+0x5/0x9 [mana]"]);
        assert_eq!(
            mana_frames_of("WARNING: CPU: 1 PID: 80 at drivers/net/ethernet/microsoft/mana/gdma_main.c:99 f+0x1/0x2"),
            ["drivers/net/ethernet/microsoft/mana/gdma_main.c:99"]
        );
        assert!(mana_frames_of("mana 0000:41:00.0: probe done").is_empty());
        assert!(mana_frames_of("irq_setup+0x5/0x9 [virtio_net]").is_empty());
        assert!(mana_frames_of("manage_workers+0x5/0x9").is_empty());
    }

    /// A WARN on rmmod of Debian 7.3.4's mana as the stock `7.x-debug` build
    /// printed it on seed 002 (the report's kernel log; one per queue).
    const WARN_ON_RMMOD: &str = "------------[ cut here ]------------
WARNING: ../src/include/net/netdev_lock.h:17 at napi_disable_locked+0x3b1/0x580, CPU#0: rmmod/115
Modules linked in: mana(-) dimlib
Call Trace:
 mana_destroy_rxq+0x8e0/0xbf0 [mana]
 mana_detach+0xb0f/0x14c0 [mana]
 ? mana_attach+0x200/0x200 [mana]
 mana_remove+0x2b7/0x5c0 [mana]
 mana_gd_remove+0x4e/0x1d0 [mana]
 mana_driver_exit+0x113/0x1070 [mana]
---[ end trace 0000000000000000 ]---";

    /// kmemleak's report of an skb the TCP stack allocated and a driver never
    /// released: no mana frame in its allocation backtrace.
    const SKB_LEAK: &str = "unreferenced object 0xffff888005b2c780 (size 232):
comm \"manarig-flows\", pid 120, jiffies 4294900000
backtrace (crc 1):
kmemleak_alloc+0x4a/0x80
kmem_cache_alloc_node_noprof+0x1c5/0x3c0
__alloc_skb+0x1d1/0x260
tcp_stream_alloc_skb+0x3c/0x1d0
tcp_sendmsg_locked+0x8ba/0x1750";

    #[test]
    fn a_class_masks_the_cpu_and_task_of_the_newer_warn_line_too() {
        let l = lines("------------[ cut here ]------------\nWARNING: ../src/include/net/netdev_lock.h:17 at napi_disable_locked+0x3b1/0x580, CPU#0: rmmod/115\n---[ end trace 0000000000000000 ]---");
        let w = split_klog(&l);
        assert_eq!(w[0].kind, ReportKind::Warn);
        assert_eq!(
            w[0].class(),
            "WARN: WARNING: ../src/include/net/netdev_lock.h:17 at napi_disable_locked CPU#N: rmmod/N"
        );
    }

    #[test]
    fn a_class_masks_addresses_offsets_cpus_and_pids() {
        // Linux 6.12's WARN line (kernel/panic.c __warn()).
        let w = split_klog(&lines(
            "------------[ cut here ]------------\nWARNING: CPU: 1 PID: 97 at net/core/dev.c:6900 napi_disable+0x8a/0xb0\n---[ end trace 0000000000000000 ]---",
        ));
        assert_eq!(w[0].class(), "WARN: WARNING: CPU: N PID: N at net/core/dev.c:6900 napi_disable");
        let k = split_kmemleak(&lines(SKB_LEAK));
        assert_eq!(
            k[0].class(),
            "kmemleak: unreferenced object ADDR (size 232): from kmem_cache_alloc_node_noprof < __alloc_skb < \
             tcp_stream_alloc_skb < tcp_sendmsg_locked"
        );
        assert!(!k[0].touches_mana());
    }

    #[test]
    fn kmemleak_objects_of_one_size_from_two_paths_are_two_classes() {
        let icmp = SKB_LEAK.replace(
            "tcp_stream_alloc_skb+0x3c/0x1d0\ntcp_sendmsg_locked+0x8ba/0x1750",
            "__ip_append_data+0x9f1/0xe80\nip_append_data+0x87/0xd0",
        );
        let (tcp, icmp) = (split_kmemleak(&lines(SKB_LEAK)), split_kmemleak(&lines(&icmp)));
        assert_ne!(tcp[0].class(), icmp[0].class());
        assert!(icmp[0]
            .class()
            .ends_with("from kmem_cache_alloc_node_noprof < __alloc_skb < __ip_append_data < ip_append_data"));
    }

    #[test]
    fn a_frame_the_unwinder_only_guessed_is_not_a_mana_frame() {
        assert!(mana_frames_of(" ? mana_poll+0x2c/0x3a0 [mana]").is_empty());
        assert_eq!(mana_frames_of(" mana_poll+0x2c/0x3a0 [mana]"), ["mana_poll+0x2c/0x3a0 [mana]"]);
        assert_eq!(frame_function(" ? __alloc_skb+0x1d1/0x260"), None);
        assert_eq!(
            frame_function("[<ffffffff81234567>] mana_gd_probe+0x1e4/0x3f0 [mana]").as_deref(),
            Some("mana_gd_probe [mana]")
        );
    }

    /// A kmemleak report is quoted by where the object came from: the
    /// allocation backtrace's first frames past kmemleak's own, not the hex dump.
    #[test]
    fn a_kmemleak_headline_quotes_the_allocation_not_the_hex_dump() {
        let k = split_kmemleak(&lines(SKB_LEAK));
        assert_eq!(
            k[0].headline(),
            "kmemleak: unreferenced object 0xffff888005b2c780 (size 232): / comm \"manarig-flows\", pid 120, jiffies \
             4294900000 / kmem_cache_alloc_node_noprof+0x1c5/0x3c0 / __alloc_skb+0x1d1/0x260 / \
             tcp_stream_alloc_skb+0x3c/0x1d0"
        );
        let k = split_kmemleak(&lines(KMEMLEAK));
        assert!(k[0].headline().ends_with("/ __kmalloc_noprof+0x2a5/0x3c0 / mana_gd_setup_irqs+0x61/0x5b0 [mana] / mana_gd_probe+0x1e4/0x3f0 [mana]"), "{}", k[0].headline());
        assert!(!k[0].headline().contains("hex dump"));
    }

    #[test]
    fn against_the_stock_run_a_new_class_fails_without_a_mana_frame_and_a_stock_one_passes() {
        let kmemleak = lines(SKB_LEAK);
        let log = DebugLog { state: Some("kmemleak=2"), kmemleak: &kmemleak, klog: &[], vectors: &[], nr_cpus: 8 };
        let label = "linux-source-6.12 6.12.117-1 stock (build 1a2b3c4d) on seed-002".to_owned();
        let c = debug_reports_against(&log, &Against::Stock { label: label.clone(), classes: BTreeSet::new() });
        assert_eq!(c.status, CheckStatus::Fail, "{c:?}");
        assert!(c.message.contains("does not show") && c.message.contains("no mana frame"), "{}", c.message);
        // By the mana frames alone the same leak would pass: the core allocated it.
        assert_eq!(debug_reports(&log).status, CheckStatus::Pass);
        let classes: BTreeSet<String> = split_kmemleak(&kmemleak).iter().map(DebugReport::class).collect();
        let c = debug_reports_against(&log, &Against::Stock { label, classes });
        assert_eq!(c.status, CheckStatus::Pass, "{c:?}");
        assert!(c.detail.iter().any(|d| d.starts_with("also in the stock run of")), "{:?}", c.detail);
    }

    #[test]
    fn a_stock_kernels_known_finding_is_listed_not_failed() {
        // Each RX queue's second WARN on that rmmod, from netif_napi_del_locked()
        // (the same run: `at __netif_napi_del_locked+0x2ec/0x3a0`, `mana_destroy_rxq+0x8f4/0xbf0`).
        let napi_del = WARN_ON_RMMOD
            .replace("napi_disable_locked+0x3b1/0x580", "__netif_napi_del_locked+0x2ec/0x3a0")
            .replace("mana_destroy_rxq+0x8e0", "mana_destroy_rxq+0x8f4");
        let klog = lines(&format!("{WARN_ON_RMMOD}\n{napi_del}\n{WARN_ON_RMMOD}\n{napi_del}"));
        let log = DebugLog { state: Some("kmemleak=2"), kmemleak: &[], klog: &klog, vectors: &[], nr_cpus: 8 };
        assert_eq!(debug_reports(&log).status, CheckStatus::Fail, "a mana frame without a known finding fails");
        let known = crate::verdict::debug_against::known_findings("7.3.4-manarig-a75a97c9").expect("findings");
        let c = debug_reports_against(&log, &Against::ManaFrames { known });
        assert_eq!(c.status, CheckStatus::Pass, "{c:?}");
        assert_eq!(c.detail.len(), 2, "{:?}", c.detail);
        assert!(
            c.detail.iter().all(|d| d.starts_with("known finding of this kernel: WARN:") && d.ends_with("(2 times)")),
            "{:?}",
            c.detail
        );
        assert!(c.detail[1].contains("__netif_napi_del_locked"), "{:?}", c.detail);
        // The 6.12 kernel has no such finding: the same WARN fails there.
        let known = crate::verdict::debug_against::known_findings("6.12.117+deb13-cloud-amd64").expect("findings");
        assert_eq!(debug_reports_against(&log, &Against::ManaFrames { known }).status, CheckStatus::Fail);
    }
}
