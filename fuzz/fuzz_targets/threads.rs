//! libFuzzer target `threads`: see manarig_fuzz::targets::threads.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| manarig_fuzz::targets::threads(data));
