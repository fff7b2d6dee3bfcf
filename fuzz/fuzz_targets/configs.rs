//! libFuzzer target `configs`: see manarig_fuzz::targets::configs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| manarig_fuzz::targets::configs(data));
