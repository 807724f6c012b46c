//! Services (reconciler spec §3.9): the headless RPC Service, the primary API Service (S3,
//! admin, web) and one RPC Service per GarageNode.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::ObjectMeta;
use shared_types::garage_cluster::common::ServiceType;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation;

use super::{DesiredError, Settings, controller_ref, labels, rendered_hash};
use crate::names;

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

/// `C`: the S3, admin and web endpoints of the storage tier.
pub fn api(c: &GarageCluster, s: &Settings) -> Result<Service, DesiredError> {
    let cfg = c.spec.network.as_ref().and_then(|n| n.service.as_ref());
    let mut ports = vec![port("s3", s.s3_port), port("admin", s.admin_port)];
    if let Some(web) = s.web_port {
        ports.push(port("web", web));
    }
    let type_ = match cfg.and_then(|c| c.type_) {
        None | Some(ServiceType::ClusterIP) => "ClusterIP",
        Some(ServiceType::NodePort) => "NodePort",
        Some(ServiceType::LoadBalancer) => "LoadBalancer",
    };
    let spec = ServiceSpec {
        type_: Some(type_.into()),
        selector: Some(labels::api_selector(&s.name)),
        ports: Some(ports),
        publish_not_ready_addresses: Some(true),
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

/// `<gn>-rpc`: the RPC port of one GarageNode's pod, owned by the GarageNode.
pub fn node_rpc(node: &GarageNode, s: &Settings) -> Result<Service, DesiredError> {
    let name = node
        .metadata
        .name
        .as_deref()
        .ok_or(DesiredError::MissingMetadata("name"))?;
    let spec = ServiceSpec {
        selector: Some(labels::node_selector(name)),
        ports: Some(vec![port("rpc", s.rpc_port)]),
        publish_not_ready_addresses: Some(true),
        ..Default::default()
    };
    finish(
        names::node_rpc_service(name),
        s,
        labels::storage_pod_labels(&s.name, name),
        BTreeMap::new(),
        spec,
        controller_ref(node)?,
    )
}

fn finish(
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

    #[test]
    fn api_serves_s3_admin_and_web_of_the_storage_tier() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        let svc = api(&c, &s).unwrap();
        let spec = svc.spec.unwrap();
        let ports: Vec<_> = spec
            .ports
            .unwrap()
            .iter()
            .map(|p| (p.name.clone().unwrap(), p.port))
            .collect();
        assert_eq!(
            ports,
            [
                ("s3".into(), 3900),
                ("admin".into(), 3903),
                ("web".into(), 3902)
            ]
        );
        assert_eq!(spec.selector.unwrap(), labels::api_selector("garage"));
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
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
