//! Guest RAM for an arm64 kernel built with 64 KiB pages: Linux 6.12's mana
//! gives every RX buffer a whole page (`mana_get_rxbuf_cfg()`,
//! drivers/net/ethernet/microsoft/mana/mana_en.c), so each channel's RQ of
//! 512 buffers takes 32 MiB, 512 MiB at 16 channels, where 4 KiB pages take
//! 32 MiB in all.

use super::request::RunRequest;

/// Guest RAM per node, MiB, that a run on an arm64 kernel with 64 KiB pages
/// gets at least. Measured on `arm64/cobalt-16.toml` (one node, 16 channels)
/// with Linux 6.12.117 (`6.12-min-64k`): at the default 256 MiB `ndo_open`
/// failed ("Failed to create RXQ: err = -12", no queue); at 2048 MiB the run
/// passed, with `--traffic` and with `--channels 4` (README "Minimal arm64
/// kernels").
pub const ARM64_64K_MEM_MIB: u32 = 2048;

/// Bytes in a 64 KiB page.
const PAGE_64K: u64 = 64 << 10;

/// `req` with at least [`ARM64_64K_MEM_MIB`] per node when its kernel is a
/// build whose arm64 `Image` says 64 KiB pages
/// ([`image_page_size`](crate::kbuild::image::image_page_size)); any other
/// request (a pinned Debian kernel: 4 KiB pages) as it is.
pub(super) fn with_page_memory(mut req: RunRequest) -> RunRequest {
    let pages = req.custom_kernel.as_ref().and_then(|k| crate::kbuild::image::image_page_size(&k.vmlinuz));
    if pages == Some(PAGE_64K) {
        req.mem_per_node_mib = req.mem_per_node_mib.max(ARM64_64K_MEM_MIB);
    }
    req
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request on a kernel build whose `Image` header has `flags` (0x0e:
    /// manarig's 6.12 arm64 build with 64 KiB pages, 0x0a: with 4 KiB).
    fn on_image(dir: &std::path::Path, flags: u8) -> RunRequest {
        let mut image = vec![0u8; 0x1000];
        image[0x38..0x3c].copy_from_slice(b"ARM\x64");
        image[0x18] = flags;
        let vmlinuz = dir.join(format!("Image-{flags:x}"));
        std::fs::write(&vmlinuz, image).expect("write");
        let mut req = RunRequest::new("t.toml", crate::model::KernelGen::V6_12);
        req.custom_kernel = Some(crate::provision::KernelInstall {
            id: "build:0123abcd".into(),
            release: "6.12.117-manarig-0123abcd".into(),
            vmlinuz,
            modules: Vec::new(),
            compression: crate::provision::KoCompression::None,
            packages: Vec::new(),
        });
        req
    }

    #[test]
    fn a_64k_page_kernel_gets_2_gib_a_node_and_more_asked_for_is_kept() {
        let d = tempfile::tempdir().expect("tmp");
        assert_eq!(with_page_memory(on_image(d.path(), 0x0e)).mem_per_node_mib, 2048);
        let mut big = on_image(d.path(), 0x0e);
        big.mem_per_node_mib = 4096;
        assert_eq!(with_page_memory(big).mem_per_node_mib, 4096);
    }

    #[test]
    fn a_4k_page_kernel_and_a_pinned_kernel_keep_their_memory() {
        let d = tempfile::tempdir().expect("tmp");
        let default = RunRequest::new("t.toml", crate::model::KernelGen::V6_12).mem_per_node_mib;
        assert_eq!(with_page_memory(on_image(d.path(), 0x0a)).mem_per_node_mib, default);
        let pinned = RunRequest::new("t.toml", crate::model::KernelGen::V6_12);
        assert_eq!(with_page_memory(pinned).mem_per_node_mib, default);
    }
}
