//! libFuzzer target `msix`: see manarig_fuzz::targets::msix.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| manarig_fuzz::targets::msix(data));
