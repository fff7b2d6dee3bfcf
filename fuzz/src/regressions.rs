//! Inputs the campaigns found, replayed on their targets' machines
//! (fuzz/regressions/TARGET/; docs/fuzzing.md, "Findings"). What each asserts
//! is what was wrong, counted, not timed.

use crate::machine::with_machine;
use crate::ops::{apply_all, decode_all, INPUT_INTERRUPTS};
use crate::targets::backend_spec;

/// fuzz/regressions/backend/timeout-d619396…: campaign 5's slow `backend`
/// input (4,193 bytes, 409 ops). It zeroes 1.4 MB of guest RAM over the
/// queues' rings, so every arm of an Ethernet CQ finds its pending entry
/// unreadable to the driver model and fires again; 283 one-byte `Pump`s
/// each restarted that storm for a pump's whole budget (512): 145,922
/// interrupts, each pump copying the whole history of raised vectors (the
/// replay took 24.6 s, 4.8 s of CPU, past libFuzzer's 10 s).
const SLOW_BACKEND: &[u8] = include_bytes!("../regressions/backend/timeout-d619396af4da138b8e289ea78e0672c0a9d6abbd");

#[test]
fn the_slow_backend_input_of_campaign_5_takes_at_most_an_inputs_interrupts() {
    let ops = decode_all(SLOW_BACKEND);
    assert_eq!(ops.len(), 409, "the input as the campaign saved it");
    with_machine(&backend_spec(), |machine| {
        let (before, raised_before) = (machine.drv.interrupts_taken(), machine.drv.irqs.count());
        apply_all(&ops, machine);
        let taken = machine.drv.interrupts_taken() - before;
        assert!(taken <= INPUT_INTERRUPTS, "the driver model took {taken} interrupts");
        // The storm did happen: the budget ended it, not a change of the input.
        assert!(machine.drv.irqs.count() - raised_before >= INPUT_INTERRUPTS / 2, "{taken} taken");
    });
}
