//! libFuzzer target `bar0`: see manarig_fuzz::targets::bar0.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| manarig_fuzz::targets::bar0(data));
