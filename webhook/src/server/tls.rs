//! The HTTPS accept loop: TCP, a rustls handshake with whatever keypair the resolver holds at
//! that moment, then HTTP/1.1 served by hyper into the axum router. A certificate rotation
//! only changes what the next handshake gets; open connections are not touched.
//!
//! Stopping is a drain: the listening socket is closed (new connections are refused), each
//! open connection finishes the request it is serving and closes, and whatever is still open
//! at the deadline is cut.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::limits::Limits;

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
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = Duration>,
) -> Drained {
    let acceptor = TlsAcceptor::from(tls);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
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
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    tracing::warn!(%peer, "connection limit reached; closing the new connection");
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                let app = app.clone();
                let mut stopped = stopped.clone();
                connections.spawn(async move {
                    let _slot = slot;
                    let tls = match tokio::time::timeout(limits.handshake_timeout, acceptor.accept(tcp)).await {
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
                        .header_read_timeout(limits.header_read_timeout)
                        .max_buf_size(limits.read_buffer_bytes)
                        .serve_connection(TokioIo::new(tls), TowerToHyperService::new(app));
                    tokio::pin!(connection);
                    tokio::select! {
                        result = connection.as_mut() => {
                            if let Err(e) = result {
                                tracing::debug!(%peer, error = %e, "connection ended with an error");
                            }
                        }
                        _ = stopped.changed() => {
                            connection.as_mut().graceful_shutdown();
                            let _ = connection.await;
                        }
                    }
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
