//! Names and addresses of a run's link, chosen so that they cannot collide and so that a
//! killed run's leftovers are recognised and removed by the next one.
//!
//! - The namespace is `loadlab-PID-N` (PID of the loadlab that made it, N its sequence).
//! - The host's end of the veth pair is `loadlab-` + the PID in 6 hex digits + N in base 36
//!   (15 characters, the kernel's limit for interface names); the other end, inside the
//!   namespace, is `veth0`.
//! - The addresses are a /30 in 169.254.0.0/16 (link-local: never routed beyond the host),
//!   avoiding 169.254.0.0/24 and 169.254.255.0/24 (reserved by RFC 3927), 169.254.169.0/24
//!   (cloud metadata services) and every route the host already has.

use std::net::Ipv4Addr;

pub const PREFIX: &str = "loadlab-";
/// The interface inside the namespace.
pub const INSIDE: &str = "veth0";

pub fn netns_name(pid: u32, seq: u64) -> String {
    format!("{PREFIX}{pid}-{seq}")
}

pub fn host_device(pid: u32, seq: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    format!(
        "{PREFIX}{:06x}{}",
        pid & 0xff_ffff,
        DIGITS[(seq % 36) as usize] as char
    )
}

/// The PID that owns a namespace or host device of ours, or `None` for any other name.
pub fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    if let Some((pid, seq)) = rest.split_once('-') {
        seq.parse::<u64>().ok()?;
        return pid.parse().ok();
    }
    if rest.len() == 7 && rest.is_ascii() {
        return u32::from_str_radix(&rest[..6], 16).ok();
    }
    None
}

/// A route: network and mask, as numbers (big-endian order, `u32::from(Ipv4Addr)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub network: u32,
    pub mask: u32,
}

/// The routes of `/proc/net/route` (the main table), default routes left out: they cover
/// everything and are no collision.
pub fn parse_routes(text: &str) -> Vec<Route> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // The kernel prints each address as its in-memory u32 in hex.
            let hex = |s: &str| {
                u32::from_str_radix(s, 16)
                    .ok()
                    .map(|v| u32::from_be_bytes(v.to_ne_bytes()))
            };
            let network = hex(f.get(1)?)?;
            let mask = hex(f.get(7)?)?;
            (mask != 0).then_some(Route { network, mask })
        })
        .collect()
}

const BLOCKS: u32 = 1 << 14; // /30s in a /16

/// The first free /30 at or after `seed`: its network address. Its `.1` is loadlab's end,
/// its `.2` the server's.
pub fn pick_subnet(seed: u64, routes: &[Route]) -> Option<Ipv4Addr> {
    let base = u32::from(Ipv4Addr::new(169, 254, 0, 0));
    let mask30 = !0u32 << 2;
    (0..BLOCKS)
        .map(|i| (seed as u32).wrapping_add(i) % BLOCKS)
        .map(|block| base + block * 4)
        .filter(|net| !matches!((net >> 8) & 0xff, 0 | 169 | 255))
        .find(|net| {
            routes.iter().all(|r| {
                let common = r.mask & mask30;
                (r.network & common) != (net & common)
            })
        })
        .map(Ipv4Addr::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_owner() {
        assert_eq!(netns_name(4242, 3), "loadlab-4242-3");
        assert_eq!(host_device(4242, 3), "loadlab-0010923");
        assert_eq!(host_device(4_194_303, 35), "loadlab-3fffffz");
        assert!(host_device(4_194_303, 35).len() <= 15);
        assert_eq!(owner("loadlab-4242-3"), Some(4242));
        assert_eq!(owner(&host_device(4242, 40)), Some(4242));
        for other in [
            "eth0",
            "loadlab-",
            "loadlab-x-1",
            "loadlab-12",
            "veth0",
            "loadlab-4242-x",
        ] {
            assert_eq!(owner(other), None, "{other}");
        }
    }

    #[test]
    fn routes_from_proc() {
        let text =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
        let routes = parse_routes(text);
        if cfg!(target_endian = "little") {
            assert_eq!(
                routes,
                vec![Route {
                    network: u32::from(Ipv4Addr::new(192, 0, 2, 0)),
                    mask: u32::from(Ipv4Addr::new(255, 255, 255, 0)),
                }]
            );
        }
    }

    #[test]
    fn subnets_avoid_routes_and_reserved_blocks() {
        let r = |a: [u8; 4], bits: u32| Route {
            network: u32::from(Ipv4Addr::from(a)),
            mask: !0u32 << (32 - bits),
        };
        // The first /24 is reserved: seed 0 lands on 169.254.1.0.
        assert_eq!(pick_subnet(0, &[]), Some(Ipv4Addr::new(169, 254, 1, 0)));
        assert_eq!(
            pick_subnet(64 + 1, &[]),
            Some(Ipv4Addr::new(169, 254, 1, 4))
        );
        // A /30 in use (a live run's) is skipped.
        assert_eq!(
            pick_subnet(64, &[r([169, 254, 1, 0], 30)]),
            Some(Ipv4Addr::new(169, 254, 1, 4))
        );
        // A wider route over the block is skipped whole.
        assert_eq!(
            pick_subnet(64, &[r([169, 254, 1, 0], 24)]),
            Some(Ipv4Addr::new(169, 254, 2, 0))
        );
        // The metadata /24.
        assert_eq!(
            pick_subnet(169 * 64, &[]),
            Some(Ipv4Addr::new(169, 254, 170, 0))
        );
        // A route over all of 169.254/16: nothing is free.
        assert_eq!(pick_subnet(7, &[r([169, 254, 0, 0], 16)]), None);
        // Routes elsewhere do not matter.
        assert_eq!(
            pick_subnet(64, &[r([10, 0, 0, 0], 8), r([192, 0, 2, 0], 24)]),
            Some(Ipv4Addr::new(169, 254, 1, 0))
        );
    }
}
