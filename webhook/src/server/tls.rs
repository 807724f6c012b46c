//! The HTTPS accept loop: TCP, a rustls handshake with whatever keypair the resolver holds at
//! that moment, then HTTP/1.1 served by hyper into the axum router. A certificate rotation
//! only changes what the next handshake gets; open connections are not touched.
//!
//! Open connections are capped in all (`max_connections`) and per source address
//! (`max_connections_per_source`): a connection past either cap is closed as soon as it is
//! accepted, before its TLS handshake, so that one client flooding connections takes at most
//! its share and the API server's connections still get in.
//!
//! Stopping is a drain: the listening socket is closed (new connections are refused), each
//! open connection finishes the request it is serving and closes, and whatever is still open
//! at the deadline is cut.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::limits::Limits;
use super::metrics::Metrics;

/// The open connections of each source address, each source capped.
#[derive(Debug)]
pub struct Sources {
    cap: usize,
    open: Mutex<HashMap<IpAddr, Source>>,
}

/// One source's open connections.
#[derive(Debug, Default)]
struct Source {
    open: usize,
    /// Whether a connection was refused since the source was last under its cap, so that a
    /// flood is logged once, not once per connection.
    refusing: bool,
}

/// What becomes of a new connection.
#[derive(Debug)]
pub enum Admission {
    /// Served; the source's count goes down when the slot is dropped.
    Admitted(SourceSlot),
    /// Closed: its source already holds its cap.
    Refused {
        /// Whether this is the first refusal since the source was last under its cap.
        first: bool,
    },
}

impl Sources {
    /// A table allowing each source `cap` open connections.
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Sources {
            cap,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// Counts a new connection from `source` if the source is under its cap. An IPv4 address
    /// mapped into IPv6 counts as the IPv4 address, as a dual-stack socket reports one.
    pub fn admit(self: &Arc<Self>, source: IpAddr) -> Admission {
        let source = source.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = open.entry(source).or_default();
        if entry.open >= self.cap {
            let first = !entry.refusing;
            entry.refusing = true;
            if entry.open == 0 {
                // A cap of zero: keep no entry for a source that holds nothing.
                open.remove(&source);
            }
            return Admission::Refused { first };
        }
        entry.open += 1;
        Admission::Admitted(SourceSlot {
            sources: self.clone(),
            source,
        })
    }

    /// Connections `source` holds open now.
    pub fn open(&self, source: IpAddr) -> usize {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.get(&source.to_canonical()).map_or(0, |s| s.open)
    }

    /// Sources holding a connection now.
    pub fn sources(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    fn release(&self, source: IpAddr) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = open.get_mut(&source) {
            entry.open = entry.open.saturating_sub(1);
            entry.refusing = false;
            if entry.open == 0 {
                // Forgotten once idle, so the table grows with open connections only.
                open.remove(&source);
            }
        }
    }
}

/// One admitted connection of a source; dropping it gives the source's slot back.
#[derive(Debug)]
pub struct SourceSlot {
    sources: Arc<Sources>,
    source: IpAddr,
}

impl Drop for SourceSlot {
    fn drop(&mut self) {
        self.sources.release(self.source);
    }
}

/// What one admitted connection holds: its place under both caps.
struct Slots {
    _total: OwnedSemaphorePermit,
    _source: SourceSlot,
}

/// The caps a new connection must fit under, and where refusals are counted.
struct Gate {
    total: Arc<Semaphore>,
    sources: Arc<Sources>,
    metrics: Arc<Metrics>,
}

impl Gate {
    /// The new connection's slots, or `None` (logged and counted) when it must be closed.
    fn admit(&self, peer: SocketAddr) -> Option<Slots> {
        let source = match self.sources.admit(peer.ip()) {
            Admission::Admitted(slot) => slot,
            Admission::Refused { first } => {
                if first {
                    tracing::warn!(
                        source = %peer.ip(),
                        cap = self.sources.cap,
                        "connection limit of one source reached; closing its new connections"
                    );
                } else {
                    tracing::debug!(%peer, "connection limit of its source reached; closing");
                }
                self.metrics.refuse_connection("per_source");
                return None;
            }
        };
        let Ok(total) = self.total.clone().try_acquire_owned() else {
            tracing::warn!(%peer, "connection limit reached; closing the new connection");
            self.metrics.refuse_connection("total");
            return None;
        };
        Some(Slots {
            _total: total,
            _source: source,
        })
    }
}

/// How the drain ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drained {
    /// Connections open when the drain began.
    pub open: usize,
    /// Of those, connections still open at the deadline and cut.
    pub cut: usize,
}

/// Serves `app` over TLS on `listener` until `shutdown` completes with the drain deadline,
/// then stops accepting and lets open connections finish their current request until then.
/// Connections refused by a cap are counted in `metrics`.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    limits: Limits,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = Duration>,
) -> Drained {
    let acceptor = TlsAcceptor::from(tls);
    let gate = Gate {
        total: Arc::new(Semaphore::new(limits.max_connections)),
        sources: Sources::new(limits.max_connections_per_source),
        metrics,
    };
    let (stop, stopped) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    let deadline = loop {
        tokio::select! {
            biased;
            deadline = &mut shutdown => break deadline,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                // Dropping the stream closes it at once.
                let Some(slots) = gate.admit(peer) else {
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                let connection = Connection {
                    tcp,
                    peer,
                    acceptor: acceptor.clone(),
                    app: app.clone(),
                    limits,
                    stopped: stopped.clone(),
                };
                connections.spawn(async move {
                    let _slots = slots;
                    connection.serve().await;
                });
            }
        }
    };
    // Closing the socket refuses new connections at once instead of leaving them in the
    // accept queue until the process exits.
    drop(listener);
    let open = connections.len();
    let _ = stop.send(true);
    let drained = tokio::time::timeout(deadline, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    let cut = connections.len();
    if drained.is_err() {
        tracing::warn!(
            cut,
            "connections still open at the drain deadline; closing them"
        );
        connections.abort_all();
    }
    Drained { open, cut }
}

/// One accepted connection and what serving it takes.
struct Connection {
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    app: Router,
    limits: Limits,
    stopped: watch::Receiver<bool>,
}

impl Connection {
    /// The TLS handshake, then HTTP/1.1 until the client closes or the drain begins, when the
    /// request being served is finished first.
    async fn serve(mut self) {
        let peer = self.peer;
        let handshake = self.acceptor.accept(self.tcp);
        let tls = match tokio::time::timeout(self.limits.handshake_timeout, handshake).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                tracing::debug!(%peer, error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!(%peer, "TLS handshake timed out");
                return;
            }
        };
        let connection = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_read_timeout)
            .max_buf_size(self.limits.read_buffer_bytes)
            .serve_connection(TokioIo::new(tls), TowerToHyperService::new(self.app));
        tokio::pin!(connection);
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
            }
            _ = self.stopped.changed() => {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    fn admitted(admission: Admission) -> Option<SourceSlot> {
        match admission {
            Admission::Admitted(slot) => Some(slot),
            Admission::Refused { .. } => None,
        }
    }

    #[test]
    fn each_source_is_capped_on_its_own() {
        let a = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let b = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
        let sources = Sources::new(2);
        let mut held = Vec::new();
        // (source, admitted, refused as the first of its run)
        for (step, (source, admit, first)) in [
            (a, true, false),
            (a, true, false),
            (a, false, true),
            (a, false, false),
            (b, true, false),
            (b, true, false),
            (b, false, true),
        ]
        .into_iter()
        .enumerate()
        {
            match sources.admit(source) {
                Admission::Admitted(slot) => {
                    assert!(admit, "step {step}: {source} admitted past its cap");
                    held.push(slot);
                }
                Admission::Refused { first: got } => {
                    assert!(!admit, "step {step}: {source} refused under its cap");
                    assert_eq!(got, first, "step {step}");
                }
            }
        }
        assert_eq!((sources.open(a), sources.open(b)), (2, 2));
        // One of a's connections closes: a may open one more, and its next refusal is
        // logged again.
        drop(held.remove(0));
        assert_eq!(sources.open(a), 1);
        held.extend(admitted(sources.admit(a)));
        assert_eq!(sources.open(a), 2);
        assert!(matches!(
            sources.admit(a),
            Admission::Refused { first: true }
        ));
        drop(held);
        assert_eq!(sources.sources(), 0, "idle sources are forgotten");
    }

    #[test]
    fn an_ipv4_address_mapped_into_ipv6_is_the_same_source() {
        let sources = Sources::new(1);
        let v4 = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7));
        let mapped = IpAddr::V6(Ipv4Addr::new(192, 0, 2, 7).to_ipv6_mapped());
        let _slot = admitted(sources.admit(v4)).unwrap();
        assert!(matches!(sources.admit(mapped), Admission::Refused { .. }));
        assert_eq!(sources.open(mapped), 1);
        let v6 = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 7));
        assert!(admitted(sources.admit(v6)).is_some());
    }

    #[test]
    fn a_cap_of_zero_refuses_everything_and_keeps_nothing() {
        let sources = Sources::new(0);
        let a = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert!(matches!(sources.admit(a), Admission::Refused { .. }));
        assert_eq!(sources.sources(), 0);
    }
}
