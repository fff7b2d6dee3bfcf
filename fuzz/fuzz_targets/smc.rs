//! libFuzzer target `smc`: see manarig_fuzz::targets::smc.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| manarig_fuzz::targets::smc(data));
