//! The packages a run used, against their pins: the report type lives in
//! the model crate (`manarig_model::packages`); pairing what setup unpacked
//! with what the lock pins lives here.

pub use manarig_model::packages::{summary, UsedPackage};

use super::lock::PackagePin;

/// `used` for `part`, each paired with the pin at the same place in `pinned`
/// (a kernel's image may change its name, so pairs go by position).
pub fn pair(part: &str, used: &[PackagePin], pinned: &[PackagePin]) -> Vec<UsedPackage> {
    used.iter()
        .enumerate()
        .map(|(i, u)| {
            let pin = pinned.get(i);
            let same = pin.is_some_and(|p| p.name == u.name && p.version == u.version);
            UsedPackage {
                part: part.to_owned(),
                name: u.name.clone(),
                version: u.version.clone(),
                locked: match pin {
                    Some(p) if !same => Some(format!("{} {}", p.name, p.version)),
                    _ => None,
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(n: &str, v: &str) -> PackagePin {
        PackagePin { name: n.into(), version: v.into(), sha256: String::new(), suite: None }
    }

    #[test]
    fn a_package_equal_to_its_pin_is_as_locked_and_a_fallback_names_the_pin() {
        let kernel = pair(
            "kernel",
            &[pin("linux-image-6.1.0-58-cloud-amd64", "6.1.193-1")],
            &[pin("linux-image-6.1.0-57-cloud-amd64", "6.1.192-3")],
        );
        assert_eq!(kernel[0].locked.as_deref(), Some("linux-image-6.1.0-57-cloud-amd64 6.1.192-3"));
        let bb = pair("busybox", &[pin("busybox-static", "1:1.37.0-6+b9")], &[pin("busybox-static", "1:1.37.0-6+b9")]);
        assert_eq!(bb[0].locked, None);
    }
}
