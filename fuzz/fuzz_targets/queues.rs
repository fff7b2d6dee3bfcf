//! libFuzzer target `queues`: see manarig_fuzz::targets::queues.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| manarig_fuzz::targets::queues(data));
