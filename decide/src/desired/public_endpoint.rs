//! `spec.publicEndpoint`: the Services that publish members' RPC port outside the cluster, and
//! the address each member advertises through them (Garage's `rpc_public_addr`).
//!
//! On a GarageCluster:
//! - `LoadBalancer`: one Service `C-rpc` over the storage members; every member advertises
//!   its load-balancer address through the shared garage.toml. A load balancer spreads
//!   connections over its members, so this suits a single member; use `perNode` otherwise.
//! - `LoadBalancer` with `perNode: true`: one Service `C-<i>-rpc` per Auto slot, selecting
//!   the member that fills the slot; each member advertises its own Service's address.
//! - `NodePort`: one Service `C-<i>-rpc` per Auto slot on node port `basePort + i` (30901 by
//!   default); member `i` advertises `externalAddresses[i mod n]:basePort + i`.
//!
//! Per-slot Services need slots: under `layoutPolicy: Manual` they are not made and
//! `PublicEndpointReady` says to set `spec.publicEndpoint` on each GarageNode instead.
//!
//! On a user-written GarageNode, its own RPC Service `<node>-rpc` becomes a `LoadBalancer`
//! (advertising its address) or a `NodePort` on `basePort` (advertising
//! `externalAddresses[0]:basePort`). A generated node follows its cluster's, never its own.
//!
//! A load balancer's address is read from the Service's status; until it is assigned, the
//! member advertises nothing of it, and its garage.toml changes (a rollout) once it is. Only
//! the RPC port is ever published: the Admin API stays on ClusterIP Services.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use shared_types::common::{PublicEndpointConfig, PublicEndpointType};
use shared_types::conditions::{cluster as cc, reason};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::label;

use super::{DesiredError, Settings, labels, nodes};
use crate::conditions::Desired;

/// The first node port when `nodePort.basePort` is not set.
pub const DEFAULT_BASE_PORT: i32 = 30901;

/// `C-rpc`: the shared load-balancer Service.
pub fn shared_service(cluster: &str) -> String {
    format!("{cluster}-rpc")
}

/// `C-<i>-rpc`: the Service of Auto slot `ordinal`.
pub fn slot_service(cluster: &str, ordinal: u32) -> String {
    format!("{cluster}-{ordinal}-rpc")
}

/// True for a Service name a cluster's publicEndpoint makes (`C-rpc`, `C-<i>-rpc`): the ones
/// pruned when no longer wanted.
pub fn is_endpoint_service(cluster: &str, name: &str) -> bool {
    let Some(rest) = name.strip_prefix(cluster).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    rest == "rpc"
        || rest
            .strip_suffix("-rpc")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// How a cluster's publicEndpoint is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Shared,
    SlotLoadBalancer,
    SlotNodePort,
}

fn shape(s: &Settings) -> Option<Shape> {
    let ep = s.public_endpoint.as_ref()?;
    match ep.type_? {
        PublicEndpointType::LoadBalancer
            if ep.load_balancer.as_ref().and_then(|l| l.per_node) == Some(true) =>
        {
            Some(Shape::SlotLoadBalancer)
        }
        PublicEndpointType::LoadBalancer => Some(Shape::Shared),
        PublicEndpointType::NodePort => Some(Shape::SlotNodePort),
        // Admission refuses the other two.
        PublicEndpointType::ExternalIP | PublicEndpointType::Headless => None,
    }
}

/// The Services a cluster's publicEndpoint asks for; `slots` names the GarageNode filling
/// each Auto slot.
pub fn cluster_services(
    c: &GarageCluster,
    s: &Settings,
    slots: &[(u32, String)],
) -> Result<Vec<Service>, DesiredError> {
    let Some(ep) = s.public_endpoint.as_ref() else {
        return Ok(Vec::new());
    };
    let owner = super::controller_ref(c)?;
    let service = |name: String, selector: BTreeMap<String, String>, node_port| {
        endpoint_service(name, s, ep, selector, node_port, owner.clone())
    };
    match shape(s) {
        None => Ok(Vec::new()),
        Some(Shape::Shared) => {
            let mut selector = labels::api_selector(&s.name);
            selector.insert(
                label::LABEL_STORAGE_GROUP.into(),
                label::value::STORAGE_GROUP_DEFAULT.into(),
            );
            Ok(vec![service(shared_service(&s.name), selector, None)?])
        }
        Some(_) if s.manual => Ok(Vec::new()),
        Some(found) => slots
            .iter()
            .map(|(ordinal, node)| {
                let mut selector = labels::headless_selector(&s.name);
                selector.insert(label::LABEL_NODE.into(), node.clone());
                let node_port = (found == Shape::SlotNodePort).then(|| node_port(ep, *ordinal));
                service(slot_service(&s.name, *ordinal), selector, node_port)
            })
            .collect(),
    }
}

/// `basePort + ordinal`.
fn node_port(ep: &PublicEndpointConfig, ordinal: u32) -> i32 {
    base_port(ep).saturating_add(i32::try_from(ordinal).unwrap_or(i32::MAX))
}

fn base_port(ep: &PublicEndpointConfig) -> i32 {
    ep.node_port
        .as_ref()
        .and_then(|n| n.base_port)
        .unwrap_or(DEFAULT_BASE_PORT)
}

/// One RPC Service of `ep`'s type.
fn endpoint_service(
    name: String,
    s: &Settings,
    ep: &PublicEndpointConfig,
    selector: BTreeMap<String, String>,
    node_port: Option<i32>,
    owner: k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
) -> Result<Service, DesiredError> {
    let (type_, mut service_labels, annotations) = type_and_meta(ep);
    service_labels.extend(labels::cluster_labels(&s.name));
    // A slot's Service names its member, whose controller then hears of its address.
    if let Some(node) = selector.get(label::LABEL_NODE) {
        service_labels.insert(label::LABEL_NODE.into(), node.clone());
    }
    let spec = ServiceSpec {
        type_: Some(type_.into()),
        selector: Some(selector),
        ports: Some(vec![rpc_port(s, node_port)]),
        publish_not_ready_addresses: Some(true),
        ..Default::default()
    };
    super::services::finish(name, s, service_labels, annotations, spec, owner)
}

/// The Service type and the user's labels and annotations of `ep`.
pub fn type_and_meta(
    ep: &PublicEndpointConfig,
) -> (
    &'static str,
    BTreeMap<String, String>,
    BTreeMap<String, String>,
) {
    match ep.type_ {
        Some(PublicEndpointType::NodePort) => {
            let n = ep.node_port.as_ref();
            (
                "NodePort",
                n.and_then(|n| n.labels.clone()).unwrap_or_default(),
                n.and_then(|n| n.annotations.clone()).unwrap_or_default(),
            )
        }
        _ => {
            let l = ep.load_balancer.as_ref();
            (
                "LoadBalancer",
                l.and_then(|l| l.labels.clone()).unwrap_or_default(),
                l.and_then(|l| l.annotations.clone()).unwrap_or_default(),
            )
        }
    }
}

/// The RPC port of a published Service, on `node_port` when one is asked for.
pub fn rpc_port(s: &Settings, node_port: Option<i32>) -> ServicePort {
    ServicePort {
        name: Some("rpc".into()),
        port: i32::from(s.rpc_port),
        target_port: Some(IntOrString::String("rpc".into())),
        protocol: Some("TCP".into()),
        node_port,
        ..Default::default()
    }
}

/// The address every member advertises through the shared garage.toml: the shared load
/// balancer's, once assigned. Not while node-local pools mount that garage.toml too: the
/// Service selects only the default group, so pool members would advertise an address that
/// never reaches them.
pub fn shared_address(s: &Settings) -> Option<String> {
    (shape(s)? == Shape::Shared && s.pools.is_empty())
        .then(|| s.ingress.get(&shared_service(&s.name)))
        .flatten()
        .map(|host| host_port(host, i32::from(s.rpc_port)))
}

/// The address `node` advertises through a publicEndpoint: its slot's under its cluster's,
/// for a generated member; its own Service's for a user-written one.
pub fn member_address(node: &GarageNode, s: &Settings) -> Option<String> {
    if nodes::is_generated_by(node, &s.uid) {
        let ordinal = nodes::slot_of(&s.name, node)?;
        return match shape(s)? {
            Shape::Shared => None,
            Shape::SlotLoadBalancer => s
                .ingress
                .get(&slot_service(&s.name, ordinal))
                .map(|host| host_port(host, i32::from(s.rpc_port))),
            Shape::SlotNodePort => {
                let ep = s.public_endpoint.as_ref()?;
                let addresses = &ep.node_port.as_ref()?.external_addresses;
                let host =
                    addresses.get(usize::try_from(ordinal).ok()? % addresses.len().max(1))?;
                Some(host_port(host, node_port(ep, ordinal)))
            }
        };
    }
    let ep = node.spec.public_endpoint.as_ref()?;
    match ep.type_? {
        PublicEndpointType::LoadBalancer => s
            .ingress
            .get(&crate::names::node_rpc_service(
                node.metadata.name.as_deref()?,
            ))
            .map(|host| host_port(host, i32::from(s.rpc_port))),
        PublicEndpointType::NodePort => {
            let host = ep.node_port.as_ref()?.external_addresses.first()?;
            Some(host_port(host, base_port(ep)))
        }
        PublicEndpointType::ExternalIP | PublicEndpointType::Headless => None,
    }
}

/// The node port of a user-written node's own NodePort Service.
pub fn own_node_port(node: &GarageNode) -> Option<i32> {
    let ep = node.spec.public_endpoint.as_ref()?;
    (ep.type_ == Some(PublicEndpointType::NodePort)).then(|| base_port(ep))
}

/// `host:port`, bracketing an IPv6 literal.
fn host_port(host: &str, port: i32) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The address each of `services` was assigned by its load balancer, if it was: the first
/// ingress entry's IP, else its host name.
pub fn ingress(services: &[Service]) -> BTreeMap<String, String> {
    services
        .iter()
        .filter_map(|svc| {
            let name = svc.metadata.name.clone()?;
            let first = svc
                .status
                .as_ref()?
                .load_balancer
                .as_ref()?
                .ingress
                .as_ref()?
                .iter()
                .find_map(|i| {
                    i.ip.clone()
                        .or_else(|| i.hostname.clone())
                        .filter(|a| !a.is_empty())
                })?;
            Some((name, first))
        })
        .collect()
}

/// The Services among `services` that a publicEndpoint of this cluster made and `wanted` no
/// longer names, with their UIDs: deleted, and only when the cluster controls them.
pub fn stale(services: &[Service], s: &Settings, wanted: &[Service]) -> Vec<(String, String)> {
    services
        .iter()
        .filter(|svc| super::is_controlled_by(*svc, &s.uid))
        .filter_map(|svc| Some((svc.metadata.name.clone()?, svc.metadata.uid.clone()?)))
        .filter(|(name, _)| is_endpoint_service(&s.name, name))
        .filter(|(name, _)| {
            !wanted
                .iter()
                .any(|w| w.metadata.name.as_ref() == Some(name))
        })
        .collect()
}

/// `PublicEndpointReady` for a cluster that declares a publicEndpoint.
pub fn condition(s: &Settings) -> Option<Desired> {
    let found = shape(s)?;
    let (status, why, message) = match found {
        Shape::SlotLoadBalancer | Shape::SlotNodePort if s.manual => (
            false,
            reason::REASON_PER_NODE_NOT_IMPLEMENTED,
            "a per-member publicEndpoint needs Auto slots; under layoutPolicy: Manual set spec.publicEndpoint on each GarageNode instead".to_owned(),
        ),
        Shape::Shared if !s.pools.is_empty() => (
            false,
            reason::REASON_UNSUPPORTED,
            "a shared LoadBalancer address is not advertised while node-local pools share the garage.toml (its Service does not select their pods); use loadBalancer.perNode: true".to_owned(),
        ),
        Shape::Shared | Shape::SlotLoadBalancer if !assigned(s, found) => (
            false,
            reason::REASON_WAITING_FOR_DEPENDENCY,
            "waiting for the load balancer to assign an address to each RPC Service".to_owned(),
        ),
        _ => (
            true,
            reason::REASON_RECONCILE_SUCCESS,
            "the RPC Services are in place and every member advertises its address".to_owned(),
        ),
    };
    Some(Desired {
        type_: cc::CONDITION_PUBLIC_ENDPOINT_READY,
        status,
        reason: why,
        message,
    })
}

fn assigned(s: &Settings, found: Shape) -> bool {
    match found {
        Shape::Shared => s.ingress.contains_key(&shared_service(&s.name)),
        _ => (0..s.replicas).all(|i| s.ingress.contains_key(&slot_service(&s.name, i))),
    }
}

#[cfg(test)]
mod tests;
