//! libFuzzer target `vfio_region`: see manarig_fuzz::targets::vfio_region.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| manarig_fuzz::targets::vfio_region(data));
