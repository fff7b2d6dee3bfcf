//! Kernel config fragments: parsing `CONFIG_X=…` / `# CONFIG_X is not set`
//! lines, and checking that a generated `.config` kept what a fragment asked.
//!
//! The format is the one `scripts/kconfig` reads and writes (`.config`,
//! `KCONFIG_ALLCONFIG`, kernel/configs/*.config).

use std::collections::BTreeMap;
use std::fmt;

/// The value of one Kconfig symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigValue {
    /// `=y`.
    Yes,
    /// `=m`.
    Module,
    /// `# CONFIG_X is not set` (or `=n`).
    No,
    /// Anything else: a number, hex or a quoted string, kept as written.
    Other(String),
}

impl fmt::Display for ConfigValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigValue::Yes => f.write_str("y"),
            ConfigValue::Module => f.write_str("m"),
            ConfigValue::No => f.write_str("n"),
            ConfigValue::Other(v) => f.write_str(v),
        }
    }
}

/// One setting of a fragment: symbol (without `CONFIG_`), value, 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// Symbol name without the `CONFIG_` prefix, e.g. `MICROSOFT_MANA`.
    pub symbol: String,
    /// The value asked for.
    pub value: ConfigValue,
    /// Line number in its file (1-based).
    pub line: usize,
}

/// A bad fragment line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {why}: {text:?}")]
pub struct FragmentError {
    /// The fragment's name (file path).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// The line.
    pub text: String,
    /// What is wrong.
    pub why: String,
}

/// Parse a fragment. Blank lines and `#` comments are skipped, except the
/// `# CONFIG_X is not set` form. A symbol set twice keeps the last value (as
/// kconfig does) — but within one fragment that is almost always a mistake,
/// so it is an error here.
///
/// # Errors
/// [`FragmentError`] naming the file, line and what is wrong.
pub fn parse_fragment(text: &str, file: &str) -> Result<Vec<Setting>, FragmentError> {
    let mut out: Vec<Setting> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        let err =
            |why: &str| FragmentError { file: file.to_string(), line, text: raw.to_string(), why: why.to_string() };
        let (symbol, value) = if t.is_empty() {
            continue;
        } else if let Some(rest) = t.strip_prefix('#') {
            let rest = rest.trim();
            match rest.strip_prefix("CONFIG_").and_then(|r| r.strip_suffix(" is not set")) {
                Some(sym) => (sym.to_string(), ConfigValue::No),
                None => continue,
            }
        } else {
            let body = t.strip_prefix("CONFIG_").ok_or_else(|| err("expected CONFIG_NAME=value"))?;
            let (sym, val) = body.split_once('=').ok_or_else(|| err("expected CONFIG_NAME=value"))?;
            let val = val.trim();
            let value = match val {
                "y" => ConfigValue::Yes,
                "m" => ConfigValue::Module,
                "n" => ConfigValue::No,
                "" => return Err(err("empty value")),
                v if v.starts_with('"') && (v.len() < 2 || !v.ends_with('"')) => {
                    return Err(err("unterminated string"))
                }
                v => ConfigValue::Other(v.to_string()),
            };
            (sym.trim().to_string(), value)
        };
        if symbol.is_empty() || !symbol.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err("symbol names are letters, digits and _"));
        }
        if let Some(prev) = out.iter().find(|s| s.symbol == symbol) {
            return Err(err(&format!("CONFIG_{symbol} already set on line {}", prev.line)));
        }
        out.push(Setting { symbol, value, line });
    }
    Ok(out)
}

/// The symbols of a generated `.config` (every symbol kconfig wrote, `is not
/// set` ones as [`ConfigValue::No`]).
pub fn parse_dot_config(text: &str) -> BTreeMap<String, ConfigValue> {
    // A .config is a fragment without duplicates; unparsable lines (none in a
    // kconfig-written file) are skipped rather than failing the build.
    text.lines().filter_map(|l| parse_fragment(l, ".config").ok()).flatten().map(|s| (s.symbol, s.value)).collect()
}

/// One fragment setting the generated `.config` did not keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The fragment file.
    pub file: String,
    /// The setting asked for.
    pub wanted: Setting,
    /// What `.config` has (`None`: the symbol is not visible at all, e.g. a
    /// dependency is off or it does not exist in this tree).
    pub got: Option<ConfigValue>,
}

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = &self.wanted;
        match &self.got {
            Some(v) => write!(
                f,
                "{}:{}: CONFIG_{}={} became {v} (a dependency is not met, or something selects it)",
                self.file, w.line, w.symbol, w.value
            ),
            None => write!(
                f,
                "{}:{}: CONFIG_{}={} is not in .config (unknown symbol in this tree, or a dependency is off)",
                self.file, w.line, w.symbol, w.value
            ),
        }
    }
}

/// Symbols of manarig's fragment that only some kernel versions define: a
/// tree whose Kconfig files do not define one builds without it (see
/// [`symbol_defined`]); anywhere else a dropped setting is an error.
/// `HYPERV_VMBUS`: Linux 7.x split the VMBus driver out of `HYPERV`, and
/// `PCI_HYPERV` (which MANA depends on) now depends on it.
pub const VERSION_DEPENDENT: &[&str] = &["HYPERV_VMBUS"];

/// True when a Kconfig file of `tree` defines `symbol` (`config SYMBOL` or
/// `menuconfig SYMBOL`). A tree that cannot be searched counts as defining it.
pub fn symbol_defined(tree: &std::path::Path, symbol: &str) -> bool {
    let out = std::process::Command::new("grep")
        .args(["-rqE", "--include=Kconfig*", &format!("^[[:space:]]*(menu)?config[[:space:]]+{symbol}[[:space:]]*$")])
        .arg(tree)
        .status();
    // grep: 0 found, 1 not found, 2 error.
    !matches!(out, Ok(s) if s.code() == Some(1))
}

/// Settings of `fragment` that `.config` does not have as asked. A `n` is
/// kept when the symbol is `n` or absent.
pub fn dropped(file: &str, fragment: &[Setting], dot_config: &BTreeMap<String, ConfigValue>) -> Vec<Dropped> {
    fragment
        .iter()
        .filter(|s| {
            let got = dot_config.get(&s.symbol);
            match (&s.value, got) {
                (ConfigValue::No, None | Some(ConfigValue::No)) => false,
                (want, Some(g)) => want != g,
                (_, None) => true,
            }
        })
        .map(|s| Dropped { file: file.to_string(), wanted: s.clone(), got: dot_config.get(&s.symbol).cloned() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_fragment_parses_and_builds_mana_as_a_module() {
        let text = include_str!("../../../../../guest-images/kernel-config/manarig.config");
        let s = parse_fragment(text, "manarig.config").expect("parses");
        let get = |sym: &str| s.iter().find(|x| x.symbol == sym).map(|x| x.value.clone());
        // The guest agent insmods mana in the background (guest-images/init.sh), so
        // it must be a module; MANA depends on PCI_HYPERV (microsoft/Kconfig).
        assert_eq!(get("MICROSOFT_MANA"), Some(ConfigValue::Module));
        assert_eq!(get("PCI_HYPERV"), Some(ConfigValue::Yes));
        assert_eq!(get("IPV6"), Some(ConfigValue::No));
        assert_eq!(get("NR_CPUS"), Some(ConfigValue::Other("512".into())));
        assert_eq!(get("LOCALVERSION"), Some(ConfigValue::Other("\"-manarig\"".into())));
    }

    #[test]
    fn symbols_are_found_in_kconfig_files_only() {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(d.path().join("drivers/hv")).expect("mkdir");
        std::fs::write(d.path().join("drivers/hv/Kconfig"), "config HYPERV\n\tbool\n\nmenuconfig HYPERV_VMBUS\n")
            .expect("w");
        std::fs::write(d.path().join("drivers/hv/notes.txt"), "config OTHER\n").expect("w");
        assert!(symbol_defined(d.path(), "HYPERV_VMBUS"));
        assert!(symbol_defined(d.path(), "HYPERV"));
        assert!(!symbol_defined(d.path(), "HYPERV_VMB"));
        assert!(!symbol_defined(d.path(), "OTHER"));
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let e = parse_fragment("CONFIG_A=y\n\nCONFIG_B\n", "f.config").expect_err("bad");
        assert_eq!((e.file.as_str(), e.line), ("f.config", 3));
        assert_eq!(e.why, "expected CONFIG_NAME=value");
        let e = parse_fragment("CONFIG_A=y\nCONFIG_A=m\n", "f").expect_err("dup");
        assert_eq!((e.line, e.text.as_str()), (2, "CONFIG_A=m"), "{e}");
        assert!(e.why.contains("line 1"), "{e}");
        let e = parse_fragment("CONFIG_S=\"x\n", "f").expect_err("string");
        assert!(e.why.contains("unterminated"), "{e}");
        assert!(parse_fragment("FOO=y\n", "f").is_err());
        assert!(parse_fragment("CONFIG_A-B=y\n", "f").is_err());
    }

    #[test]
    fn comments_and_not_set_lines() {
        let s = parse_fragment("# a comment\n# CONFIG_X is not set\nCONFIG_Y=n\n", "f").expect("ok");
        assert_eq!(s.len(), 2);
        assert!(s.iter().all(|x| x.value == ConfigValue::No));
    }

    #[test]
    fn dropped_settings_say_what_config_has() {
        let frag =
            parse_fragment("CONFIG_A=y\nCONFIG_B=m\nCONFIG_C=n\nCONFIG_D=y\nCONFIG_E=\"s\"\n", "frag").expect("ok");
        let dot = parse_dot_config("CONFIG_A=y\nCONFIG_B=y\n# CONFIG_D is not set\nCONFIG_E=\"s\"\n");
        let d = dropped("frag", &frag, &dot);
        let syms: Vec<_> = d.iter().map(|x| x.wanted.symbol.as_str()).collect();
        assert_eq!(syms, ["B", "D"]);
        assert!(d[0].to_string().contains("frag:2: CONFIG_B=m became y"), "{}", d[0]);
        let missing = dropped("frag", &parse_fragment("CONFIG_Z=y\n", "frag").expect("ok"), &dot);
        assert!(missing[0].to_string().contains("not in .config"), "{}", missing[0]);
    }
}
