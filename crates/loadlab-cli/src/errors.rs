//! An error as the user reads it: the message, then each cause the message does not already
//! say. anyhow's `{:#}` prints every cause of the chain, and many of loadlab's errors put their
//! cause in their own words (the store's "cannot open the results store F: {cause}; check the
//! path..."), which then read twice.

use std::fmt::Write as _;

/// `err` and its causes joined by ": ", each cause left out when the text so far already has it.
pub fn shown(err: &anyhow::Error) -> String {
    let mut out = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !cause.is_empty() && !out.contains(&cause) {
            let _ = write!(out, ": {cause}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::shown;

    /// As the store's error: its cause in its own message and as its source.
    #[derive(Debug)]
    struct Open {
        source: std::io::Error,
    }

    impl std::fmt::Display for Open {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot open F: {}; check the path", self.source)
        }
    }

    impl std::error::Error for Open {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn a_cause_the_message_says_is_said_once_and_others_still_follow() {
        let io = std::io::Error::other("unable to open database file");
        let err = anyhow::Error::new(Open { source: io }).context("loadlab runs list");
        assert_eq!(
            shown(&err),
            "loadlab runs list: cannot open F: unable to open database file; check the path"
        );
        // The duplicate `{:#}` printed, for the record.
        assert!(format!("{err:#}").ends_with("check the path: unable to open database file"));
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(shown(&plain), "outer: inner");
    }
}
