//! Addresses for Nodes and Pods.
//!
//! EndpointSlice validation rejects loopback addresses, so Pods cannot live
//! on 127.x if Services are to route to them. Each kubesim instance takes a
//! /24 of 198.18.0.0/15 (the RFC 2544 benchmarking range, which Kubernetes
//! treats as ordinary) that nothing on `lo` uses yet, and adds one /32 per
//! Node and Pod to `lo`. Several test clusters can then run side by side.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::Error;

/// First host number handed out in the /24; .0 is avoided for clarity.
const FIRST_HOST: u8 = 1;
/// Last host number handed out; .255 is avoided for clarity.
const LAST_HOST: u8 = 254;

/// The addresses of one kubesim instance.
#[derive(Debug)]
pub(crate) struct AddressPool {
    /// The first three octets of the /24.
    prefix: [u8; 3],
    inner: Mutex<Allocation>,
}

#[derive(Debug, Default)]
struct Allocation {
    in_use: BTreeSet<u8>,
    /// Where the next search starts, so a freed address is not handed out
    /// again at once (a client may still hold a connection to it).
    cursor: u8,
}

impl AddressPool {
    /// Picks a free /24 and claims it by adding its first address to `lo`.
    /// That address is returned already allocated (it is the first node's).
    pub(crate) fn claim() -> Result<(AddressPool, Ipv4Addr), Error> {
        let used = addresses_on_lo()?;
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
            ^ std::process::id().wrapping_mul(2_654_435_761);
        let mut last_error = None;
        for attempt in 0..512u32 {
            let index = (seed.wrapping_add(attempt.wrapping_mul(197))) % 512;
            let prefix = [198, 18 + (index / 256) as u8, (index % 256) as u8];
            if used.iter().any(|ip| ip.octets()[..3] == prefix) {
                continue;
            }
            let first = Ipv4Addr::new(prefix[0], prefix[1], prefix[2], FIRST_HOST);
            // Two instances may pick the same /24 at the same moment; the
            // one whose `ip addr add` fails moves on.
            match add_address(first) {
                Ok(()) => {
                    // A released address must not answer, as a dead pod's address does not
                    // in a cluster; without this route it would follow the default route,
                    // where a proxy may accept the connection and then never speak.
                    unreachable_route("add", prefix);
                    let pool = AddressPool {
                        prefix,
                        inner: Mutex::new(Allocation {
                            in_use: BTreeSet::from([FIRST_HOST]),
                            cursor: FIRST_HOST + 1,
                        }),
                    };
                    return Ok((pool, first));
                }
                Err(Error::Address { detail, .. }) if detail.contains("File exists") => {}
                Err(e) => {
                    last_error = Some(e);
                    break;
                }
            }
        }
        Err(last_error.unwrap_or(Error::NoFreeSubnet))
    }

    /// Allocates a fresh address and adds it to `lo`.
    pub(crate) fn allocate(&self) -> Result<Ipv4Addr, Error> {
        let host = {
            let mut a = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            let span = usize::from(LAST_HOST - FIRST_HOST) + 1;
            let mut found = None;
            let mut candidate = a.cursor;
            for _ in 0..span {
                if !(FIRST_HOST..=LAST_HOST).contains(&candidate) {
                    candidate = FIRST_HOST;
                }
                if !a.in_use.contains(&candidate) {
                    found = Some(candidate);
                    break;
                }
                candidate = candidate.wrapping_add(1);
            }
            let Some(host) = found else {
                return Err(Error::AddressesExhausted(self.prefix_text()));
            };
            a.in_use.insert(host);
            a.cursor = host.wrapping_add(1);
            host
        };
        let ip = self.ip(host);
        if let Err(e) = add_address(ip) {
            self.forget(ip);
            return Err(e);
        }
        Ok(ip)
    }

    /// Removes an address from `lo` and returns it to the pool.
    pub(crate) fn release(&self, ip: Ipv4Addr) {
        if self.forget(ip)
            && let Err(e) = remove_address(ip)
        {
            tracing::warn!("{e}");
        }
    }

    /// Removes every address this pool added; used on shutdown and drop.
    pub(crate) fn release_all(&self) {
        let hosts: Vec<u8> = {
            let mut a = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::take(&mut a.in_use).into_iter().collect()
        };
        for host in hosts {
            let _ = remove_address(self.ip(host));
        }
        unreachable_route("del", self.prefix);
    }

    fn forget(&self, ip: Ipv4Addr) -> bool {
        let octets = ip.octets();
        if octets[..3] != self.prefix {
            return false;
        }
        let mut a = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        a.in_use.remove(&octets[3])
    }

    fn ip(&self, host: u8) -> Ipv4Addr {
        Ipv4Addr::new(self.prefix[0], self.prefix[1], self.prefix[2], host)
    }

    fn prefix_text(&self) -> String {
        format!("{}.{}.{}", self.prefix[0], self.prefix[1], self.prefix[2])
    }
}

impl Drop for AddressPool {
    fn drop(&mut self) {
        self.release_all();
    }
}

fn addresses_on_lo() -> Result<Vec<Ipv4Addr>, Error> {
    let out = Command::new("ip")
        .args(["-4", "-o", "addr", "show", "dev", "lo"])
        .output()
        .map_err(|e| Error::Address {
            action: "list",
            address: "lo".into(),
            detail: format!("running `ip`: {e}"),
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .split_whitespace()
        .filter_map(|w| w.split('/').next()?.parse().ok())
        .collect())
}

/// Adds or deletes an `unreachable` route for the /24 of `prefix`. Addresses on `lo` are in
/// the local routing table, which is consulted first, so they stay reachable; every other
/// address of the /24 fails at once. A failure is only logged: the route makes the network
/// more faithful, nothing depends on it.
fn unreachable_route(action: &str, prefix: [u8; 3]) {
    let net = format!("{}.{}.{}.0/24", prefix[0], prefix[1], prefix[2]);
    match Command::new("ip")
        .args(["route", action, "unreachable", &net])
        .output()
    {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            let detail = String::from_utf8_lossy(&o.stderr);
            if !detail.contains("File exists") && !detail.contains("No such process") {
                tracing::warn!(net, action, "unreachable route: {}", detail.trim());
            }
        }
        Err(e) => tracing::warn!(net, action, "unreachable route: running `ip`: {e}"),
    }
}

fn add_address(ip: Ipv4Addr) -> Result<(), Error> {
    run_ip("add", ip)
}

fn remove_address(ip: Ipv4Addr) -> Result<(), Error> {
    run_ip("del", ip)
}

fn run_ip(action: &'static str, ip: Ipv4Addr) -> Result<(), Error> {
    let out = Command::new("ip")
        .args(["addr", action, &format!("{ip}/32"), "dev", "lo"])
        .output();
    let error = |detail: String| Error::Address {
        action: if action == "add" { "add" } else { "remove" },
        address: ip.to_string(),
        detail,
    };
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(error(String::from_utf8_lossy(&o.stderr).trim().to_owned())),
        Err(e) => Err(error(format!("running `ip`: {e}"))),
    }
}
