//! BAR0 layout of the emulated VF: register map, SMC aperture, doorbell pages.
//!
//! Models what `mana_gd_init_vf_regs()` (drivers/net/ethernet/microsoft/mana/
//! gdma_main.c, Linux 6.1-7.3) reads: `GDMA_REG_DB_PAGE_OFFSET` (0x08, readq),
//! `GDMA_REG_DB_PAGE_SIZE` (0x10, readl & 0xFFFF) and `GDMA_REG_SHM_OFFSET`
//! (0x18, readq). The values satisfy 7.3's extra checks (page size ≥ 4 KiB,
//! offsets inside BAR0, SHM 4-byte aligned with 32 bytes left).
#![forbid(unsafe_code)]

/// BAR0 size in bytes (64 KiB, a power of two).
pub const BAR0_SIZE: u64 = 0x1_0000;
/// BAR0 offset of the register holding the doorbell page offset.
pub const REG_DB_PAGE_OFFSET: u64 = 0x08;
/// BAR0 offset of the register holding the doorbell page size.
pub const REG_DB_PAGE_SIZE: u64 = 0x10;
/// BAR0 offset of the register holding the SMC aperture offset.
pub const REG_SHM_OFFSET: u64 = 0x18;
/// Byte offset of doorbell page 0 in BAR0.
pub const DB_PAGE_OFFSET: u64 = 0x1000;
/// Stride between doorbell pages in bytes.
pub const DB_PAGE_SIZE: u64 = 0x1000;
/// Byte offset of the 32-byte SMC aperture in BAR0.
pub const SHM_OFFSET: u64 = 0x100;
/// Size of the SMC aperture (`SMC_APERTURE_SIZE`, shm_channel.h 7.3).
pub const SHM_SIZE: u64 = 32;
/// Number of doorbell pages that fit in BAR0 after [`DB_PAGE_OFFSET`].
pub const NUM_DB_PAGES: u64 = (BAR0_SIZE - DB_PAGE_OFFSET) / DB_PAGE_SIZE;

// mana_gd_init_vf_regs() in 7.3: db page size >= SZ_4K, offsets inside BAR0,
// SHM 4-byte aligned with SMC_APERTURE_SIZE (32) bytes left; and
// mana_gd_register_device() in 7.3: db_page_off + size * (db_id + 1) <= bar0 for db_id 0.
const _: () = {
    assert!(DB_PAGE_SIZE >= 4096);
    assert!(DB_PAGE_OFFSET < BAR0_SIZE);
    assert!(SHM_OFFSET < BAR0_SIZE && BAR0_SIZE - SHM_OFFSET >= SHM_SIZE && SHM_OFFSET % 4 == 0);
    assert!(DB_PAGE_OFFSET + DB_PAGE_SIZE <= BAR0_SIZE);
    assert!(BAR0_SIZE.is_power_of_two());
};

/// Which queue a doorbell write addresses (offset inside a doorbell page,
/// `DOORBELL_OFFSET_*` in gdma_main.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoorbellKind {
    /// +0x000: send queue.
    Sq,
    /// +0x400: receive queue.
    Rq,
    /// +0x800: completion queue.
    Cq,
    /// +0x820: interrupt moderation (7.3 DIM; only used when advertised, ignored here).
    Dim,
    /// +0xFF8: event queue.
    Eq,
}

impl DoorbellKind {
    fn from_page_offset(offset: u64) -> Option<Self> {
        match offset {
            0x000 => Some(Self::Sq),
            0x400 => Some(Self::Rq),
            0x800 => Some(Self::Cq),
            0x820 => Some(Self::Dim),
            0xFF8 => Some(Self::Eq),
            _ => None,
        }
    }
}

/// What lives at a BAR0 byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bar0Target {
    /// A register in the register map (offset from BAR0 start).
    Register(u64),
    /// Byte `offset` inside the SMC aperture.
    Smc(u64),
    /// A doorbell in page `page`.
    Doorbell {
        /// Doorbell page index.
        page: u64,
        /// Queue kind.
        kind: DoorbellKind,
    },
    /// Nothing (reads return all-ones, writes are dropped).
    Unmapped,
}

/// Classifies an access of `len` bytes at `offset`. An access must lie
/// entirely inside one target; anything else is [`Bar0Target::Unmapped`].
pub fn classify(offset: u64, len: u64) -> Bar0Target {
    let Some(end) = offset.checked_add(len) else {
        return Bar0Target::Unmapped;
    };
    if end > BAR0_SIZE || len == 0 {
        return Bar0Target::Unmapped;
    }
    if (SHM_OFFSET..SHM_OFFSET + SHM_SIZE).contains(&offset) {
        if end <= SHM_OFFSET + SHM_SIZE {
            return Bar0Target::Smc(offset - SHM_OFFSET);
        }
        return Bar0Target::Unmapped;
    }
    if offset >= DB_PAGE_OFFSET {
        let page = (offset - DB_PAGE_OFFSET) / DB_PAGE_SIZE;
        let in_page = (offset - DB_PAGE_OFFSET) % DB_PAGE_SIZE;
        return match DoorbellKind::from_page_offset(in_page) {
            Some(kind) => Bar0Target::Doorbell { page, kind },
            None => Bar0Target::Unmapped,
        };
    }
    Bar0Target::Register(offset)
}

/// Value of the 8-byte register window that contains `offset` (the register
/// map is a sequence of u64 registers); `None` for an unknown register.
pub fn register_value(offset: u64) -> Option<u64> {
    match offset & !7 {
        REG_DB_PAGE_OFFSET => Some(DB_PAGE_OFFSET),
        REG_DB_PAGE_SIZE => Some(DB_PAGE_SIZE),
        REG_SHM_OFFSET => Some(SHM_OFFSET),
        _ => None,
    }
}

/// Fills `data` with the bytes of the register map at `offset` (little-endian,
/// sub-register reads allowed); unknown registers read as zero, as the
/// driver's register map reserves them.
pub fn read_registers(offset: u64, data: &mut [u8]) {
    for (i, byte) in data.iter_mut().enumerate() {
        let at = offset + i as u64;
        let value = register_value(at).unwrap_or(0);
        let byte_index = (at % 8) as usize;
        *byte = value.to_le_bytes()[byte_index];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doorbell_offsets_decode_per_queue_kind() {
        // DOORBELL_OFFSET_{SQ,RQ,CQ,EQ} in gdma_main.c.
        assert_eq!(classify(0x1000, 8), Bar0Target::Doorbell { page: 0, kind: DoorbellKind::Sq });
        assert_eq!(classify(0x2400, 8), Bar0Target::Doorbell { page: 1, kind: DoorbellKind::Rq });
        assert_eq!(classify(0x1800, 8), Bar0Target::Doorbell { page: 0, kind: DoorbellKind::Cq });
        assert_eq!(classify(0x1FF8, 8), Bar0Target::Doorbell { page: 0, kind: DoorbellKind::Eq });
        assert_eq!(classify(0x1004, 4), Bar0Target::Unmapped);
        assert_eq!(classify(0xFFFC, 8), Bar0Target::Unmapped);
        assert_eq!(classify(u64::MAX, 8), Bar0Target::Unmapped);
    }

    #[test]
    fn registers_read_as_8_and_4_byte_accesses() {
        let mut q = [0u8; 8];
        read_registers(REG_DB_PAGE_OFFSET, &mut q);
        assert_eq!(u64::from_le_bytes(q), 0x1000);
        let mut d = [0u8; 4];
        read_registers(REG_DB_PAGE_SIZE, &mut d);
        assert_eq!(u32::from_le_bytes(d), 0x1000);
        read_registers(REG_SHM_OFFSET, &mut q);
        assert_eq!(u64::from_le_bytes(q), 0x100);
    }
}
