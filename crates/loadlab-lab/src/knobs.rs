//! Knobs: the environment variables whoever launches a target may set, by name and value
//! shape. A launch from another host (the agent) may set only these: every runtime reads
//! some variable as code (`ERL_AFLAGS=-eval ...`, `JAVA_TOOL_OPTIONS=-javaagent:...`,
//! `NODE_OPTIONS=--require ...`, `PYTHONSTARTUP`, `GUNICORN_CMD_ARGS`, `LD_PRELOAD`,
//! `PATH`), so an environment taken verbatim is a command line in disguise. A knob is data:
//! a count, a flag or one of a fixed list of words, checked before the target starts.
//!
//! The contract's own variables (where to listen, TLS, the upstream, the content) are set by
//! whoever launches the target and by nothing else: they are never knobs.
//!
//! It must not launch anything, nor decide who may bypass the check (`--allow-exec` is the
//! agent's decision).

use serde::Deserialize;
use std::collections::BTreeMap;

/// Variables the contract reserves for the launcher (targets/CONTRACT.md).
pub const CONTRACT_VARIABLES: &[&str] = &[
    "HOST",
    "PORT",
    "UPSTREAM_URL",
    "UPSTREAM_GRPC_URL",
    "UPSTREAM_CA",
    "TLS_CERT",
    "TLS_KEY",
    "CONTENT_DIR",
];

/// Knobs every target has (targets/CONTRACT.md): `WORKERS` and `BACKLOG`, whole numbers.
pub const CONTRACT_KNOBS: &[&str] = &["WORKERS", "BACKLOG"];

/// The largest count a knob takes: far above any worker count or backlog the kernel keeps,
/// small enough that no runtime overflows parsing it.
pub const MAX_COUNT: u64 = 1_000_000;

/// What a knob's value may be, as a manifest writes it: `"count"`, `"flag"`, or a list of
/// words (`["production", "development"]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Shape {
    Named(NamedShape),
    Words(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NamedShape {
    /// A whole number from 1 to [`MAX_COUNT`], decimal digits only.
    Count,
    /// `0`, `1`, `true` or `false`.
    Flag,
}

/// Why a variable was refused, in words that name it and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl Shape {
    fn describe(&self) -> String {
        match self {
            Shape::Named(NamedShape::Count) => format!("a whole number from 1 to {MAX_COUNT}"),
            Shape::Named(NamedShape::Flag) => "0, 1, true or false".into(),
            Shape::Words(words) => format!("one of {}", words.join(", ")),
        }
    }

    fn admits(&self, value: &str) -> bool {
        match self {
            Shape::Named(NamedShape::Count) => {
                !value.is_empty()
                    && value.len() <= 7
                    && value.bytes().all(|b| b.is_ascii_digit())
                    && value
                        .parse::<u64>()
                        .is_ok_and(|n| (1..=MAX_COUNT).contains(&n))
            }
            Shape::Named(NamedShape::Flag) => matches!(value, "0" | "1" | "true" | "false"),
            Shape::Words(words) => words.iter().any(|w| w == value),
        }
    }
}

/// An environment variable's name as POSIX shells take it: a letter or `_`, then letters,
/// digits and `_`.
pub fn valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Checks a manifest's `[run] knobs`: names valid, none reserved, words plain.
pub(crate) fn check_declared(knobs: &BTreeMap<String, Shape>) -> Result<(), String> {
    for (name, shape) in knobs {
        if !valid_name(name) {
            return Err(format!(
                "run.knobs: {name:?} is not an environment variable name (letters, digits, _)"
            ));
        }
        if CONTRACT_VARIABLES.contains(&name.as_str()) {
            return Err(format!(
                "run.knobs: {name} is the contract's own variable, set by the launcher alone; \
                 remove it from knobs"
            ));
        }
        if let Shape::Words(words) = shape {
            let plain = |w: &String| {
                !w.is_empty()
                    && w.len() <= 64
                    && w.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
            };
            if words.is_empty() || !words.iter().all(plain) {
                return Err(format!(
                    "run.knobs.{name}: a list of words must hold at least one, each of letters, \
                     digits, '.', '_' or '-' (at most 64)"
                ));
            }
        }
    }
    Ok(())
}

/// Checks that `name=value` may be set on a target whose manifest declares `declared`.
pub fn check(declared: &BTreeMap<String, Shape>, name: &str, value: &str) -> Result<(), Refused> {
    let count = Shape::Named(NamedShape::Count);
    let shape = if CONTRACT_KNOBS.contains(&name) {
        &count
    } else if CONTRACT_VARIABLES.contains(&name) {
        return Err(Refused(format!(
            "{name} is set by the agent alone (the contract's own variable: where the target \
             listens, its TLS, upstream or content); it cannot be overridden"
        )));
    } else {
        match declared.get(name) {
            Some(shape) => shape,
            None => {
                let mut known: Vec<&str> = CONTRACT_KNOBS.to_vec();
                known.extend(declared.keys().map(String::as_str));
                return Err(Refused(format!(
                    "{name} is not one of this target's knobs ({}): an environment variable \
                     can carry code (a runtime's options, a preload, a path), so a launch may \
                     set only the knobs its target.toml declares",
                    known.join(", ")
                )));
            }
        }
    };
    if shape.admits(value) {
        Ok(())
    } else {
        Err(Refused(format!(
            "{name}={value:?} is refused: {name} takes {}",
            shape.describe()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared() -> BTreeMap<String, Shape> {
        let mut d = BTreeMap::new();
        d.insert(
            "NODE_ENV".to_string(),
            Shape::Words(vec!["production".into(), "development".into()]),
        );
        d.insert("VERBOSE".to_string(), Shape::Named(NamedShape::Flag));
        d
    }

    /// Each runtime's hook the lab's targets would obey, and the launcher's own variables.
    #[test]
    fn hooks_that_run_code_and_the_contracts_variables_are_refused() {
        let d = declared();
        for (name, value) in [
            ("ERL_AFLAGS", "-eval 'os:cmd(\"touch /tmp/pwned\")'"),
            ("ERL_ZFLAGS", "-s os cmd"),
            ("JAVA_TOOL_OPTIONS", "-javaagent:/tmp/x.jar"),
            ("JDK_JAVA_OPTIONS", "-XX:OnOutOfMemoryError=sh"),
            ("NODE_OPTIONS", "--require /tmp/x.js"),
            ("GUNICORN_CMD_ARGS", "--config python:/tmp/x"),
            ("PYTHONSTARTUP", "/tmp/x.py"),
            ("PYTHONPATH", "/tmp"),
            ("PYTHONWARNINGS", "ignore"),
            ("LD_PRELOAD", "/tmp/x.so"),
            ("LD_LIBRARY_PATH", "/tmp"),
            ("PATH", "/tmp"),
            ("BASH_ENV", "/tmp/x.sh"),
            ("RUSTFLAGS", "x"),
            ("HOST", "0.0.0.0"),
            ("PORT", "80"),
            ("TLS_KEY", "/etc/shadow"),
            ("UPSTREAM_CA", "/tmp/ca.pem"),
            ("CONTENT_DIR", "/"),
            ("workers", "4"),
        ] {
            let err = check(&d, name, value).unwrap_err().0;
            assert!(err.starts_with(name), "{name}: {err}");
        }
        assert!(check(&d, "HOST", "127.0.0.1")
            .unwrap_err()
            .0
            .contains("set by the agent alone"));
    }

    #[test]
    fn knobs_take_values_of_their_shape_only() {
        let d = declared();
        for ok in [
            ("WORKERS", "1"),
            ("WORKERS", "64"),
            ("BACKLOG", "1000000"),
            ("NODE_ENV", "production"),
            ("VERBOSE", "true"),
            ("VERBOSE", "0"),
        ] {
            assert_eq!(check(&d, ok.0, ok.1), Ok(()), "{ok:?}");
        }
        for bad in [
            ("WORKERS", "0"),
            ("WORKERS", ""),
            ("WORKERS", "+4"),
            ("WORKERS", "4 "),
            ("WORKERS", "1000001"),
            ("WORKERS", "99999999999999999999999"),
            ("BACKLOG", "-1"),
            ("BACKLOG", "4; rm -rf /"),
            ("NODE_ENV", "production --require /tmp/x"),
            ("NODE_ENV", "Production"),
            ("VERBOSE", "yes"),
        ] {
            let err = check(&d, bad.0, bad.1).unwrap_err().0;
            assert!(err.contains("takes"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn a_manifest_may_not_declare_the_contracts_variables_or_odd_words() {
        let mut d = declared();
        assert_eq!(check_declared(&d), Ok(()));
        d.insert("HOST".into(), Shape::Named(NamedShape::Count));
        assert!(check_declared(&d).unwrap_err().contains("HOST"));
        let mut d = declared();
        d.insert("MODE".into(), Shape::Words(vec!["a b".into()]));
        assert!(check_declared(&d).unwrap_err().contains("MODE"));
        let mut d = declared();
        d.insert("1X".into(), Shape::Named(NamedShape::Flag));
        assert!(check_declared(&d).is_err());
    }

    #[test]
    fn shapes_read_from_toml() {
        #[derive(Deserialize)]
        struct Doc {
            knobs: BTreeMap<String, Shape>,
        }
        let doc: Doc =
            toml::from_str("knobs = { A = \"count\", B = \"flag\", C = [\"x\", \"y\"] }").unwrap();
        assert_eq!(doc.knobs["A"], Shape::Named(NamedShape::Count));
        assert_eq!(doc.knobs["B"], Shape::Named(NamedShape::Flag));
        assert_eq!(doc.knobs["C"], Shape::Words(vec!["x".into(), "y".into()]));
        assert!(toml::from_str::<Doc>("knobs = { A = \"script\" }").is_err());
    }
}
