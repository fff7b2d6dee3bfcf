//! libFuzzer target `inject`: see manarig_fuzz::targets::inject.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| manarig_fuzz::targets::inject(data));
