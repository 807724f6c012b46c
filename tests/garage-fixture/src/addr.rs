//! Picks loopback addresses whose fixture ports are free.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Mutex;

use crate::config::{ADMIN_PORT, RPC_PORT, S3_PORT, WEB_PORT};

/// Addresses 127.0.0.FIRST..=127.0.0.LAST are handed out; the low ones are left to tools that
/// assume 127.0.0.1.
const FIRST: u8 = 20;
const LAST: u8 = 250;

static NEXT: Mutex<Option<u8>> = Mutex::new(None);

/// Reserves `count` addresses for one cluster.
///
/// Tests of one binary run on parallel threads, so a process-wide cursor keeps them apart;
/// other processes (other test binaries, other engineers' runs) are avoided by starting at a
/// pid-derived offset and by checking that every fixture port can be bound.
pub(crate) fn allocate(count: usize) -> Option<Vec<Ipv4Addr>> {
    let span = usize::from(LAST - FIRST) + 1;
    let mut next = NEXT.lock().unwrap_or_else(|p| p.into_inner());
    let mut cursor = next.unwrap_or_else(|| {
        let offset = (std::process::id() as usize).wrapping_mul(7) % span;
        FIRST + u8::try_from(offset).unwrap_or(0)
    });
    let mut found = Vec::with_capacity(count);
    for _ in 0..span {
        let ip = Ipv4Addr::new(127, 0, 0, cursor);
        cursor = if cursor >= LAST { FIRST } else { cursor + 1 };
        if ports_free(ip) {
            found.push(ip);
            if found.len() == count {
                *next = Some(cursor);
                return Some(found);
            }
        }
    }
    None
}

fn ports_free(ip: Ipv4Addr) -> bool {
    [RPC_PORT, S3_PORT, WEB_PORT, ADMIN_PORT]
        .iter()
        .all(|&port| TcpListener::bind(SocketAddr::from((ip, port))).is_ok())
}
