//! Services: the headless RPC Service, the primary API Service (S3,
//! web), the admin Service and one RPC Service per GarageNode.
//!
//! The Admin API is plain HTTP guarded by one bearer token that can change the whole store, so
//! it never shares a Service with S3: the API Service takes the user's type (NodePort,
//! LoadBalancer) and load-balancer settings, the admin Service is always ClusterIP and takes
//! none of them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use shared_types::garage_cluster::common::ServiceType;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation;

use super::{DesiredError, Settings, controller_ref, labels, rendered_hash};
use crate::names;

/// `publishNotReadyAddresses` of the API and admin Services: both front the same pods, so an
/// in-cluster client of the Admin API reaches exactly the members an S3 client does.
const API_PUBLISH_NOT_READY: bool = true;

/// Every Service the cluster controller ensures for `c`: headless, API and admin.
pub fn cluster_services(c: &GarageCluster, s: &Settings) -> Result<Vec<Service>, DesiredError> {
    let mut all = vec![headless(c, s)?, api(c, s)?, admin(c, s)?];
    if s.gateway_tier {
        all.push(gateway(c, s)?);
    }
    Ok(all)
}

/// `C-gateway`, beside a gateway tier: the S3, Admin, web and K2V ports of the gateway pods,
/// always ClusterIP. Unlike [`api`] it follows readiness: a gateway stores nothing, so one
/// that is not ready has nothing to offer a client that another gateway cannot.
pub fn gateway(c: &GarageCluster, s: &Settings) -> Result<Service, DesiredError> {
    let mut ports = vec![port("s3", s.s3_port), port("admin", s.admin_port)];
    if let Some(web) = s.web_port {
        ports.push(port("web", web));
    }
    if let Some(k2v) = s.k2v_port {
        ports.push(port("k2v", k2v));
    }
    let spec = ServiceSpec {
        type_: Some("ClusterIP".into()),
        selector: Some(labels::gateway_selector(&s.name)),
        ports: Some(ports),
        // Unset is false; the API server leaves a false out, and the write compares fields.
        publish_not_ready_addresses: None,
        ..Default::default()
    };
    let mut service_labels = labels::cluster_labels(&s.name);
    service_labels.insert(
        shared_types::keys::label::LABEL_TIER.into(),
        shared_types::keys::label::value::TIER_GATEWAY.into(),
    );
    finish(
        names::gateway_service(&s.name),
        s,
        service_labels,
        BTreeMap::new(),
        spec,
        controller_ref(c)?,
    )
}

/// `C-headless`: every pod's RPC port, ready or not (Garage peers must find each other before
/// any of them is ready).
pub fn headless(c: &GarageCluster, s: &Settings) -> Result<Service, DesiredError> {
    let spec = ServiceSpec {
        cluster_ip: Some("None".into()),
        selector: Some(labels::headless_selector(&s.name)),
        ports: Some(vec![port("rpc", s.rpc_port)]),
        publish_not_ready_addresses: Some(true),
        ..Default::default()
    };
    finish(
        names::headless_service(&s.name),
        s,
        labels::cluster_labels(&s.name),
        BTreeMap::new(),
        spec,
        controller_ref(c)?,
    )
}

/// `C`: the S3, web and K2V endpoints of the storage tier, shaped by `spec.network.service` (type,
/// load-balancer fields, user labels and annotations). The Admin API is always on [`admin`];
/// a ClusterIP `C` carries it too, so clients and GarageAdminToken Secrets that name
/// `C:3903` (as the Go operator renders it) keep working, but a NodePort or LoadBalancer `C`
/// never does: that would publish a plain-HTTP, bearer-token API outside the cluster.
pub fn api(c: &GarageCluster, s: &Settings) -> Result<Service, DesiredError> {
    let cfg = c.spec.network.as_ref().and_then(|n| n.service.as_ref());
    let type_ = match cfg.and_then(|c| c.type_) {
        None | Some(ServiceType::ClusterIP) => "ClusterIP",
        Some(ServiceType::NodePort) => "NodePort",
        Some(ServiceType::LoadBalancer) => "LoadBalancer",
    };
    let mut ports = vec![port("s3", s.s3_port)];
    if type_ == "ClusterIP" {
        ports.push(port("admin", s.admin_port));
    }
    if let Some(web) = s.web_port {
        ports.push(port("web", web));
    }
    if let Some(k2v) = s.k2v_port {
        ports.push(port("k2v", k2v));
    }
    let spec = ServiceSpec {
        type_: Some(type_.into()),
        selector: Some(labels::api_selector(&s.name)),
        ports: Some(ports),
        publish_not_ready_addresses: Some(API_PUBLISH_NOT_READY),
        load_balancer_ip: cfg.and_then(|c| c.load_balancer_ip.clone()),
        load_balancer_source_ranges: cfg.and_then(|c| c.load_balancer_source_ranges.clone()),
        external_traffic_policy: cfg.and_then(|c| c.external_traffic_policy.clone()),
        ..Default::default()
    };
    // Operator labels win over user labels of the same key.
    let mut service_labels = cfg.and_then(|c| c.labels.clone()).unwrap_or_default();
    service_labels.extend(labels::cluster_labels(&s.name));
    finish(
        names::api_service(&s.name),
        s,
        service_labels,
        cfg.and_then(|c| c.annotations.clone()).unwrap_or_default(),
        spec,
        controller_ref(c)?,
    )
}

/// `C-admin`: the Admin API of the pods [`api`] selects, always ClusterIP. It reads nothing of
/// `spec.network.service`: user annotations and labels are how load-balancer and DNS
/// controllers are told to publish a Service, and the Admin API must stay in the cluster.
pub fn admin(c: &GarageCluster, s: &Settings) -> Result<Service, DesiredError> {
    let spec = ServiceSpec {
        type_: Some("ClusterIP".into()),
        selector: Some(labels::api_selector(&s.name)),
        ports: Some(vec![port("admin", s.admin_port)]),
        publish_not_ready_addresses: Some(API_PUBLISH_NOT_READY),
        ..Default::default()
    };
    // The component label tells it from the cluster's other Services: the ServiceMonitor of
    // spec.monitoring selects it alone, so each member is scraped once.
    let mut admin_labels = labels::cluster_labels(&s.name);
    admin_labels.extend(super::service_monitor::admin_service_selector(&s.name));
    finish(
        names::admin_service(&s.name),
        s,
        admin_labels,
        BTreeMap::new(),
        spec,
        controller_ref(c)?,
    )
}

/// `<gn>-rpc`: the RPC port of one GarageNode's pod, owned by the GarageNode.
pub fn node_rpc(node: &GarageNode, s: &Settings) -> Result<Service, DesiredError> {
    let name = node
        .metadata
        .name
        .as_deref()
        .ok_or(DesiredError::MissingMetadata("name"))?;
    // A user-written node's own publicEndpoint publishes this Service; a generated node's
    // is its cluster's per-slot Service.
    let public = node
        .spec
        .public_endpoint
        .as_ref()
        .filter(|_| !super::nodes::is_generated_by(node, &s.uid));
    let (type_, mut service_labels, annotations) = match public {
        Some(ep) => super::public_endpoint::type_and_meta(ep),
        None => ("ClusterIP", BTreeMap::new(), BTreeMap::new()),
    };
    let rpc = match public {
        Some(_) => super::public_endpoint::rpc_port(s, super::public_endpoint::own_node_port(node)),
        None => port("rpc", s.rpc_port),
    };
    let spec = ServiceSpec {
        type_: Some(type_.to_owned()),
        selector: Some(labels::node_selector(name)),
        ports: Some(vec![rpc]),
        publish_not_ready_addresses: Some(true),
        ..Default::default()
    };
    service_labels.extend(labels::node_pod_labels(&s.name, node));
    finish(
        names::node_rpc_service(name),
        s,
        service_labels,
        annotations,
        spec,
        controller_ref(node)?,
    )
}

pub(super) fn finish(
    name: String,
    s: &Settings,
    labels: BTreeMap<String, String>,
    mut annotations: BTreeMap<String, String>,
    spec: ServiceSpec,
    owner: k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
) -> Result<Service, DesiredError> {
    annotations.insert(
        annotation::ANNOTATION_RENDERED_HASH.into(),
        rendered_hash(&(&labels, &annotations, &spec)),
    );
    Ok(Service {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(s.namespace.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    })
}

fn port(name: &str, number: u16) -> ServicePort {
    ServicePort {
        name: Some(name.into()),
        port: i32::from(number),
        target_port: Some(IntOrString::String(name.into())),
        protocol: Some("TCP".into()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::nodes::auto_storage_node;
    use crate::desired::test_support::cluster;

    #[test]
    fn headless_publishes_not_ready_rpc() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        let svc = headless(&c, &s).unwrap();
        let spec = svc.spec.unwrap();
        assert_eq!(svc.metadata.name.as_deref(), Some("garage-headless"));
        assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
        assert_eq!(spec.publish_not_ready_addresses, Some(true));
        assert_eq!(spec.ports.unwrap()[0].port, 3901);
    }

    /// `(name, port)` of every port of `svc`.
    fn ports(svc: &Service) -> Vec<(String, i32)> {
        svc.spec
            .iter()
            .flat_map(|sp| sp.ports.iter().flatten())
            .map(|p| (p.name.clone().unwrap_or_default(), p.port))
            .collect()
    }

    #[test]
    fn api_serves_s3_and_web_of_the_storage_tier() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        let svc = api(&c, &s).unwrap();
        assert_eq!(svc.metadata.name.as_deref(), Some("garage"));
        assert_eq!(
            ports(&svc),
            [
                ("s3".into(), 3900),
                ("admin".into(), 3903),
                ("web".into(), 3902)
            ]
        );
        let spec = svc.spec.unwrap();
        assert_eq!(spec.selector.unwrap(), labels::api_selector("garage"));
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    }

    #[test]
    fn api_serves_k2v_when_it_is_on() {
        let mut c = cluster(3);
        c.spec.k2v_api = Some(shared_types::garage_cluster::common::K2vApiConfig {
            bind_port: Some(3910),
            ..Default::default()
        });
        let s = Settings::from_cluster(&c).unwrap();
        assert!(ports(&api(&c, &s).unwrap()).contains(&("k2v".into(), 3910)));
        assert!(
            !ports(&admin(&c, &s).unwrap())
                .iter()
                .any(|(n, _)| n == "k2v")
        );
    }

    #[test]
    fn admin_serves_the_admin_port_of_the_api_pods() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        let svc = admin(&c, &s).unwrap();
        assert_eq!(svc.metadata.name.as_deref(), Some("garage-admin"));
        assert_eq!(ports(&svc), [("admin".into(), 3903)]);
        assert_eq!(svc.metadata.owner_references.unwrap()[0].uid, "uid-1");
        let (spec, api_spec) = (svc.spec.unwrap(), api(&c, &s).unwrap().spec.unwrap());
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
        assert_eq!(spec.selector, api_spec.selector);
        assert_eq!(
            spec.publish_not_ready_addresses,
            api_spec.publish_not_ready_addresses
        );
    }

    #[test]
    fn the_cluster_ensures_headless_api_and_admin() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        let names: Vec<_> = cluster_services(&c, &s)
            .unwrap()
            .into_iter()
            .map(|v| v.metadata.name.unwrap())
            .collect();
        assert_eq!(names, ["garage-headless", "garage", "garage-admin"]);
    }

    /// Every Service the cluster controller applies for `c`.
    fn rendered(c: &GarageCluster, s: &Settings) -> Vec<Service> {
        cluster_services(c, s).unwrap()
    }

    /// `garage` with `spec.network.service` set to `service` (type, loadBalancer fields,
    /// annotations, labels) and the Admin API on `admin_port`.
    fn exposed(service: serde_json::Value, admin_port: Option<u16>) -> GarageCluster {
        let mut c = cluster(3);
        c.spec.network =
            Some(serde_json::from_value(serde_json::json!({ "service": service })).unwrap());
        if let Some(p) = admin_port {
            c.spec.admin =
                Some(serde_json::from_value(serde_json::json!({ "bindPort": p })).unwrap());
        }
        c
    }

    /// True when `svc` forwards to Garage's Admin API: by the default or configured port
    /// number, or by the container port's name.
    fn carries_admin(svc: &Service, s: &Settings) -> bool {
        let admin = i32::from(s.admin_port);
        svc.spec
            .iter()
            .flat_map(|sp| sp.ports.iter().flatten())
            .any(|p| {
                p.port == 3903
                    || p.port == admin
                    || p.name.as_deref() == Some("admin")
                    || p.target_port == Some(IntOrString::String("admin".into()))
                    || p.target_port == Some(IntOrString::Int(admin))
            })
    }

    /// What is wrong, for the Admin API, with the Services rendered for `garage`: an empty
    /// list when exactly one Service carries it, `garage-admin`, of type ClusterIP, with no
    /// load-balancer field and neither the user's annotations nor labels.
    fn admin_exposure_problems(services: &[Service], s: &Settings) -> Vec<String> {
        let mut problems = Vec::new();
        let carrying: Vec<&Service> = services.iter().filter(|v| carries_admin(v, s)).collect();
        if !carrying
            .iter()
            .any(|v| v.metadata.name.as_deref() == Some("garage-admin"))
        {
            problems.push("no garage-admin Service carries the Admin API".to_owned());
        }
        // A ClusterIP API Service may carry it too (compatibility); nothing else may.
        let api_too = |v: &Service| {
            v.metadata.name.as_deref() == Some("garage")
                && v.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("ClusterIP")
        };
        // The operator's labels alone: the cluster's, and those the ServiceMonitor selects.
        let mut operator_labels = labels::cluster_labels("garage");
        operator_labels.extend(crate::desired::service_monitor::admin_service_selector(
            "garage",
        ));
        for svc in carrying.into_iter().filter(|v| !api_too(v)) {
            let name = svc.metadata.name.clone().unwrap_or_default();
            let spec = svc.spec.clone().unwrap_or_default();
            let annotations = svc.metadata.annotations.clone().unwrap_or_default();
            let checks = [
                (name == "garage-admin", "is not garage-admin"),
                (
                    spec.type_.as_deref() == Some("ClusterIP"),
                    "is not ClusterIP",
                ),
                (spec.load_balancer_ip.is_none(), "takes loadBalancerIP"),
                (
                    spec.load_balancer_source_ranges.is_none(),
                    "takes loadBalancerSourceRanges",
                ),
                (
                    spec.external_traffic_policy.is_none(),
                    "takes externalTrafficPolicy",
                ),
                (
                    annotations
                        .keys()
                        .all(|k| k == annotation::ANNOTATION_RENDERED_HASH),
                    "takes the user's annotations",
                ),
                (
                    svc.metadata.labels == Some(operator_labels.clone()),
                    "takes the user's labels",
                ),
                (
                    spec.selector == Some(labels::api_selector("garage")),
                    "does not select the API Service's pods",
                ),
                (
                    spec.publish_not_ready_addresses == Some(true),
                    "does not publish not-ready addresses as the API Service does",
                ),
            ];
            for (ok, what) in checks {
                if !ok {
                    problems.push(format!("Service {name} carries the Admin API and {what}"));
                }
            }
        }
        problems
    }

    #[test]
    fn the_admin_api_is_only_ever_on_a_cluster_ip_service() {
        let user = serde_json::json!({
            "loadBalancerIP": "203.0.113.7",
            "loadBalancerSourceRanges": ["0.0.0.0/0"],
            "externalTrafficPolicy": "Local",
            "annotations": {"lb.example/expose": "public"},
            "labels": {"exposure": "public"},
        });
        let with_type = |t: Option<&str>| {
            let mut v = user.clone();
            if let Some(t) = t {
                v["type"] = t.into();
            }
            v
        };
        let mut problems = Vec::new();
        for (case, service, admin_port) in [
            ("type unset", with_type(None), None),
            ("ClusterIP", with_type(Some("ClusterIP")), None),
            ("NodePort", with_type(Some("NodePort")), None),
            ("LoadBalancer", with_type(Some("LoadBalancer")), None),
            (
                "LoadBalancer, admin on 4903",
                with_type(Some("LoadBalancer")),
                Some(4903),
            ),
            (
                "NodePort, no user fields",
                serde_json::json!({"type": "NodePort"}),
                None,
            ),
        ] {
            let c = exposed(service, admin_port);
            let s = Settings::from_cluster(&c).unwrap();
            for p in admin_exposure_problems(&rendered(&c, &s), &s) {
                problems.push(format!("{case}: {p}"));
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn node_rpc_is_owned_by_the_node() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        let mut n = auto_storage_node(&c, &s, 2).unwrap();
        n.metadata.uid = Some("n-uid".into());
        let svc = node_rpc(&n, &s).unwrap();
        assert_eq!(svc.metadata.name.as_deref(), Some("garage-storage-2-rpc"));
        assert_eq!(svc.metadata.owner_references.unwrap()[0].uid, "n-uid");
        assert_eq!(
            svc.spec.unwrap().selector.unwrap(),
            labels::node_selector("garage-storage-2")
        );
    }
}
