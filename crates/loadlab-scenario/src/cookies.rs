//! A virtual user's cookie jar: `Set-Cookie` answers sent back on later requests, as a
//! browser would. A scenario talks to one host, so the jar keeps names and values only
//! (no domain or path matching); `Max-Age=0` (or negative) deletes a cookie. The `Cookie`
//! header is rebuilt only when the jar changes, so a steady session costs no allocation.

#[derive(Debug, Clone, Default)]
pub struct CookieJar {
    cookies: Vec<(String, String)>,
    /// `name=value; name2=value2`, rebuilt on change.
    header: String,
}

impl CookieJar {
    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty()
    }

    /// The `Cookie` header's value, when there is any cookie.
    pub fn header(&self) -> Option<&str> {
        (!self.cookies.is_empty()).then_some(self.header.as_str())
    }

    /// A cookie's value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.cookies
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Takes one `Set-Cookie` header value.
    pub fn set(&mut self, set_cookie: &[u8]) {
        let text = String::from_utf8_lossy(set_cookie);
        let mut attrs = text.split(';');
        let Some((name, value)) = attrs.next().and_then(|p| p.split_once('=')) else {
            return;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() {
            return;
        }
        let expired = attrs.any(|a| {
            a.split_once('=').is_some_and(|(k, v)| {
                k.trim().eq_ignore_ascii_case("max-age")
                    && v.trim().parse::<i64>().is_ok_and(|s| s <= 0)
            })
        });
        let at = self.cookies.iter().position(|(n, _)| n == name);
        match (at, expired) {
            (Some(i), true) => {
                self.cookies.remove(i);
            }
            (Some(i), false) if self.cookies[i].1 == value => return,
            (Some(i), false) => self.cookies[i].1 = value.to_string(),
            (None, true) => return,
            (None, false) => self.cookies.push((name.to_string(), value.to_string())),
        }
        self.header.clear();
        for (k, (n, v)) in self.cookies.iter().enumerate() {
            if k > 0 {
                self.header.push_str("; ");
            }
            self.header.push_str(n);
            self.header.push('=');
            self.header.push_str(v);
        }
    }

    /// Forgets every cookie (a new session).
    pub fn clear(&mut self) {
        self.cookies.clear();
        self.header.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_kept_replaced_and_deleted() {
        let mut jar = CookieJar::default();
        assert_eq!(jar.header(), None);
        jar.set(b"session=abc; Path=/; HttpOnly");
        jar.set(b"theme=dark");
        assert_eq!(jar.header(), Some("session=abc; theme=dark"));
        jar.set(b"session=def");
        assert_eq!(jar.header(), Some("session=def; theme=dark"));
        jar.set(b"session=; Max-Age=0");
        assert_eq!(jar.header(), Some("theme=dark"));
        assert_eq!(jar.get("session"), None);
        jar.set(b"no-equals-sign");
        jar.set(b"=nameless");
        assert_eq!(jar.header(), Some("theme=dark"));
        jar.clear();
        assert!(jar.is_empty());
    }
}
