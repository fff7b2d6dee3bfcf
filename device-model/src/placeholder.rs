//! A stand-in BAR0 until the device core (`ManaDevice`) is wired in.
//!
//! It answers the three registers `mana_gd_init_vf_regs()` reads first
//! (drivers/net/ethernet/microsoft/mana/gdma_main.c, Linux 6.1-6.16) so the
//! guest driver gets past BAR0 setup (/work/shared/protocol/mana-gdma.md,
//! "BAR0 registers"): 0x08 `GDMA_REG_DB_PAGE_OFFSET` = 0x1000, 0x10
//! `GDMA_REG_DB_PAGE_SIZE` = 0x1000, 0x18 `GDMA_REG_SHM_OFFSET` = 0x100;
//! everything else reads 0 and writes are dropped. TODO(devshell): delete once `ManaDevice` is merged.

use crate::bar::Bar0Handler;

/// Placeholder BAR0 of 64 KiB.
#[derive(Debug, Default)]
pub struct PlaceholderBar0;

impl PlaceholderBar0 {
    fn register(offset: u64) -> u64 {
        match offset {
            0x08 | 0x10 => 0x1000,
            0x18 => 0x100,
            _ => 0,
        }
    }
}

impl Bar0Handler for PlaceholderBar0 {
    fn size(&self) -> u64 {
        0x1_0000
    }

    fn read(&mut self, offset: u64, data: &mut [u8]) {
        let aligned = offset & !7;
        let value = Self::register(aligned).to_le_bytes();
        let shift = (offset - aligned) as usize;
        for (i, byte) in data.iter_mut().enumerate() {
            *byte = value.get(shift + i).copied().unwrap_or(0);
        }
    }

    fn write(&mut self, _offset: u64, _data: &[u8]) {}

    fn reset(&mut self) {}
}
