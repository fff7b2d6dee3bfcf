//! Whether the timed device events a run asked for (`--inject reset@S`,
//! `link-down@S`, `link-up@S`; mana_device_api::inject::timed) happened. The
//! device raises each S seconds (host clock) after the driver first opens its
//! vPort; a guest that finishes its work and unloads `mana` sooner never sees
//! it, and its run says nothing about the fault. Such a run is a rig error,
//! not a PASS.

use mana_device_api::inject::InjectSpec;
use std::collections::BTreeMap;

/// Errors when a timed event of `inject` is not among the injections the
/// device counted as struck by the report (`struck`: the device status's
/// `counters.injected`, keyed by SPEC text); `None` (no device status) says
/// nothing either way.
///
/// # Errors
/// [`TimedInjectionsMissed`]: one line naming the events that never happened
/// and what to change.
pub fn timed_injections_happened(
    inject: &[InjectSpec],
    struck: Option<&BTreeMap<String, u64>>,
) -> Result<(), TimedInjectionsMissed> {
    let Some(struck) = struck else { return Ok(()) };
    let missed: Vec<String> = inject
        .iter()
        .filter(|s| matches!(s, InjectSpec::Timed { .. }))
        .map(ToString::to_string)
        .filter(|s| !struck.contains_key(s))
        .collect();
    if missed.is_empty() {
        return Ok(());
    }
    Err(TimedInjectionsMissed { missed })
}

/// Timed events a run asked for that the device never raised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--inject {} never happened: the device raises a timed event S seconds after the driver opens its vPort, and \
     the guest unloaded mana before that; give the driver work that lasts longer (--traffic --traffic-bytes, \
     e.g. 2000000) or a smaller S",
    missed.join(", ")
)]
pub struct TimedInjectionsMissed {
    /// The events, as SPEC text (`reset@3`).
    pub missed: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(text: &[&str]) -> Vec<InjectSpec> {
        text.iter().map(|s| s.parse().expect("a valid spec")).collect()
    }

    #[test]
    fn a_timed_event_the_device_never_raised_is_a_rig_error_naming_it() {
        let inject = specs(&["reset@3", "link-down@1", "status:create_dma_region=0xc000000d@1"]);
        let struck = BTreeMap::from([("link-down@1".to_string(), 1)]);
        let e = timed_injections_happened(&inject, Some(&struck)).expect_err("reset@3 never struck");
        assert_eq!(e.missed, ["reset@3"], "only the timed events that missed");
        let struck = BTreeMap::from([("link-down@1".to_string(), 1), ("reset@3".to_string(), 1)]);
        assert!(timed_injections_happened(&inject, Some(&struck)).is_ok());
        assert!(timed_injections_happened(&inject, None).is_ok(), "no device status: nothing to say");
    }
}
