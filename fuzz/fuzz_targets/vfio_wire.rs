//! libFuzzer target `vfio_wire`: see manarig_fuzz::targets::vfio_wire.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| manarig_fuzz::targets::vfio_wire(data));
