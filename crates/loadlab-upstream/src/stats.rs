//! The counters: requests answered and connections that carried them. Counting connections
//! (not just requests) is the point of this crate: missing pooling shows up as a number.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Live counters shared by the server's connection tasks and whoever reads them.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    requests: AtomicU64,
    connections: AtomicU64,
}

impl Counters {
    /// A snapshot; cheap, and does not count as traffic (unlike `GET /__stats`).
    pub fn snapshot(&self) -> Stats {
        Stats {
            requests: self.inner.requests.load(Ordering::Acquire),
            connections: self.inner.connections.load(Ordering::Acquire),
        }
    }

    pub(crate) fn add_request(&self) {
        self.inner.requests.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn add_connection(&self) {
        self.inner.connections.fetch_add(1, Ordering::AcqRel);
    }
}

/// What `/__stats` serves: `{"requests":R,"connections":C}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Requests answered, other than `/__stats` itself.
    pub requests: u64,
    /// Accepted connections that carried at least one counted request (so a connection used
    /// only to read `/__stats` does not count).
    pub connections: u64,
}

impl Stats {
    /// The traffic between `earlier` and `self`.
    pub fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            requests: self.requests.saturating_sub(earlier.requests),
            connections: self.connections.saturating_sub(earlier.connections),
        }
    }

    /// Requests per connection: 1.0 means no reuse at all; `None` before any connection.
    pub fn reuse_ratio(&self) -> Option<f64> {
        (self.connections > 0).then(|| self.requests as f64 / self.connections as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_and_reuse_ratio() {
        let before = Stats {
            requests: 2,
            connections: 1,
        };
        let after = Stats {
            requests: 26,
            connections: 2,
        };
        let delta = after.since(&before);
        assert_eq!(
            delta,
            Stats {
                requests: 24,
                connections: 1
            }
        );
        assert_eq!(delta.reuse_ratio(), Some(24.0));
        assert_eq!(Stats::default().reuse_ratio(), None);
    }

    #[test]
    fn json_shape_is_the_contract() {
        let json = serde_json::to_string(&Stats {
            requests: 8,
            connections: 8,
        })
        .unwrap();
        assert_eq!(json, r#"{"requests":8,"connections":8}"#);
    }
}
