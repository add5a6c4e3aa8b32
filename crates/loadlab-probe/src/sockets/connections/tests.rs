use super::*;
use crate::sockets::tests::in_a_netns_of_its_own;
use crate::sockets::{dump, ALL_STATES};
use std::collections::BTreeSet;
use std::net::{TcpListener, TcpStream};

/// Every socket of the namespace, both families, unfiltered: what the kernel's filter must
/// agree with.
fn everything() -> Vec<Parsed> {
    [libc::AF_INET as u8, libc::AF_INET6 as u8]
        .into_iter()
        .flat_map(|f| dump(f, ALL_STATES, Filter::Any).unwrap())
        .collect()
}

fn cookies(found: &[SocketInfo]) -> BTreeSet<u64> {
    found.iter().map(|s| s.cookie).collect()
}

/// A run's connections to its port over both families, beside another port's, with
/// sockets in TIME_WAIT at both ends of the run's port: the kernel's filter keeps exactly
/// the run's live connections (those the figures are made of, by the same cookies as an
/// unfiltered dump filtered here), on the one-walk request and on the per-family one.
#[test]
fn the_kernels_filter_keeps_the_runs_connections_and_nothing_else() {
    in_a_netns_of_its_own(|| {
        let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = v4.local_addr().unwrap().port();
        let v6 = TcpListener::bind(("::1", port)).unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let other_port = other.local_addr().unwrap().port();
        // TIME_WAIT on the run's port: a client that closed first, and a server that did.
        for client_first in [true, false] {
            let client = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let (server, _) = v4.accept().unwrap();
            let (first, second) = if client_first {
                (client, server)
            } else {
                (server, client)
            };
            drop(first);
            std::thread::sleep(std::time::Duration::from_millis(10));
            drop(second);
        }
        let _c4 = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _s4 = v4.accept().unwrap();
        let _c6 = TcpStream::connect(("::1", port)).unwrap();
        let _s6 = v6.accept().unwrap();
        let _co = TcpStream::connect(("127.0.0.1", other_port)).unwrap();
        let _so = other.accept().unwrap();
        let mut all = everything();
        for _ in 0..200 {
            let waiting = all
                .iter()
                .filter(|p| p.raw.info.tcp.is_none() && !p.raw.info.listening);
            if waiting.count() >= 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            all = everything();
        }
        let time_wait = all
            .iter()
            .filter(|p| p.raw.info.tcp.is_none() && !p.raw.info.listening);
        assert_eq!(
            time_wait.count(),
            2,
            "both ends' TIME_WAIT are there to leave out"
        );
        let live = |keep: &dyn Fn(&Parsed) -> bool| -> BTreeSet<u64> {
            let kept = all
                .iter()
                .filter(|p| !p.raw.info.listening && p.raw.info.tcp.is_some());
            kept.filter(|p| keep(p))
                .map(|p| p.raw.info.cookie)
                .collect()
        };
        let to = live(&|p| p.remote_port == port);
        let on = live(&|p| p.raw.info.local_port == port);
        assert_eq!(
            (to.len(), on.len()),
            (2, 2),
            "a client and a server end per family"
        );
        for one_walk in [true, false] {
            let mut d = ConnectionDump {
                one_walk,
                ..ConnectionDump::default()
            };
            assert_eq!(cookies(d.dump(Connections::To(port)).unwrap()), to);
            assert_eq!(cookies(d.dump(Connections::On(port)).unwrap()), on);
            // Again on the kept socket, with the kept buffers.
            assert_eq!(cookies(d.dump(Connections::To(port)).unwrap()), to);
            assert_eq!(
                d.one_walk, one_walk,
                "this kernel takes the one-walk request"
            );
        }
    });
}
