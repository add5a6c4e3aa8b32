use super::*;
use crate::sockets::tests::in_a_netns_of_its_own;
use crate::sockets::{ConnectionDump, Connections};
use std::collections::BTreeMap;
use std::net::{TcpListener, TcpStream};

/// In a namespace where every socket is this process's, its descriptors give the very
/// connections and figures a kernel dump of the port gives (both families), and nothing of
/// another port, of a listener, in TIME_WAIT or over UDP.
#[test]
fn own_descriptors_give_what_the_kernels_dump_gives() {
    in_a_netns_of_its_own(|| {
        let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = v4.local_addr().unwrap().port();
        let v6 = TcpListener::bind(("::1", port)).unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        // TIME_WAIT towards the port: this client closed first.
        let gone = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (server, _) = v4.accept().unwrap();
        drop(gone);
        std::thread::sleep(std::time::Duration::from_millis(10));
        drop(server);
        let c4 = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _s4 = v4.accept().unwrap();
        let c6 = TcpStream::connect(("::1", port)).unwrap();
        let _s6 = v6.accept().unwrap();
        let _co = TcpStream::connect(other.local_addr().unwrap()).unwrap();
        let _so = other.accept().unwrap();
        // A UDP socket connected to the same port (a QUIC client's) is no TCP connection.
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.connect(("127.0.0.1", port)).unwrap();
        let figures = |found: &[SocketInfo]| -> BTreeMap<u64, (u16, u32, u32, Option<u64>)> {
            let f = |s: &SocketInfo| {
                (
                    s.local_port,
                    s.inode,
                    s.send_queue_bytes,
                    s.tcp.and_then(|t| t.bytes_received),
                )
            };
            found.iter().map(|s| (s.cookie, f(s))).collect()
        };
        let mut own = Vec::new();
        own_connections_to(port, &mut own).unwrap();
        let mut dump = ConnectionDump::default();
        let dumped = figures(dump.dump(Connections::To(port)).unwrap());
        assert_eq!(figures(&own), dumped);
        let mut ports: Vec<u16> = own.iter().map(|s| s.local_port).collect();
        let mut mine = vec![
            c4.local_addr().unwrap().port(),
            c6.local_addr().unwrap().port(),
        ];
        ports.sort_unstable();
        mine.sort_unstable();
        assert_eq!(ports, mine, "the two live connections to the port");
        assert!(own.iter().all(|s| s.tcp.is_some() && !s.listening));
    });
}
