//! What a run on a debug kernel (`--kernel 6.12-debug`, or a `kernel build
//! --debug`) changes: the kernel command line that turns the checkers on and
//! keeps their reports coming, the agent's debug mode, and longer deadlines.

use crate::qemu::Speedups;
use std::time::Duration;

/// Kernel command-line items of a debug kernel's runs:
/// - `slub_debug`: SLUB red zones, poisoning and owner tracking on every cache
///   (Documentation/mm/slub.rst); CONFIG_SLUB_DEBUG only makes them available;
/// - `kasan.fault=report`: a KASAN report does not panic (mm/kasan/report.c);
/// - `kasan_multi_shot`: every KASAN report is printed, not only the first;
/// - `panic_on_warn=0`: a WARN does not panic, so the agent still reports.
pub const CMDLINE: [&str; 4] = ["slub_debug", "kasan.fault=report", "kasan_multi_shot", "panic_on_warn=0"];

/// The boot speed-ups of a debug kernel's run: `speedups` without the CPU
/// flags ([`crate::qemu::speed::SPEED_CPU_FLAGS`], `mtrr=off`), without PVH
/// and without the ACPI one ([`crate::qemu::speed::SPEED_GLOBAL`]).
///
/// - Without MTRRs Linux 7.3's `pmd_set_huge()` refuses huge mappings ("Cannot
///   satisfy … with a huge-page mapping due to MTRR override") and KASAN maps
///   its shadow one page at a time at boot. Each of those early allocations
///   takes an object from kmemleak's early pool
///   (CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE, 16000): on seed 002's 512 MB the
///   pool ran out ("Memory pool empty") and kmemleak disabled itself, so a leak
///   went unreported. With MTRRs the same kernel reported the leak.
/// - Debian 6.1's debug kernel entered through PVH stops before its first
///   console line (QEMU exits, nothing printed, also with `ignore_loglevel`);
///   through the BIOS and the decompressor it boots and passes. Against a
///   debug kernel's minute of boot the BIOS path costs a few seconds.
/// - The ACPI speed-up (no PCI hotplug in QEMU's ACPI tables) was measured
///   on the minimal kernels only; against a minute of boot it would save a
///   fraction of a second, so debug runs keep QEMU's default.
///
/// Measured on seed 002 (README "Debug kernels").
pub fn speedups(speedups: Speedups) -> Speedups {
    Speedups { cpu: false, pvh: false, acpi: false, ..speedups }
}

/// How much longer a debug kernel takes than the minimal one under TCG: the
/// agent's guest deadline and the host deadline are multiplied by this.
/// KASAN's inline checks, lockdep and SLUB poisoning make boot and probe
/// several times slower (docs/boot-speed.md, "Debug kernels"), and kmemleak's
/// scans (twice per scan point) come on top.
pub const SLOWDOWN: u32 = 4;

/// The agent's deadline (guest seconds) for a debug kernel.
pub fn agent_deadline_s(minimal_s: u32) -> u32 {
    minimal_s.saturating_mul(SLOWDOWN)
}

/// The host deadline for a debug kernel.
pub fn host_deadline(minimal: Duration) -> Duration {
    minimal.saturating_mul(SLOWDOWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_keeps_reports_coming_and_the_agent_items_are_not_set_here() {
        assert!(CMDLINE.contains(&"panic_on_warn=0") && CMDLINE.contains(&"kasan.fault=report"));
        assert!(CMDLINE.iter().all(|i| !crate::guest_protocol::options::is_agent_item(i)));
        assert_eq!(agent_deadline_s(60), 240);
        assert_eq!(host_deadline(Duration::from_secs(900)), Duration::from_secs(3600));
        assert_eq!(speedups(Speedups::ALL).names(), ["cmdline"]);
    }
}
