//! The RPC address a node-local pool member publishes in its `rpc-address:` layout tag. Every
//! pod of a pool mounts one garage.toml, so a per-Node address cannot be written into Garage's
//! `rpc_public_addr`; the tag carries it instead, for peers that reconnect from the layout
//! (federation). Two sources, in order: the pool's `network.rpcPublicAddrTemplate` with the
//! Kubernetes Node name put in, or the member's Pod IP when it lies inside the cluster's
//! `spec.network.rpcPublicAddrSubnet`.

use std::net::IpAddr;

use shared_types::garage_cluster::v1beta2::{NodeLocalPoolSpec, RPC_TEMPLATE_NODE_NAME};

/// A CIDR block such as `10.42.0.0/16` or `fd00::/8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    network: IpAddr,
    prefix: u8,
}

impl Subnet {
    /// Parses `addr/prefix`; `None` when it is not a CIDR block.
    pub fn parse(text: &str) -> Option<Subnet> {
        let (addr, prefix) = text.trim().split_once('/')?;
        let network: IpAddr = addr.parse().ok()?;
        let prefix: u8 = prefix.parse().ok()?;
        let bits = if network.is_ipv4() { 32 } else { 128 };
        (prefix <= bits).then_some(Subnet { network, prefix })
    }

    /// True when `ip` lies inside the block (never across address families).
    pub fn contains(&self, ip: &IpAddr) -> bool {
        match (self.network, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                same_prefix(&n.octets(), &a.octets(), usize::from(self.prefix))
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                same_prefix(&n.octets(), &a.octets(), usize::from(self.prefix))
            }
            _ => false,
        }
    }
}

fn same_prefix(a: &[u8], b: &[u8], bits: usize) -> bool {
    let whole = bits / 8;
    if a[..whole] != b[..whole] {
        return false;
    }
    let rest = bits % 8;
    rest == 0 || {
        let mask = 0xffu8 << (8 - rest);
        a[whole] & mask == b[whole] & mask
    }
}

/// `host:port`, with an IPv6 host in brackets.
pub fn host_port(ip: &IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    }
}

/// The address the member of `pool` on Kubernetes Node `node` publishes: the pool's template
/// for that Node, else the first of `ips` inside `subnet` (the pod's current IPs first, then
/// the address last discovered, so that a pod being replaced does not take the tag away and
/// put it back). `None` when neither applies.
pub fn pool_member(
    pool: &NodeLocalPoolSpec,
    node: &str,
    subnet: Option<&Subnet>,
    ips: &[IpAddr],
    port: u16,
) -> Option<String> {
    if let Some(template) = pool
        .network
        .as_ref()
        .and_then(|n| n.rpc_public_addr_template.as_deref())
        .filter(|t| !t.is_empty())
    {
        return Some(template.replace(RPC_TEMPLATE_NODE_NAME, node));
    }
    let subnet = subnet?;
    ips.iter()
        .find(|ip| subnet.contains(ip))
        .map(|ip| host_port(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(template: Option<&str>) -> NodeLocalPoolSpec {
        serde_json::from_value(serde_json::json!({
            "name": "local",
            "capacity": "1Gi",
            "metadata": {"hostPath": "/var/lib/garage/meta"},
            "data": {"hostPath": "/var/lib/garage/data"},
            "selector": {"matchLabels": {"pool": "local"}},
            "network": template.map(|t| serde_json::json!({"rpcPublicAddrTemplate": t})),
        }))
        .unwrap()
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn the_template_names_the_kubernetes_node() {
        let p = pool(Some("{nodeName}.storage.example.net:3901"));
        assert_eq!(
            pool_member(&p, "worker-3", None, &[], 3901).as_deref(),
            Some("worker-3.storage.example.net:3901")
        );
        // The template wins over a subnet the pod IP is in.
        let s = Subnet::parse("10.0.0.0/8").unwrap();
        assert_eq!(
            pool_member(&p, "worker-3", Some(&s), &ips(&["10.1.2.3"]), 3901).as_deref(),
            Some("worker-3.storage.example.net:3901")
        );
    }

    #[test]
    fn without_a_template_the_pod_ip_inside_the_subnet_is_published() {
        let p = pool(None);
        let s = Subnet::parse("192.168.8.0/22").unwrap();
        let got = pool_member(&p, "n", Some(&s), &ips(&["10.0.0.5", "192.168.11.7"]), 3901);
        assert_eq!(got.as_deref(), Some("192.168.11.7:3901"));
        assert_eq!(
            pool_member(&p, "n", Some(&s), &ips(&["192.168.12.1"]), 3901),
            None
        );
        // No subnet, no template: nothing is published.
        assert_eq!(pool_member(&p, "n", None, &ips(&["10.0.0.5"]), 3901), None);
    }

    #[test]
    fn ipv6_addresses_are_bracketed_and_families_never_match() {
        let p = pool(None);
        let s = Subnet::parse("fd00:10::/32").unwrap();
        assert_eq!(
            pool_member(
                &p,
                "n",
                Some(&s),
                &ips(&["10.0.0.5", "fd00:10:0:1::9"]),
                3901
            )
            .as_deref(),
            Some("[fd00:10:0:1::9]:3901")
        );
        let v4 = Subnet::parse("0.0.0.0/0").unwrap();
        assert!(!v4.contains(&"::1".parse().unwrap()));
        assert!(v4.contains(&"8.8.8.8".parse().unwrap()));
    }

    #[test]
    fn subnets_parse_strictly() {
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "fd00::/129",
            "x/8",
            "10.0.0.0/-1",
            "",
        ] {
            assert_eq!(Subnet::parse(bad), None, "{bad}");
        }
        let s = Subnet::parse("10.42.0.0/15").unwrap();
        assert!(s.contains(&"10.43.255.255".parse().unwrap()));
        assert!(!s.contains(&"10.44.0.0".parse().unwrap()));
    }
}
