//! The cloud's load balancer for Services of type `LoadBalancer`.
//!
//! A local cluster has no cloud controller, so such a Service would stay pending forever.
//! kubesim gives each one an address of its own from the instance's pool (a /32 on `lo`, as
//! for Pods), writes it to `status.loadBalancer.ingress`, and listens on that address at each
//! of the Service's ports. Every connection is forwarded to one of the Service's pods at the
//! port's target port: a Ready pod first, or any running one when the Service publishes
//! not-ready addresses. The pods are looked up per connection from the Service as it is now,
//! so a changed selector or a replaced pod is followed. A Service that goes away or stops
//! being a `LoadBalancer` loses its address and listeners.
//!
//! Only numeric target ports are followed (a named one is taken as the Service port), and
//! connections are TCP: what the operator's RPC Services need.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::Shared;

/// One Service being served.
struct Served {
    ip: Ipv4Addr,
    /// The Service as last seen, read by every new connection.
    service: Arc<Mutex<Service>>,
    listeners: Vec<JoinHandle<()>>,
    /// The ports listened on; a change of ports starts the listeners again.
    ports: Vec<(i32, i32)>,
}

/// Starts serving every `LoadBalancer` Service of the cluster.
pub(crate) fn spawn(shared: Arc<Shared>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let api: Api<Service> = Api::all(shared.client.clone());
        let mut served: BTreeMap<(String, String), Served> = BTreeMap::new();
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(event) = events.next().await {
            let (svc, deleted) = match event {
                Ok(watcher::Event::Apply(svc) | watcher::Event::InitApply(svc)) => (svc, false),
                Ok(watcher::Event::Delete(svc)) => (svc, true),
                _ => continue,
            };
            let key = (svc.namespace().unwrap_or_default(), svc.name_any());
            let wanted = !deleted
                && svc.metadata.deletion_timestamp.is_none()
                && svc.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("LoadBalancer");
            if !wanted {
                if let Some(s) = served.remove(&key) {
                    stop(&shared, s);
                }
                continue;
            }
            serve(&shared, &mut served, key, svc).await;
        }
    })
}

/// Serves `svc` (starting or updating it) and publishes its address.
async fn serve(
    shared: &Arc<Shared>,
    served: &mut BTreeMap<(String, String), Served>,
    key: (String, String),
    svc: Service,
) {
    let ports = ports(&svc);
    if let Some(s) = served.get_mut(&key) {
        *s.service.lock().unwrap_or_else(|p| p.into_inner()) = svc.clone();
        if s.ports != ports {
            for l in s.listeners.drain(..) {
                l.abort();
            }
            s.listeners = listen(s.ip, &ports, &s.service, shared);
            s.ports = ports;
        }
        publish(shared, &key, s.ip, &svc).await;
        return;
    }
    let ip = match shared.net.allocate() {
        Ok(ip) => ip,
        Err(e) => {
            tracing::warn!(
                "no address for LoadBalancer Service {}/{}: {e}",
                key.0,
                key.1
            );
            return;
        }
    };
    let service = Arc::new(Mutex::new(svc.clone()));
    let listeners = listen(ip, &ports, &service, shared);
    publish(shared, &key, ip, &svc).await;
    served.insert(
        key,
        Served {
            ip,
            service,
            listeners,
            ports,
        },
    );
}

fn stop(shared: &Shared, s: Served) {
    for l in s.listeners {
        l.abort();
    }
    shared.net.release(s.ip);
}

/// Each Service port and the pod port it forwards to.
fn ports(svc: &Service) -> Vec<(i32, i32)> {
    svc.spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .into_iter()
        .flatten()
        .map(|p| {
            let target = match &p.target_port {
                Some(IntOrString::Int(t)) => *t,
                _ => p.port,
            };
            (p.port, target)
        })
        .collect()
}

/// Writes the address into the Service's status unless it is there already.
async fn publish(shared: &Shared, key: &(String, String), ip: Ipv4Addr, svc: &Service) {
    let current = svc
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .and_then(|i| i.first())
        .and_then(|i| i.ip.clone());
    if current.as_deref() == Some(ip.to_string().as_str()) {
        return;
    }
    let api: Api<Service> = Api::namespaced(shared.client.clone(), &key.0);
    let patch =
        serde_json::json!({"status": {"loadBalancer": {"ingress": [{"ip": ip.to_string()}]}}});
    if let Err(e) = api
        .patch_status(&key.1, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        tracing::warn!("publishing the address of Service {}/{}: {e}", key.0, key.1);
    }
}

fn listen(
    ip: Ipv4Addr,
    ports: &[(i32, i32)],
    service: &Arc<Mutex<Service>>,
    shared: &Arc<Shared>,
) -> Vec<JoinHandle<()>> {
    ports
        .iter()
        .filter_map(|&(port, target)| {
            let port = u16::try_from(port).ok()?;
            let (service, shared) = (service.clone(), shared.clone());
            Some(tokio::spawn(async move {
                let listener = match TcpListener::bind((ip, port)).await {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!("listening on {ip}:{port}: {e}");
                        return;
                    }
                };
                while let Ok((inbound, _)) = listener.accept().await {
                    let svc = service.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    let client = shared.client.clone();
                    tokio::spawn(forward(client, svc, target, inbound));
                }
            }))
        })
        .collect()
}

/// Forwards one connection to a pod of `svc` at `target`; with no pod it is closed, as a
/// load balancer with no healthy backend resets it.
async fn forward(client: kube::Client, svc: Service, target: i32, mut inbound: TcpStream) {
    let Some(ip) = backend(client, &svc).await else {
        return;
    };
    let Ok(port) = u16::try_from(target) else {
        return;
    };
    if let Ok(mut outbound) = TcpStream::connect((ip.as_str(), port)).await {
        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
    }
}

/// The address of the pod a new connection goes to.
async fn backend(client: kube::Client, svc: &Service) -> Option<String> {
    let spec = svc.spec.as_ref()?;
    let selector = spec.selector.as_ref().filter(|s| !s.is_empty())?;
    let labels: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let pods: Api<Pod> = Api::namespaced(client, &svc.namespace().unwrap_or_default());
    let list = pods
        .list(&ListParams::default().labels(&labels.join(",")))
        .await
        .ok()?;
    let running = |p: &&Pod| {
        p.metadata.deletion_timestamp.is_none()
            && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    };
    let ready = |p: &&Pod| {
        p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    };
    let not_ready_too = spec.publish_not_ready_addresses == Some(true);
    let pick = list
        .items
        .iter()
        .filter(running)
        .find(ready)
        .or_else(|| list.items.iter().filter(running).find(|_| not_ready_too))?;
    pick.status.as_ref()?.pod_ip.clone()
}
