//! What the guest's kernel log says about the driver, for the checks that
//! read it (`driver_survived` under fault injection, a soak's
//! `soak_kernel_log` and `soak_disruptions`): the lines that mean the kernel
//! or the driver broke, and what a kernel cannot do with a device event.

/// Kernel log patterns that mean the kernel or the driver broke.
pub(super) const FATAL: [&str; 7] = [
    "BUG:",
    "Oops",
    "general protection",
    "Kernel panic",
    "unable to handle",
    "possible circular locking",
    "blocked for more than",
];

/// A note for each timed device event (`reset@S`, `link-down@S`,
/// `link-up@S`; device_model::inject::timed) that `kernel` (its release,
/// `uname -r`) has no handler for, so that a run where nothing happened says
/// why. Linux 6.x's `mana_gd_process_eqe()`
/// (drivers/net/ethernet/microsoft/mana/gdma_main.c, checked in 6.1.192 and
/// 6.12.117) drops GDMA_EQE_HWC_SOC_RECONFIG_DATA and knows no
/// GDMA_EQE_HWC_RESET_REQUEST; 7.3.4 handles both (hw_channel.c
/// `mana_hwc_init_event_handler()`, gdma_main.c `mana_serv_reset()`).
pub(super) fn unhandled_events(kernel: &str, specs: &[String]) -> Vec<String> {
    let major: Option<u32> = kernel.split('.').next().and_then(|m| m.parse().ok());
    if major.is_none_or(|m| m >= 7) {
        return Vec::new();
    }
    let mut notes = Vec::new();
    if specs.iter().any(|s| s.starts_with("link-down@") || s.starts_with("link-up@")) {
        notes.push(format!(
            "note: Linux {kernel}'s mana has no link event handling (6.x gdma_main.c mana_gd_process_eqe() drops \
             GDMA_EQE_HWC_SOC_RECONFIG_DATA): it ignores the link events"
        ));
    }
    if specs.iter().any(|s| s.starts_with("reset@")) {
        notes.push(format!(
            "note: Linux {kernel}'s mana has no reset handling (6.x gdma_main.c mana_gd_process_eqe() drops \
             GDMA_EQE_HWC_RESET_REQUEST, and no pci_error_handlers): it kept using the queues the device forgot"
        ));
    }
    notes
}
