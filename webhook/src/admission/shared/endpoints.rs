//! Listener and endpoint helpers: SH-1 managed bind address, SH-2 distinct
//! listener ports, SH-3 the Garage listener set, SH-4 Admin API URLs.

use std::net::IpAddr;

use shared_types::garage_cluster::common::{
    AdminConfig, K2vApiConfig, NetworkConfig, S3ApiConfig, WebApiConfig,
};

use super::Problem;

/// SH-1: the effective TCP port of a managed listener. An empty address
/// keeps `configured` (or `default`); a set address must be a wildcard
/// `host:port` and its port wins.
pub fn effective_port(address: &str, configured: i32, default: u16) -> Result<u16, String> {
    if address.is_empty() {
        return Ok(u16::try_from(configured)
            .ok()
            .filter(|p| *p > 0)
            .unwrap_or(default));
    }
    if address.trim() != address {
        return Err(format!(
            "{address:?}: surrounding whitespace is not allowed"
        ));
    }
    let wildcard_hint = format!(
        "managed workloads require a wildcard TCP address such as '0.0.0.0:{default}' or '[::]:{default}'"
    );
    let Some((host, port)) = address.rsplit_once(':') else {
        return Err(format!("{address:?}: {wildcard_hint}"));
    };
    if host.contains('/') || port.contains('/') {
        return Err(format!("{address:?}: {wildcard_hint}"));
    }
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() {
        return Err(format!(
            "{address:?}: an explicit wildcard IP is required; {wildcard_hint}"
        ));
    }
    match host.parse::<IpAddr>() {
        Ok(ip) if ip.is_unspecified() => {}
        _ => {
            return Err(format!(
                "{address:?} is not a wildcard address; {wildcard_hint}"
            ));
        }
    }
    match port.parse::<u32>() {
        Ok(p) if (1..=65535).contains(&p) => u16::try_from(p).map_err(|e| e.to_string()),
        _ => Err(format!("{address:?}: port must be between 1 and 65535")),
    }
}

/// SH-2: the first listener reusing an earlier listener's port.
pub fn distinct_ports(listeners: &[(String, u16)]) -> Option<Problem> {
    for (i, (field, port)) in listeners.iter().enumerate() {
        if let Some((previous, _)) = listeners[..i].iter().find(|(_, p)| p == port) {
            return Some(Problem::new(
                field.clone(),
                format!(
                    "{field} effective TCP port {port} conflicts with {previous}; every enabled Garage listener must use a distinct port"
                ),
            ));
        }
    }
    None
}

/// The listener pieces of a GarageCluster spec (both versions share them).
#[derive(Clone, Copy, Debug, Default)]
pub struct Listeners<'a> {
    /// `spec.network`.
    pub network: Option<&'a NetworkConfig>,
    /// `spec.s3Api`.
    pub s3: Option<&'a S3ApiConfig>,
    /// `spec.k2vApi`.
    pub k2v: Option<&'a K2vApiConfig>,
    /// `spec.webApi`.
    pub web: Option<&'a WebApiConfig>,
    /// `spec.admin`.
    pub admin: Option<&'a AdminConfig>,
}

/// SH-3: resolves every enabled listener (SH-1) and checks them pairwise
/// (SH-2). The first failure is returned.
pub fn check_listeners(l: Listeners<'_>) -> Option<Problem> {
    let mut ports: Vec<(String, u16)> = Vec::new();
    let mut add = |field: &str, address: Option<&String>, port: Option<i32>, default: u16| {
        match effective_port(
            address.map(String::as_str).unwrap_or_default(),
            port.unwrap_or(0),
            default,
        ) {
            Ok(p) => {
                ports.push((field.to_string(), p));
                None
            }
            Err(e) => Some(Problem::new(field, e)),
        }
    };
    let net = l.network;
    if let Some(p) = add(
        "spec.network",
        net.and_then(|n| n.rpc_bind_address.as_ref()),
        net.and_then(|n| n.rpc_bind_port),
        3901,
    ) {
        return Some(p);
    }
    let s3 = l.s3;
    if let Some(p) = add(
        "spec.s3Api",
        s3.and_then(|s| s.bind_address.as_ref()),
        s3.and_then(|s| s.bind_port),
        3900,
    ) {
        return Some(p);
    }
    if let Some(k) = l.k2v
        && let Some(p) = add("spec.k2vApi", k.bind_address.as_ref(), k.bind_port, 3904)
    {
        return Some(p);
    }
    match l.web {
        None => {
            if let Some(p) = add("spec.webApi", None, None, 3902) {
                return Some(p);
            }
        }
        Some(w) if w.enabled != Some(false) => {
            if let Some(p) = add("spec.webApi", w.bind_address.as_ref(), w.bind_port, 3902) {
                return Some(p);
            }
        }
        Some(_) => {}
    }
    let admin = l.admin;
    if let Some(p) = add(
        "spec.admin",
        admin.and_then(|a| a.bind_address.as_ref()),
        admin.and_then(|a| a.bind_port),
        3903,
    ) {
        return Some(p);
    }
    distinct_ports(&ports)
}

/// The effective Admin API port (GC-U10), or why the address is invalid.
pub fn admin_port(admin: Option<&AdminConfig>) -> Result<u16, String> {
    effective_port(
        admin
            .and_then(|a| a.bind_address.as_deref())
            .unwrap_or_default(),
        admin.and_then(|a| a.bind_port).unwrap_or(0),
        3903,
    )
}

/// SH-4: an Admin API endpoint must be an absolute http(s) URL with a host,
/// an optional valid port and path, and no user info, query or fragment.
/// The empty string is accepted (unset).
pub fn check_admin_endpoint(field: &str, url: &str) -> Option<Problem> {
    if url.is_empty() {
        return None;
    }
    let bad = |why: &str| Some(Problem::new(field, format!("{url:?} {why}")));
    if url.trim() != url {
        return bad("must not have surrounding whitespace");
    }
    let absolute = "must be an absolute http:// or https:// URL with a host";
    let Some((scheme, rest)) = url.split_once("://") else {
        return bad(absolute);
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return bad(absolute);
    }
    if rest.contains('?') {
        return bad("must not contain a query string");
    }
    if rest.contains('#') {
        return bad("must not contain a fragment");
    }
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.contains('@') {
        return bad("must not contain user info; reference the token through adminTokenSecretRef");
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, tail)) => (h, tail.strip_prefix(':')),
            None => return bad(absolute),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return bad(absolute);
    }
    if let Some(port) = port {
        match port.parse::<u32>() {
            Ok(p) if (1..=65535).contains(&p) => {}
            _ => return bad("has an invalid port; use 1-65535"),
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sh1_bind_addresses() {
        assert_eq!(effective_port("", 0, 3900), Ok(3900));
        assert_eq!(effective_port("", 4900, 3900), Ok(4900));
        assert_eq!(effective_port("0.0.0.0:5900", 4900, 3900), Ok(5900));
        assert_eq!(effective_port("[::]:5900", 0, 3900), Ok(5900));
        for bad in [
            ":5900",
            "127.0.0.1:5900",
            "garage:5900",
            "unix:///run/garage.sock",
            "0.0.0.0:0",
            ":65536",
            " 0.0.0.0:1",
        ] {
            assert!(effective_port(bad, 0, 3900).is_err(), "{bad}");
        }
    }

    fn listeners(v: serde_json::Value) -> Option<Problem> {
        let spec: shared_types::garage_cluster::v1beta2::GarageClusterSpec =
            serde_json::from_value(v).unwrap();
        check_listeners(Listeners {
            network: spec.network.as_ref(),
            s3: spec.s3_api.as_ref(),
            k2v: spec.k2v_api.as_ref(),
            web: spec.web_api.as_ref(),
            admin: spec.admin.as_ref(),
        })
    }

    #[test]
    fn sh3_listener_conflicts() {
        let p = listeners(
            json!({"s3Api": {"bindAddress": "0.0.0.0:4900"}, "admin": {"bindAddress": "[::]:4900"}}),
        );
        assert!(p.is_some_and(|p| p.message.contains("conflicts")));
        let p = listeners(json!({"network": {"rpcBindPort": 3900}}));
        assert!(p.is_some_and(|p| p.field == "spec.s3Api"));
        assert!(
            listeners(json!({"webApi": {"enabled": false}, "admin": {"bindPort": 3902}})).is_none()
        );
        assert!(listeners(json!({})).is_none());
    }

    #[test]
    fn sh4_admin_endpoints() {
        for ok in [
            "http://garage:3903",
            "https://garage.example/proxy",
            "http://[::1]:3903",
        ] {
            assert!(check_admin_endpoint("f", ok).is_none(), "{ok}");
        }
        for bad in [
            "garage:3903",
            "ftp://garage:3903",
            "http:///missing-host",
            "http://:3903",
            "http://garage:0",
            "http://garage:99999",
            "http://garage:3903?q=1",
            " http://garage:3903",
            "http://user:pw@garage:3903",
            "http://garage:3903#frag",
        ] {
            assert!(check_admin_endpoint("f", bad).is_some(), "{bad}");
        }
    }
}
