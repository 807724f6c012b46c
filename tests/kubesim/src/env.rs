//! Container environment: `env`, `envFrom`, the downward API's field and
//! resource references, and `$(VAR)` expansion as the kubelet does it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ConfigMap, Container, ObjectFieldSelector, ResourceFieldSelector, Secret,
};
use kube::{Api, Client};

use crate::pods::PodInfo;

/// What the node offers a container without limits (matches the Node's
/// allocatable resources).
const NODE_CPU: f64 = 16.0;
const NODE_MEMORY: f64 = 64.0 * 1024.0 * 1024.0 * 1024.0;
const NODE_EPHEMERAL: f64 = 100.0 * 1024.0 * 1024.0 * 1024.0;

/// The environment of `container`, in Kubernetes' order, expanded.
/// An error is the message of a `CreateContainerConfigError`.
pub(crate) async fn resolve(
    client: &Client,
    info: &PodInfo,
    container: &Container,
) -> Result<Vec<(String, String)>, String> {
    let mut vars: Vec<(String, String)> = Vec::new();
    let set = |vars: &mut Vec<(String, String)>, key: String, value: String| {
        if let Some(slot) = vars.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = value;
        } else {
            vars.push((key, value));
        }
    };
    for source in container.env_from.iter().flatten() {
        let prefix = source.prefix.clone().unwrap_or_default();
        if let Some(r) = &source.config_map_ref {
            match get_config_map(client, &info.namespace, &r.name).await? {
                Some(cm) => {
                    for (k, v) in cm.data.unwrap_or_default() {
                        set(&mut vars, format!("{prefix}{k}"), v);
                    }
                }
                None if r.optional == Some(true) => {}
                None => return Err(format!("configmap \"{}\" not found", r.name)),
            }
        }
        if let Some(r) = &source.secret_ref {
            match get_secret(client, &info.namespace, &r.name).await? {
                Some(secret) => {
                    for (k, v) in secret.data.unwrap_or_default() {
                        set(
                            &mut vars,
                            format!("{prefix}{k}"),
                            String::from_utf8_lossy(&v.0).into_owned(),
                        );
                    }
                }
                None if r.optional == Some(true) => {}
                None => return Err(format!("secret \"{}\" not found", r.name)),
            }
        }
    }
    for var in container.env.iter().flatten() {
        let value = match &var.value_from {
            None => {
                let map: BTreeMap<&str, &str> =
                    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                expand(var.value.as_deref().unwrap_or_default(), &map)
            }
            Some(from) => {
                if let Some(field) = &from.field_ref {
                    field_ref(info, field)
                        .ok_or_else(|| format!("unsupported fieldPath {}", field.field_path))?
                } else if let Some(resource) = &from.resource_field_ref {
                    resource_field(info, Some(&container.name), resource)?
                } else if let Some(r) = &from.config_map_key_ref {
                    let cm = get_config_map(client, &info.namespace, &r.name).await?;
                    match cm.and_then(|cm| cm.data.and_then(|mut d| d.remove(&r.key))) {
                        Some(v) => v,
                        None if r.optional == Some(true) => continue,
                        None => {
                            return Err(format!(
                                "couldn't find key {} in ConfigMap {}/{}",
                                r.key, info.namespace, r.name
                            ));
                        }
                    }
                } else if let Some(r) = &from.secret_key_ref {
                    let secret = get_secret(client, &info.namespace, &r.name).await?;
                    match secret.and_then(|s| s.data.and_then(|mut d| d.remove(&r.key))) {
                        Some(v) => String::from_utf8_lossy(&v.0).into_owned(),
                        None if r.optional == Some(true) => continue,
                        None => {
                            return Err(format!(
                                "couldn't find key {} in Secret {}/{}",
                                r.key, info.namespace, r.name
                            ));
                        }
                    }
                } else {
                    String::new()
                }
            }
        };
        set(&mut vars, var.name.clone(), value);
    }
    Ok(vars)
}

/// Expands `$(VAR)` references from `vars`; `$$` escapes a `$`, and an
/// unknown reference stays as written (Kubernetes' rules).
pub(crate) fn expand(input: &str, vars: &BTreeMap<&str, &str>) -> String {
    let mut out = String::with_capacity(input.len());
    let bytes = input.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' && i + 1 < bytes.len() {
            if bytes[i + 1] == b'$' {
                out.push('$');
                i += 2;
                continue;
            }
            if bytes[i + 1] == b'('
                && let Some(end) = input[i + 2..].find(')')
            {
                let name = &input[i + 2..i + 2 + end];
                if let Some(value) = vars.get(name) {
                    out.push_str(value);
                } else {
                    out.push_str(&input[i..i + 3 + end]);
                }
                i += 3 + end;
                continue;
            }
        }
        let c = input[i..].chars().next().unwrap_or('\u{FFFD}');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// The value of a downward-API field reference, or None if unsupported.
pub(crate) fn field_ref(info: &PodInfo, field: &ObjectFieldSelector) -> Option<String> {
    let meta = &info.pod.metadata;
    let spec = info.pod.spec.as_ref();
    let path = field.field_path.as_str();
    let lookup = |map: &Option<BTreeMap<String, String>>, prefix: &str| -> Option<String> {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
        Some(
            map.as_ref()
                .and_then(|m| m.get(key).cloned())
                .unwrap_or_default(),
        )
    };
    Some(match path {
        "metadata.name" => info.name.clone(),
        "metadata.namespace" => info.namespace.clone(),
        "metadata.uid" => info.uid.clone(),
        "metadata.labels" => format_map(meta.labels.as_ref()),
        "metadata.annotations" => format_map(meta.annotations.as_ref()),
        "spec.nodeName" => info.node.clone(),
        "spec.serviceAccountName" => spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_else(|| "default".into()),
        "status.podIP" | "status.podIPs" => info.ip.to_string(),
        "status.hostIP" | "status.hostIPs" => info.host_ip.to_string(),
        _ if path.starts_with("metadata.labels['") => lookup(&meta.labels, "metadata.labels['")?,
        _ if path.starts_with("metadata.annotations['") => {
            lookup(&meta.annotations, "metadata.annotations['")?
        }
        _ => return None,
    })
}

/// `key="value"` lines, sorted, as the downward API writes maps.
fn format_map(map: Option<&BTreeMap<String, String>>) -> String {
    map.map(|m| {
        m.iter()
            .map(|(k, v)| format!("{k}={}", serde_json::Value::String(v.clone())))
            .collect::<Vec<_>>()
            .join("\n")
    })
    .unwrap_or_default()
}

/// The value of a resource field reference: the container's request or
/// limit (limits default to the node's allocatable), divided by the divisor
/// and rounded up as the kubelet does.
pub(crate) fn resource_field(
    info: &PodInfo,
    container: Option<&str>,
    selector: &ResourceFieldSelector,
) -> Result<String, String> {
    let name = selector
        .container_name
        .as_deref()
        .or(container)
        .unwrap_or_default();
    let spec = info.pod.spec.as_ref();
    let resources = spec
        .and_then(|s| {
            s.containers
                .iter()
                .chain(s.init_containers.iter().flatten())
                .find(|c| c.name == name)
        })
        .and_then(|c| c.resources.clone())
        .unwrap_or_default();
    let (kind, resource) = selector
        .resource
        .split_once('.')
        .ok_or_else(|| format!("unsupported resource {}", selector.resource))?;
    let node_value = match resource {
        "cpu" => NODE_CPU,
        "memory" => NODE_MEMORY,
        "ephemeral-storage" => NODE_EPHEMERAL,
        _ => return Err(format!("unsupported resource {}", selector.resource)),
    };
    let map = if kind == "limits" {
        &resources.limits
    } else {
        &resources.requests
    };
    let value = map
        .as_ref()
        .and_then(|m| m.get(resource))
        .and_then(|q| parse_quantity(&q.0))
        .or_else(|| (kind == "limits").then_some(node_value))
        .or_else(|| {
            resources
                .limits
                .as_ref()
                .and_then(|m| m.get(resource))
                .and_then(|q| parse_quantity(&q.0))
        })
        .unwrap_or(if kind == "requests" && resource != "cpu" {
            0.0
        } else {
            node_value
        });
    let divisor = selector
        .divisor
        .as_ref()
        .and_then(|q| parse_quantity(&q.0))
        .filter(|d| *d > 0.0)
        .unwrap_or(1.0);
    let value = (value / divisor)
        .ceil()
        .max(if resource == "cpu" { 1.0 } else { 0.0 });
    Ok(format!("{}", value as u64))
}

/// A Kubernetes quantity as a number (`500m`, `2Gi`, `1e3`, `10`).
pub(crate) fn parse_quantity(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "Pi" => 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(number * factor)
}

pub(crate) async fn get_config_map(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<Option<ConfigMap>, String> {
    Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|e| format!("getting configmap {namespace}/{name}: {e}"))
}

pub(crate) async fn get_secret(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<Option<Secret>, String> {
    Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|e| format!("getting secret {namespace}/{name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_like_kubernetes() {
        let vars = BTreeMap::from([("A", "x"), ("B", "y")]);
        assert_eq!(expand("$(A)-$(B)", &vars), "x-y");
        assert_eq!(expand("$$(A)", &vars), "$(A)");
        assert_eq!(expand("$(C)", &vars), "$(C)");
        assert_eq!(expand("a$b$(A", &vars), "a$b$(A");
        assert_eq!(expand("é$(A)", &vars), "éx");
    }

    #[test]
    fn parses_quantities() {
        assert_eq!(parse_quantity("500m"), Some(0.5));
        assert_eq!(parse_quantity("2Gi"), Some(2.0 * 1024.0 * 1024.0 * 1024.0));
        assert_eq!(parse_quantity("1e3"), Some(1000.0));
        assert_eq!(parse_quantity("bogus"), None);
    }
}
