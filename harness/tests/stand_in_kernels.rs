//! A Debian image standing in for a gone pin (a newer version of its track) is
//! judged by the model only when its `mana.ko` runs the pinned generation's
//! code: the real modules of the pinned 6.1, 6.12 and 7.x images, read from the
//! provisioned cache (`cargo xtask test` provisions it first), are recognised
//! as their own generation and refused as another's.

use harness::model::KernelGen;
use harness::provision::{self, KernelInstall};
use harness::rig::kernel_choice::{image_fit, ImageFit};
use harness::rig::kernel_lock_id;

/// `k` as if it were a fallback: each package names another pin.
fn as_stand_in(k: &KernelInstall) -> KernelInstall {
    let mut k = k.clone();
    for p in &mut k.packages {
        p.locked = Some(format!("{} (an older pin)", p.name));
    }
    k
}

fn provisioned() -> Option<provision::Provisioned> {
    let cache = provision::cache_dir(None).expect("cache dir");
    match provision::load(&cache) {
        Ok(p) => Some(p),
        Err(e) => {
            assert!(std::env::var("CI").map_or(true, |v| v != "true"), "CI=true: the cache must be provisioned: {e}");
            eprintln!("SKIP: {e}");
            None
        }
    }
}

#[test]
fn a_stand_in_whose_module_runs_the_pinned_code_is_judged_by_the_model() {
    let Some(prov) = provisioned() else { return };
    for gen in [KernelGen::V6_1, KernelGen::V6_12, KernelGen::V7] {
        let k = prov.kernel(kernel_lock_id(gen)).expect("pinned kernel");
        assert_eq!(image_fit(gen, false, k), ImageFit::NotAStandIn, "{gen}: the pinned image is no stand-in");
        match image_fit(gen, false, &as_stand_in(k)) {
            ImageFit::Same(basis) => {
                let text = basis.to_string();
                assert!(text.starts_with("detected from the module: mana.ko of "), "{gen}: {text}");
            }
            other => panic!("{gen}: its own module must fit: {other:?}"),
        }
        assert_eq!(image_fit(gen, true, &as_stand_in(k)), ImageFit::NotAStandIn, "{gen}: --model decides");
    }
}

#[test]
fn a_stand_in_whose_module_runs_another_generations_code_is_judged_by_the_properties() {
    let Some(prov) = provisioned() else { return };
    // Debian 6.12's mana.ko (irq_setup(), no mana_irq_setup_*()) standing in for the 7.x pin.
    let k612 = prov.kernel(kernel_lock_id(KernelGen::V6_12)).expect("6.12");
    match image_fit(KernelGen::V7, false, &as_stand_in(k612)) {
        ImageFit::Unmodelled(why) => {
            assert!(why.contains("stands in for the pinned 7.x kernel") && why.contains("the 6.12 code"), "{why}")
        }
        other => panic!("6.12 code under a 7.x pin must not be judged by the 7.x model: {other:?}"),
    }
    // And 7.x's under the 6.1 pin.
    let k7 = prov.kernel(kernel_lock_id(KernelGen::V7)).expect("7.x");
    assert!(matches!(image_fit(KernelGen::V6_1, false, &as_stand_in(k7)), ImageFit::Unmodelled(_)));
}
