//! libFuzzer target `hwc`: see manarig_fuzz::targets::hwc.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| manarig_fuzz::targets::hwc(data));
