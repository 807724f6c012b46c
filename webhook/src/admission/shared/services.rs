//! Service-shaped settings: SH-15 public endpoint, SH-16 Service config,
//! SH-17 Consul discovery.

use shared_types::common::{PublicEndpointConfig, PublicEndpointType};
use shared_types::garage_cluster::common::{
    ConsulApi, DiscoveryConfig, ServiceConfig, ServiceType,
};

use super::Problem;

/// SH-15: only LoadBalancer and NodePort public endpoints are supported.
pub fn check_public_endpoint(field: &str, ep: Option<&PublicEndpointConfig>) -> Option<Problem> {
    let ep = ep?;
    if ep.type_ == Some(PublicEndpointType::ExternalIP) || ep.external_ip.is_some() {
        return Some(Problem::new(
            format!("{field}.externalIP"),
            format!(
                "{field}.externalIP is not supported; use LoadBalancer, NodePort, or set spec.network.rpcPublicAddr"
            ),
        ));
    }
    match ep.type_ {
        Some(PublicEndpointType::Headless) => Some(Problem::new(
            format!("{field}.type"),
            "type Headless is not supported; use LoadBalancer or NodePort",
        )),
        Some(PublicEndpointType::LoadBalancer) if ep.node_port.is_some() => Some(Problem::new(
            format!("{field}.nodePort"),
            "nodePort is only valid with type NodePort; remove it or change the type",
        )),
        Some(PublicEndpointType::NodePort) if ep.load_balancer.is_some() => Some(Problem::new(
            format!("{field}.loadBalancer"),
            "loadBalancer is only valid with type LoadBalancer; remove it or change the type",
        )),
        Some(PublicEndpointType::NodePort)
            if ep
                .node_port
                .as_ref()
                .is_none_or(|n| n.external_addresses.is_empty()) =>
        {
            Some(Problem::new(
                format!("{field}.nodePort.externalAddresses"),
                "must contain at least one externally reachable address of a Node",
            ))
        }
        Some(PublicEndpointType::LoadBalancer | PublicEndpointType::NodePort) => None,
        _ => Some(Problem::new(
            format!("{field}.type"),
            format!("{field}.type must be LoadBalancer or NodePort"),
        )),
    }
}

/// SH-16: load-balancer settings need type LoadBalancer; an external traffic
/// policy needs LoadBalancer or NodePort and must be Cluster or Local.
pub fn check_service(field: &str, svc: Option<&ServiceConfig>) -> Option<Problem> {
    let svc = svc?;
    let ty = svc.type_.unwrap_or(ServiceType::ClusterIP);
    let lb_settings = svc
        .load_balancer_ip
        .as_deref()
        .is_some_and(|s| !s.is_empty())
        || svc
            .load_balancer_source_ranges
            .as_ref()
            .is_some_and(|r| !r.is_empty());
    if lb_settings && ty != ServiceType::LoadBalancer {
        return Some(Problem::new(
            field,
            "loadBalancerIP and loadBalancerSourceRanges require type: LoadBalancer",
        ));
    }
    if let Some(etp) = svc
        .external_traffic_policy
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        if etp != "Cluster" && etp != "Local" {
            return Some(Problem::new(
                format!("{field}.externalTrafficPolicy"),
                format!("{etp:?} must be Cluster or Local"),
            ));
        }
        if ty == ServiceType::ClusterIP {
            return Some(Problem::new(
                format!("{field}.externalTrafficPolicy"),
                "externalTrafficPolicy requires type LoadBalancer or NodePort",
            ));
        }
    }
    None
}

/// SH-17: Consul discovery (only when explicitly enabled). Returns problems
/// and warnings.
pub fn check_consul(discovery: Option<&DiscoveryConfig>) -> (Vec<Problem>, Vec<String>) {
    let (mut p, mut w) = (Vec::new(), Vec::new());
    let Some(c) = discovery.and_then(|d| d.consul.as_ref()) else {
        return (p, w);
    };
    if c.enabled != Some(true) {
        return (p, w);
    }
    let f = "spec.discovery.consul";
    if c.http_addr.as_deref().is_none_or(|s| s.trim().is_empty()) {
        p.push(Problem::new(
            format!("{f}.httpAddr"),
            "required when Consul discovery is enabled",
        ));
    }
    if c.service_name
        .as_deref()
        .is_none_or(|s| s.trim().is_empty())
    {
        p.push(Problem::new(
            format!("{f}.serviceName"),
            "required when Consul discovery is enabled",
        ));
    }
    if c.ca_cert.as_deref().is_some_and(|s| !s.is_empty()) {
        p.push(Problem::new(
            format!("{f}.caCert"),
            "cannot embed a certificate in the spec; use caCertSecretRef",
        ));
    }
    if c.client_cert_secret_ref.is_some() != c.client_key_secret_ref.is_some() {
        p.push(Problem::new(
            f,
            "clientCertSecretRef and clientKeySecretRef must be set together",
        ));
    }
    let api = c.api.unwrap_or(ConsulApi::Catalog);
    if api == ConsulApi::Agent && c.client_cert_secret_ref.is_some() {
        p.push(Problem::new(
            format!("{f}.api"),
            "client certificates are supported only with api: catalog",
        ));
    }
    if c.tls_skip_verify == Some(true) && c.ca_cert_secret_ref.is_some() {
        w.push("spec.discovery.consul.caCertSecretRef is ignored by Garage while tlsSkipVerify is true".into());
    }
    if api == ConsulApi::Catalog && c.token_secret_ref.is_some() {
        w.push("Consul catalog ACL tokens require Garage >=2.3; use api: agent with older Garage versions".into());
    }
    (p, w)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ep(v: serde_json::Value) -> PublicEndpointConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn sh15_public_endpoints() {
        assert!(check_public_endpoint("f", Some(&ep(json!({"type": "LoadBalancer"})))).is_none());
        assert!(
            check_public_endpoint(
                "f",
                Some(&ep(json!({"type": "LoadBalancer", "externalIP": {}})))
            )
            .is_some()
        );
        assert!(check_public_endpoint("f", Some(&ep(json!({"type": "Headless"})))).is_some());
        assert!(
            check_public_endpoint(
                "f",
                Some(&ep(
                    json!({"type": "NodePort", "nodePort": {"externalAddresses": []}})
                ))
            )
            .is_some()
        );
        assert!(
            check_public_endpoint(
                "f",
                Some(&ep(
                    json!({"type": "NodePort", "nodePort": {"externalAddresses": ["1.2.3.4"]}})
                ))
            )
            .is_none()
        );
        assert!(
            check_public_endpoint(
                "f",
                Some(&ep(
                    json!({"type": "LoadBalancer", "nodePort": {"externalAddresses": ["a"]}})
                ))
            )
            .is_some()
        );
    }

    #[test]
    fn sh16_services() {
        let svc = |v| serde_json::from_value::<ServiceConfig>(v).unwrap();
        assert!(
            check_service(
                "f",
                Some(&svc(json!({"loadBalancerSourceRanges": ["10.0.0.0/8"]})))
            )
            .is_some()
        );
        assert!(
            check_service("f", Some(&svc(json!({"externalTrafficPolicy": "Local"})))).is_some()
        );
        assert!(
            check_service(
                "f",
                Some(&svc(
                    json!({"type": "NodePort", "externalTrafficPolicy": "invalid"})
                ))
            )
            .is_some()
        );
        assert!(
            check_service(
                "f",
                Some(&svc(
                    json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local"})
                ))
            )
            .is_none()
        );
    }

    #[test]
    fn sh17_consul() {
        let d = |v| serde_json::from_value::<DiscoveryConfig>(v).unwrap();
        let (p, _) = check_consul(Some(&d(json!({"consul": {"enabled": true}}))));
        assert_eq!(p.len(), 2);
        let (p, w) = check_consul(Some(&d(
            json!({"consul": {"enabled": true, "httpAddr": "h", "serviceName": "s",
            "tlsSkipVerify": true, "caCertSecretRef": {"name": "ca", "key": "k"}}}),
        )));
        assert!(p.is_empty());
        assert!(w[0].contains("ignored"));
        let (p, _) = check_consul(Some(&d(json!({"consul": {"enabled": false}}))));
        assert!(p.is_empty());
    }
}
