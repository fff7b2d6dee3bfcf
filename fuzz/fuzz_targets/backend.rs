//! libFuzzer target `backend`: see manarig_fuzz::targets::backend.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| manarig_fuzz::targets::backend(data));
