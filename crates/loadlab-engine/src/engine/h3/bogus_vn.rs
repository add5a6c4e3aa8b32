//! The thread's UDP socket as quinn reads it, less the Version Negotiation packets that list
//! QUIC version 1, the one loadlab offers. RFC 9000 6.2: a client must discard such a
//! packet (a server that speaks v1 never sends it: it is forged or broken), and quinn
//! does while a connection is handshaking; but a connection that is closing answers every
//! packet it cannot decrypt with its CONNECTION_CLOSE, a Version Negotiation packet
//! included, and a peer answering each of those with another kept the two ping-ponging for
//! the whole closing period (139,563 datagrams in 10 s). Dropped here, before quinn sees
//! them, they cost nothing and are answered by nothing. Any other packet passes untouched,
//! a Version Negotiation packet that does not list v1 too (the server speaks no version
//! loadlab offers: quinn ends the handshake with that reason). It must not look further
//! than a long header's first bytes: this is every datagram's path.

use quinn::udp::RecvMeta;
use quinn::{AsyncUdpSocket, UdpPoller};
use std::io::{self, IoSliceMut};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

/// QUIC version 1 (RFC 9000), as a Version Negotiation packet lists it.
const V1: [u8; 4] = [0, 0, 0, 1];

/// A socket that drops the Version Negotiation packets listing v1 (see the module).
#[derive(Debug)]
pub(super) struct DropBogusVn(pub Arc<dyn AsyncUdpSocket>);

impl AsyncUdpSocket for DropBogusVn {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.0.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &quinn::udp::Transmit) -> io::Result<()> {
        self.0.try_send(transmit)
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let n = ready!(self.0.poll_recv(cx, bufs, meta))?;
        for (buf, meta) in bufs.iter_mut().zip(meta.iter_mut()).take(n) {
            // A buffer emptied so is skipped by quinn (it reads `len` bytes).
            meta.len = drop_bogus(&mut buf[..meta.len], meta.stride);
        }
        Poll::Ready(Ok(n))
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.0.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.0.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.0.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.0.may_fragment()
    }
}

/// Removes the bogus Version Negotiation datagrams from `buf`, datagrams of `stride` bytes
/// (the last one may be shorter: the kernel's receive offload joins datagrams of one size),
/// moving those after each one down; the bytes left.
fn drop_bogus(buf: &mut [u8], stride: usize) -> usize {
    let stride = stride.max(1);
    let mut len = buf.len();
    let mut at = 0;
    while at < len {
        let end = (at + stride).min(len);
        if is_bogus_vn(&buf[at..end]) {
            buf.copy_within(end..len, at);
            len -= end - at;
        } else {
            at = end;
        }
    }
    len
}

/// A Version Negotiation packet (a long header, version 0) listing v1 among its versions.
fn is_bogus_vn(datagram: &[u8]) -> bool {
    if datagram.first().is_none_or(|b| b & 0x80 == 0) || datagram.get(1..5) != Some(&[0; 4]) {
        return false;
    }
    // The destination and source connection ids, each after its length byte.
    let Some(&dcid_len) = datagram.get(5) else {
        return false;
    };
    let scid_at = 6 + dcid_len as usize;
    let Some(&scid_len) = datagram.get(scid_at) else {
        return false;
    };
    let versions = datagram
        .get(scid_at + 1 + scid_len as usize..)
        .unwrap_or_default();
    versions.chunks_exact(4).any(|v| v == V1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Version Negotiation packet listing `versions`.
    fn vn(versions: &[[u8; 4]]) -> Vec<u8> {
        let mut p = vec![0xc5, 0, 0, 0, 0, 2, 0xaa, 0xbb, 3, 1, 2, 3];
        for v in versions {
            p.extend_from_slice(v);
        }
        p
    }

    #[test]
    fn only_version_negotiation_listing_v1_is_bogus() {
        assert!(is_bogus_vn(&vn(&[[0x0a, 0x1a, 0x2a, 0x3a], V1])));
        // The server speaks none of ours: quinn must see it, to say so.
        assert!(!is_bogus_vn(&vn(&[[0xff, 0, 0, 0x1d]])));
        // An Initial of v1, a short header, garbage, cut short: not for this filter.
        assert!(!is_bogus_vn(&[0xc0, 0, 0, 0, 1, 0, 0, 0, 0, 1]));
        assert!(!is_bogus_vn(&[0x40, 0, 0, 0, 0, 0, 0, 0, 1]));
        assert!(!is_bogus_vn(&[]));
        assert!(!is_bogus_vn(&[0x80, 0, 0, 0, 0, 200]));
    }

    #[test]
    fn bogus_datagrams_are_cut_out_of_a_batch_the_rest_kept_in_order() {
        let bogus = vn(&[V1, [0, 0, 0, 2]]);
        let stride = bogus.len();
        let other = |b: u8| vec![0x40 | b; stride];
        let mut batch = [other(1), bogus.clone(), other(2), bogus.clone(), other(3)].concat();
        // The last datagram of a batch may be shorter than the others.
        batch.truncate(batch.len() - 2);
        let len = drop_bogus(&mut batch, stride);
        let mut want = [other(1), other(2), other(3)].concat();
        want.truncate(want.len() - 2);
        assert_eq!(&batch[..len], &want[..]);
        let mut only = [bogus.clone(), bogus].concat();
        assert_eq!(drop_bogus(&mut only, stride), 0);
        let mut single = other(4);
        assert_eq!(drop_bogus(&mut single, stride), stride);
    }
}
