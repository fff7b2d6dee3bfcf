//! The cache key of a kernel build: a SHA-256 over everything that decides
//! the bzImage and mana.ko: the source's identity, each patch (name and
//! bytes, in order), each config fragment (name and bytes) and the compiler.
//!
//! Debian sources are identified by their pin (package, version, SHA-256 of
//! the `.deb`), so equal keys mean equal inputs and a finished build is reused
//! without running `make`. A user's tree is identified by its path: its
//! content is not hashed (a kernel tree is ~1.5 GB); the build folder is
//! reused and `make` rebuilds what changed, which is the incremental rebuild
//! a developer wants.

use sha2::{Digest, Sha256};

/// Bumped when the build recipe changes (targets, base config, outputs).
const RECIPE: &str =
    "manarig-kbuild recipe 1: allnoconfig + KCONFIG_ALLCONFIG fragments, olddefconfig, bzImage modules";

/// What the key covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyInputs {
    /// [`super::source::SourceSpec::identity`].
    pub source: String,
    /// Patches in order: (name, text).
    pub patches: Vec<(String, String)>,
    /// Config fragments in order: (name, text).
    pub fragments: Vec<(String, String)>,
    /// The compiler (`gcc --version`'s first line).
    pub toolchain: String,
}

/// Lower-case hex SHA-256 of the inputs. Every field is length-prefixed, so
/// moving bytes between fields (or between a patch's name and text) changes
/// the key.
pub fn cache_key(k: &KeyInputs) -> String {
    let mut h = Sha256::new();
    let mut field = |tag: &str, bytes: &[u8]| {
        h.update(tag.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field("recipe", RECIPE.as_bytes());
    field("source", k.source.as_bytes());
    field("toolchain", k.toolchain.as_bytes());
    for (name, text) in &k.patches {
        field("patch-name", name.as_bytes());
        field("patch", text.as_bytes());
    }
    for (name, text) in &k.fragments {
        field("fragment-name", name.as_bytes());
        field("fragment", text.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The short form used as the build's folder name and on the command line
/// (`--kernel-build`): the first 16 hex digits (64 bits).
pub fn short(key: &str) -> &str {
    key.get(..16).unwrap_or(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> KeyInputs {
        KeyInputs {
            source: "debian:linux-source-6.12=6.12.117-1 sha256=9141".into(),
            patches: vec![("0001-a.patch".into(), "diff a".into())],
            fragments: vec![("manarig.config".into(), "CONFIG_SMP=y\n".into())],
            toolchain: "gcc (Debian 12.2.0-14) 12.2.0".into(),
        }
    }

    #[test]
    fn equal_inputs_give_equal_keys() {
        assert_eq!(cache_key(&base()), cache_key(&base()));
        assert_eq!(cache_key(&base()).len(), 64);
        assert_eq!(short(&cache_key(&base())).len(), 16);
    }

    #[test]
    fn every_input_changes_the_key() {
        let k0 = cache_key(&base());
        let mut variants = Vec::new();
        let mut v = base();
        v.source.push('x');
        variants.push(v);
        let mut v = base();
        v.patches[0].1.push('x');
        variants.push(v);
        let mut v = base();
        v.patches[0].0 = "0002-a.patch".into();
        variants.push(v);
        let mut v = base();
        v.patches.clear();
        variants.push(v);
        let mut v = base();
        v.fragments.push(("user.config".into(), "CONFIG_X=y\n".into()));
        variants.push(v);
        let mut v = base();
        v.toolchain = "gcc 13".into();
        variants.push(v);
        let keys: Vec<String> = variants.iter().map(cache_key).collect();
        for (i, k) in keys.iter().enumerate() {
            assert_ne!(k, &k0, "variant {i}");
        }
    }

    #[test]
    fn bytes_cannot_move_between_fields() {
        let mut a = base();
        a.patches = vec![("ab".into(), "c".into())];
        let mut b = base();
        b.patches = vec![("a".into(), "bc".into())];
        assert_ne!(cache_key(&a), cache_key(&b));
        // Patch order matters: a series is applied in order.
        let mut c = base();
        c.patches = vec![("1".into(), "x".into()), ("2".into(), "y".into())];
        let mut d = base();
        d.patches = vec![("2".into(), "y".into()), ("1".into(), "x".into())];
        assert_ne!(cache_key(&c), cache_key(&d));
    }
}
