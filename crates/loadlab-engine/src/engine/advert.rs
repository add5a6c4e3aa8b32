//! The watch for the server's HTTP/3 advertisement (`Alt-Svc`, see [`crate::alt_svc`]) over
//! HTTPS on HTTP/1.1 or HTTP/2: each new connection lets its first response be looked at,
//! and the first header that offers `h3` is kept for the run. Once one is kept, no thread
//! looks again. It must not cost the hot path more than a check per response: the headers
//! are read only for a connection's first response, and parsed only when they carry the
//! field.

use std::cell::Cell;
use std::sync::{Arc, OnceLock};

/// What every thread of a run shares: the header, once found.
pub(crate) type Found = Arc<OnceLock<String>>;

/// One thread's watch.
pub(crate) struct Watch {
    found: Found,
    /// Responses still to look at: one per connection opened (HTTP/2's are read at the
    /// stream's level, where the connection is not known).
    left: Cell<u32>,
}

impl Watch {
    /// `connections`: opened before the watch could count them (an open loop's, before the
    /// start).
    pub fn new(found: Found, connections: usize) -> Watch {
        Watch {
            found,
            left: Cell::new(u32::try_from(connections).unwrap_or(u32::MAX)),
        }
    }

    /// HTTP/1.1: whether a new connection's parser should read its first response's field.
    pub fn wanted(&self) -> bool {
        self.found.get().is_none()
    }

    /// HTTP/2: a connection opened, so one more response is to be looked at, unless one was
    /// found. Returns whether to look.
    pub fn connection_opened(&self) -> bool {
        let wanted = self.found.get().is_none();
        if wanted {
            self.left.set(self.left.get().saturating_add(1));
        }
        wanted
    }

    /// HTTP/2: whether this response is one to look at (taking its turn).
    #[inline]
    pub fn take_turn(&self) -> bool {
        let left = self.left.get();
        if left == 0 {
            return false;
        }
        self.left.set(left - 1);
        // Another thread may have found it meanwhile.
        self.found.get().is_none()
    }

    /// A response's `Alt-Svc` value (fields joined): kept when it offers HTTP/3.
    pub fn seen(&self, value: &str) {
        if self.found.get().is_some() {
            return;
        }
        if crate::alt_svc::parse(value).is_ok_and(|a| a.h3().is_some()) {
            let _ = self.found.set(value.to_string());
            self.left.set(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_h3_offer_is_kept_and_the_watch_ends() {
        let found = Found::default();
        let w = Watch::new(found.clone(), 0);
        assert!(w.wanted());
        assert!(!w.take_turn(), "no connection yet");
        assert!(w.connection_opened());
        assert!(w.connection_opened());
        assert!(w.take_turn());
        // An offer without h3 is not kept, and the watch goes on.
        w.seen(r#"h2=":443""#);
        w.seen("not a header");
        assert_eq!(found.get(), None);
        w.seen(r#"h3=":8443"; ma=60"#);
        assert_eq!(
            found.get().map(String::as_str),
            Some(r#"h3=":8443"; ma=60"#)
        );
        assert!(!w.take_turn(), "found: nothing more to look at");
        assert!(!w.wanted());
        w.seen(r#"h3=":1""#);
        assert_eq!(
            found.get().map(String::as_str),
            Some(r#"h3=":8443"; ma=60"#)
        );
        // Another thread's watch, after the find: does not look at all.
        let other = Watch::new(found, 3);
        assert!(!other.connection_opened());
        assert!(!other.take_turn());
    }
}
