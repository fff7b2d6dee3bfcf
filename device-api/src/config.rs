//! Device knobs, set from a topology file's NIC section.

use serde::{Deserialize, Serialize};

/// What the emulated MANA VF advertises to the guest driver.
///
/// Each field drives a branch of the driver's vector accounting
/// (`mana_gd_setup_irqs()` / `mana_gd_query_max_resources()` in
/// drivers/net/ethernet/microsoft/mana/gdma_main.c).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    /// Entries in the MSI-X table (PCI MSI-X capability "Table Size" + 1), 1..=2048.
    pub msix_table_size: u16,
    /// `max_msix` reported by GDMA_QUERY_MAX_RESOURCES.
    pub max_msix: u32,
    /// Queue limit reported as max_sq/max_rq/max_cq/max_eq by GDMA_QUERY_MAX_RESOURCES.
    pub max_queues: u32,
    /// Number of vPorts reported by MANA_QUERY_DEV_CONFIG (`max_num_vports`).
    pub num_vports: u16,
    /// MAC address of vPort 0 (vPort k uses the last byte + k).
    pub mac: [u8; 6],
}

impl Default for DeviceConfig {
    fn default() -> Self {
        Self {
            msix_table_size: 65,
            max_msix: 65,
            max_queues: 64,
            num_vports: 1,
            mac: [0x00, 0x15, 0x5d, 0x00, 0x00, 0x01],
        }
    }
}
