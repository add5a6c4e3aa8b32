//! Query-string parameters and the contract's maxima. Values are parsed strictly (ASCII
//! digits only, no sign, no spaces) so that `ms=-1`, `n=foo`, `n=` and out-of-range values
//! all become a [`BadParam`], which every target answers with 400 and its message.

use std::fmt;

/// Largest `ms` for `/delay`.
pub const MAX_DELAY_MS: u64 = 10_000;
/// Largest `ms` for `/block` (it holds a worker thread, so it is kept short).
pub const MAX_BLOCK_MS: u64 = 1_000;
/// Largest `n` for `/compute`.
pub const MAX_COMPUTE_N: u64 = 100_000;
/// Largest `n` for `/bytes` (10 MiB).
pub const MAX_BYTES_N: u64 = 10 * 1024 * 1024;
/// Largest `calls` for `/upstream`.
pub const MAX_UPSTREAM_CALLS: u64 = 64;
/// Largest request body `/echo` accepts (1 MiB); larger gets 413.
pub const MAX_ECHO_BYTES: usize = 1024 * 1024;

/// Why a request's parameters were rejected; its `Display` is the 400 body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadParam {
    Missing {
        name: &'static str,
    },
    NotAnInteger {
        name: &'static str,
        got: String,
        max: u64,
    },
    TooLarge {
        name: &'static str,
        got: u64,
        max: u64,
    },
    NotOneOf {
        name: &'static str,
        got: String,
        allowed: &'static str,
    },
}

impl fmt::Display for BadParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadParam::Missing { name } => write!(f, "missing query parameter {name}"),
            BadParam::NotAnInteger { name, got, max } => write!(
                f,
                "query parameter {name} must be a whole number from 0 to {max}, got {got:?}"
            ),
            BadParam::TooLarge { name, got, max } => write!(
                f,
                "query parameter {name} must be a whole number from 0 to {max}, got {got}"
            ),
            BadParam::NotOneOf { name, got, allowed } => {
                write!(
                    f,
                    "query parameter {name} must be one of {allowed}, got {got:?}"
                )
            }
        }
    }
}

impl std::error::Error for BadParam {}

/// The decoded `name=value` pairs of one query string.
#[derive(Debug, Default)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    /// Decodes a raw query string (without the `?`); `None` or `""` means no parameters.
    pub fn parse(raw: Option<&str>) -> Self {
        let pairs = raw
            .map(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        Params { pairs }
    }

    /// The first value of `name`, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A required whole number in `0..=max`.
    pub fn int(&self, name: &'static str, max: u64) -> Result<u64, BadParam> {
        let raw = self.get(name).ok_or(BadParam::Missing { name })?;
        let not_int = || BadParam::NotAnInteger {
            name,
            got: raw.to_string(),
            max,
        };
        if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
            return Err(not_int());
        }
        // Digits only, so the only possible failure left is overflow: that is "too large".
        let value: u64 = raw.parse().unwrap_or(u64::MAX);
        if value > max {
            return Err(BadParam::TooLarge {
                name,
                got: value,
                max,
            });
        }
        Ok(value)
    }
}

/// `/delay?ms=N`.
pub fn delay_ms(query: Option<&str>) -> Result<u64, BadParam> {
    Params::parse(query).int("ms", MAX_DELAY_MS)
}

/// `/block?ms=N`.
pub fn block_ms(query: Option<&str>) -> Result<u64, BadParam> {
    Params::parse(query).int("ms", MAX_BLOCK_MS)
}

/// `/compute?n=N`.
pub fn compute_n(query: Option<&str>) -> Result<usize, BadParam> {
    Params::parse(query)
        .int("n", MAX_COMPUTE_N)
        .map(|n| n as usize)
}

/// `/bytes?n=N`.
pub fn bytes_n(query: Option<&str>) -> Result<usize, BadParam> {
    Params::parse(query)
        .int("n", MAX_BYTES_N)
        .map(|n| n as usize)
}

/// `/upstream?calls=N[&client=pooled|per-call]`.
pub fn upstream(query: Option<&str>) -> Result<(u32, crate::ClientMode), BadParam> {
    let params = Params::parse(query);
    let calls = params.int("calls", MAX_UPSTREAM_CALLS)? as u32;
    let mode = match params.get("client") {
        None | Some("pooled") => crate::ClientMode::Pooled,
        Some("per-call") => crate::ClientMode::PerCall,
        Some(other) => {
            return Err(BadParam::NotOneOf {
                name: "client",
                got: other.to_string(),
                allowed: "pooled, per-call",
            })
        }
    };
    Ok((calls, mode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_digits_within_the_maximum() {
        assert_eq!(delay_ms(Some("ms=0")), Ok(0));
        assert_eq!(delay_ms(Some("x=1&ms=007")), Ok(7));
        assert_eq!(delay_ms(Some("ms=10000")), Ok(10_000));
        assert_eq!(bytes_n(Some("n=10485760")), Ok(10 * 1024 * 1024));
    }

    #[test]
    fn rejects_what_the_contract_calls_bad() {
        for q in [
            None,
            Some(""),
            Some("ms="),
            Some("ms=-1"),
            Some("ms=+1"),
            Some("ms=foo"),
            Some("ms=1.5"),
            Some("ms=%201"),
            Some("ms=10001"),
            Some("ms=99999999999999999999999"),
        ] {
            assert!(delay_ms(q).is_err(), "{q:?} should be rejected");
        }
        assert!(block_ms(Some("ms=1001")).is_err());
        assert!(upstream(Some("calls=65")).is_err());
        assert!(upstream(Some("calls=1&client=shared")).is_err());
    }

    #[test]
    fn messages_name_the_parameter_and_the_range() {
        assert_eq!(
            delay_ms(Some("ms=-1")).unwrap_err().to_string(),
            "query parameter ms must be a whole number from 0 to 10000, got \"-1\""
        );
        assert_eq!(
            compute_n(None).unwrap_err().to_string(),
            "missing query parameter n"
        );
    }

    #[test]
    fn upstream_client_defaults_to_pooled() {
        assert_eq!(
            upstream(Some("calls=8")),
            Ok((8, crate::ClientMode::Pooled))
        );
        assert_eq!(
            upstream(Some("calls=8&client=per-call")),
            Ok((8, crate::ClientMode::PerCall))
        );
    }
}
