//! A refused TLS handshake in plain words: each class of rustls error (expired, not yet
//! valid, wrong name, unknown CA, a CA certificate as the server's own, the server's
//! handshake or version refusal, a server that does not speak TLS) becomes one sentence that
//! names the problem and the flag or step that fixes it. It must not show rustls's Debug text
//! to users, and must not give advice that cannot fix the problem (`--cacert` for an expired
//! certificate, say).

use crate::error::ErrorClass;
use rustls::pki_types::UnixTime;
use rustls::{AlertDescription, CertificateError, Error, PeerIncompatible};

const INSECURE: &str = "or skip every check with --insecure (-k)";

/// The failure class of a rustls error and what to do about it.
pub(crate) fn describe(err: &Error) -> (ErrorClass, String) {
    if loadlab_certs::is_ca_used_as_end_entity(err) {
        return (
            ErrorClass::TlsCertificate,
            format!(
                "certificate not trusted: the server presented a CA certificate (CA:TRUE, as \
                 `openssl req -x509` makes) that is not one of the --cacert certificates: pass \
                 that very certificate with --cacert FILE, {INSECURE}"
            ),
        );
    }
    match err {
        Error::InvalidCertificate(why) => (ErrorClass::TlsCertificate, certificate(why)),
        Error::AlertReceived(alert) => (ErrorClass::TlsHandshake, alert_received(*alert)),
        Error::PeerIncompatible(why) => (ErrorClass::TlsHandshake, incompatible(why)),
        Error::InvalidMessage(_) | Error::InappropriateHandshakeMessage { .. } => (
            ErrorClass::TlsHandshake,
            "the server's answer is not a TLS handshake: if it speaks plain HTTP on this \
             port, use an http:// URL"
                .to_string(),
        ),
        Error::NoCertificatesPresented => (
            ErrorClass::TlsCertificate,
            format!("the server presented no certificate: check its TLS configuration, {INSECURE}"),
        ),
        other => (
            ErrorClass::TlsHandshake,
            format!("the TLS handshake failed ({other}): check the server's TLS configuration"),
        ),
    }
}

fn certificate(why: &CertificateError) -> String {
    match why {
        CertificateError::Expired => {
            format!("the server's certificate has expired: renew it on the server, {INSECURE}")
        }
        CertificateError::ExpiredContext { time, not_after } => format!(
            "the server's certificate expired on {} (it is now {}): renew it on the server, \
             {INSECURE}",
            date(*not_after),
            date(*time)
        ),
        CertificateError::NotValidYet => format!(
            "the server's certificate is not valid yet: check this machine's clock and the \
             certificate's dates, {INSECURE}"
        ),
        CertificateError::NotValidYetContext { time, not_before } => format!(
            "the server's certificate is not valid before {} (it is now {}): check this \
             machine's clock and the certificate's dates, {INSECURE}",
            date(*not_before),
            date(*time)
        ),
        CertificateError::NotValidForName => format!(
            "the server's certificate is for another name than the URL's host: use a URL \
             whose host is one of the certificate's names, {INSECURE}"
        ),
        CertificateError::NotValidForNameContext {
            expected,
            presented,
        } => format!(
            "the server's certificate is for {} and not for {}: use a URL whose host is one \
             of the certificate's names (mapped to this address in /etc/hosts if need be), \
             {INSECURE}",
            if presented.is_empty() {
                "no name at all".to_string()
            } else {
                presented
                    .iter()
                    .map(|n| plain_name(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            expected.to_str()
        ),
        CertificateError::UnknownIssuer => format!(
            "the server's certificate is signed by a CA that is not trusted here: pass that \
             CA's certificate (or the server's own, if self-signed) with --cacert FILE, \
             {INSECURE}"
        ),
        CertificateError::BadSignature => format!(
            "the server's certificate has a signature that does not verify (signed by another \
             CA of the same name?): pass the CA that signed it with --cacert FILE, check the \
             chain the server sends, {INSECURE}"
        ),
        CertificateError::Revoked => {
            format!(
                "the server's certificate has been revoked: replace it on the server, {INSECURE}"
            )
        }
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            format!(
                "the server's certificate is not for TLS servers (its extended key usage): \
                 issue one with serverAuth, {INSECURE}"
            )
        }
        other => format!(
            "the server's certificate was refused ({other}): check the chain the server sends \
             and the --cacert file, {INSECURE}"
        ),
    }
}

fn alert_received(alert: AlertDescription) -> String {
    match alert {
        AlertDescription::CertificateRequired => "the server requires a client certificate: \
             give one with --cert FILE --key FILE"
            .to_string(),
        AlertDescription::HandshakeFailure => "the server refused the handshake \
             (handshake_failure): it may require a client certificate (--cert FILE --key \
             FILE), or share no cipher suite or key type with loadlab"
            .to_string(),
        AlertDescription::ProtocolVersion => "the server refused the TLS version offered \
             (protocol_version): loadlab speaks TLS 1.2 and 1.3; drop --tls-version or pick \
             the other one"
            .to_string(),
        AlertDescription::BadCertificate
        | AlertDescription::UnknownCA
        | AlertDescription::UnsupportedCertificate
        | AlertDescription::CertificateUnknown
        | AlertDescription::AccessDenied => format!(
            "the server refused loadlab's client certificate ({alert:?}): give one it trusts \
             with --cert FILE --key FILE"
        ),
        other => format!(
            "the server ended the handshake with the alert {other:?}: check the server's TLS \
             configuration and its log"
        ),
    }
}

fn incompatible(why: &PeerIncompatible) -> String {
    match why {
        PeerIncompatible::ServerDoesNotSupportTls12Or13
        | PeerIncompatible::ServerTlsVersionIsDisabledByOurConfig
        | PeerIncompatible::SupportedVersionsExtensionRequired => "the server speaks no TLS \
             version loadlab allows (1.2 and 1.3): drop --tls-version, or enable TLS 1.2 or 1.3 \
             on the server"
            .to_string(),
        other => format!(
            "the server and loadlab share no way to do TLS ({other:?}): enable TLS 1.2 or 1.3 \
             with modern cipher suites on the server"
        ),
    }
}

/// `elsewhere.example` from rustls's `DnsName("elsewhere.example")` (its Debug form of a
/// name the certificate presents), `10.0.0.1` from `IpAddress(10.0.0.1)`.
fn plain_name(presented: &str) -> &str {
    match (presented.find('('), presented.strip_suffix(')')) {
        (Some(open), Some(inner)) => inner[open + 1..].trim_matches('"'),
        _ => presented,
    }
}

/// `2020-02-01 00:00:00 UTC` (civil date from days since the epoch, Howard Hinnant's method).
fn date(t: UnixTime) -> String {
    let secs = t.as_secs();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presented_names_lose_their_debug_wrapping() {
        assert_eq!(plain_name("DnsName(\"a.example\")"), "a.example");
        assert_eq!(plain_name("IpAddress(10.0.0.1)"), "10.0.0.1");
        assert_eq!(plain_name("plain"), "plain");
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(
            date(UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                0
            ))),
            "1970-01-01 00:00:00 UTC"
        );
        // 2020-02-01T00:00:00Z
        assert_eq!(
            date(UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                1_580_515_200
            ))),
            "2020-02-01 00:00:00 UTC"
        );
        assert_eq!(
            date(UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                951_782_400 + 3661
            ))),
            "2000-02-29 01:01:01 UTC"
        );
    }

    #[test]
    fn no_message_shows_debug_text_or_the_wrong_flag() {
        let (class, m) = describe(&Error::InvalidCertificate(CertificateError::Expired));
        assert_eq!(class, ErrorClass::TlsCertificate);
        assert!(!m.contains("--cacert") && m.contains("expired"), "{m}");
        let (_, m) = describe(&Error::InvalidCertificate(CertificateError::UnknownIssuer));
        assert!(m.contains("--cacert FILE"), "{m}");
        let (class, m) = describe(&Error::AlertReceived(AlertDescription::ProtocolVersion));
        assert_eq!(class, ErrorClass::TlsHandshake);
        assert!(m.contains("--tls-version"), "{m}");
    }
}
