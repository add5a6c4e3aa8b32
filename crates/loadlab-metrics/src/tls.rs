//! TLS for the metrics client with loadlab's one verifier (`loadlab_certs::Verifier`, issue
//! 45 item 3): ureq 3 takes no rustls configuration of ours, only its own root list, so
//! `https://` goes through this connector instead of ureq's (ureq's maintainers' advice for a
//! custom verifier, algesten/ureq#1087). It wraps the TCP transport ureq opened in a rustls
//! client connection made from our configuration and hands ureq the bytes.
//!
//! ureq's transport traits live in its `unversioned` module (outside its semver promise);
//! Cargo.lock pins the version, so an update that changes them fails to compile here, not
//! at run time. It must not do anything but TLS: proxies are off, plain `http://` passes
//! through untouched.

use loadlab_certs::rustls::{self, pki_types::ServerName};
use rustls::{ClientConnection, StreamOwned};
use std::io::{Read as _, Write as _};
use std::sync::Arc;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, TcpConnector,
    Transport, TransportAdapter,
};

/// The connector chain of the metrics client: TCP, then TLS with `config` for `https://`.
pub(crate) fn connector(config: Arc<rustls::ClientConfig>) -> impl Connector {
    ().chain(TcpConnector::default())
        .chain(RustlsWith { config })
}

/// Wraps a transport in TLS made with our configuration when the URL is `https://`.
#[derive(Debug)]
struct RustlsWith {
    config: Arc<rustls::ClientConfig>,
}

impl<In: Transport> Connector<In> for RustlsWith {
    type Out = Either<In, TlsTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else {
            return Ok(None);
        };
        if !details.needs_tls() || transport.is_tls() {
            return Ok(Some(Either::A(transport)));
        }
        let host = details.uri.host().unwrap_or_default();
        // An IPv6 literal comes bracketed in a URI; a TLS name has none.
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string())
            .map_err(|_| ureq::Error::Tls("the URL's host is not a valid TLS server name"))?;
        let mut conn = ClientConnection::new(self.config.clone(), name)
            .map_err(|e| ureq::Error::Io(std::io::Error::other(e)))?;
        let mut sock = TransportAdapter::new(transport.boxed(), details.current_time.clone());
        sock.set_timeout(details.timeout);
        // A refused certificate comes back as an I/O error wrapping the rustls::Error, which
        // the client's error mapping reads.
        conn.complete_io(&mut sock)?;
        Ok(Some(Either::B(TlsTransport {
            buffers: LazyBuffers::new(
                details.config.input_buffer_size(),
                details.config.output_buffer_size(),
            ),
            stream: StreamOwned { conn, sock },
        })))
    }
}

/// A TLS connection as ureq's transport: ureq writes into and reads from `buffers`; the
/// bytes go through rustls.
struct TlsTransport {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
}

impl Transport for TlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let output = &self.buffers.output()[..amount];
        self.stream.write_all(output)?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = self.stream.read(input)?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}

impl std::fmt::Debug for TlsTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsTransport")
            .field("chained", &self.stream.sock.inner())
            .finish()
    }
}
