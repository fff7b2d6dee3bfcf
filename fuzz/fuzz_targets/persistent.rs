//! libFuzzer target `persistent`: see manarig_fuzz::targets::persistent.
//! This binary counts the live heap (manarig_fuzz::heap).
#![no_main]

#[global_allocator]
static HEAP: manarig_fuzz::heap::Counting = manarig_fuzz::heap::Counting;

libfuzzer_sys::fuzz_target!(|data: &[u8]| manarig_fuzz::targets::persistent(data));
