//! References and federation: SH-9 namespaced references, SH-10 cluster
//! references, SH-19 remote clusters.

use shared_types::common::ClusterReference;

use super::Problem;
use super::endpoints::check_admin_endpoint;
use super::names::{is_dns1123_label, is_dns1123_subdomain};

/// SH-9: name is a DNS-1123 subdomain, a set namespace a DNS-1123 label.
pub fn check_reference(field: &str, name: &str, namespace: Option<&str>) -> Option<Problem> {
    if !is_dns1123_subdomain(name) {
        return Some(Problem::new(
            format!("{field}.name"),
            format!("{field}.name {name:?} is invalid: use a lower-case DNS subdomain name"),
        ));
    }
    match namespace {
        Some(ns) if !ns.is_empty() && !is_dns1123_label(ns) => Some(Problem::new(
            format!("{field}.namespace"),
            format!("{field}.namespace {ns:?} is invalid: use a lower-case DNS label"),
        )),
        _ => None,
    }
}

/// The namespace a reference points into: its own `namespace`, or the holder's (`holder`)
/// when that is empty.
pub fn effective_namespace<'a>(namespace: Option<&'a str>, holder: &'a str) -> &'a str {
    namespace.filter(|ns| !ns.is_empty()).unwrap_or(holder)
}

/// The namespace under which a duplicate check files a reference: as [`effective_namespace`],
/// except that under the legacy flag an empty namespace stays empty, as the released validators
/// compared references (so `{name: k}` and `{name: k, namespace: <own>}` of an unchanged
/// object are not duplicates).
pub fn duplicate_namespace<'a>(
    namespace: Option<&'a str>,
    holder: &'a str,
    legacy: bool,
) -> &'a str {
    if legacy {
        namespace.unwrap_or_default()
    } else {
        effective_namespace(namespace, holder)
    }
}

/// True when an UPDATE points a cluster reference held in namespace `holder` at another
/// cluster: another name or another effective namespace (spelling out the holder's own
/// namespace is no change).
pub fn cluster_ref_changed(old: &ClusterReference, new: &ClusterReference, holder: &str) -> bool {
    old.name != new.name
        || effective_namespace(old.namespace.as_deref(), holder)
            != effective_namespace(new.namespace.as_deref(), holder)
}

/// SH-10: no kubeconfig indirection, then SH-9.
pub fn check_cluster_reference(field: &str, r: &ClusterReference) -> Option<Problem> {
    if r.kube_config_secret_ref.is_some() {
        return Some(Problem::new(
            format!("{field}.kubeConfigSecretRef"),
            "kubeConfigSecretRef is not supported; the operator can reference GarageClusters only through its configured Kubernetes client",
        ));
    }
    check_reference(field, &r.name, r.namespace.as_deref())
}

/// The parts of a remote cluster entry SH-19 reads (both API versions).
#[derive(Clone, Copy, Debug)]
pub struct RemoteView<'a> {
    /// `name`.
    pub name: &'a str,
    /// `zone`.
    pub zone: &'a str,
    /// Whether `defaultCapacity` is set.
    pub has_default_capacity: bool,
    /// `connection.adminApiEndpoint`.
    pub endpoint: &'a str,
}

/// SH-19 over `spec.remoteClusters`; `legacy` relaxes the capacity and
/// endpoint checks for an unchanged released spec.
pub fn check_remote_clusters(remotes: &[RemoteView<'_>], legacy: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    for (i, r) in remotes.iter().enumerate() {
        let f = format!("spec.remoteClusters[{i}]");
        if !legacy && r.has_default_capacity {
            out.push(Problem::new(
                format!("{f}.defaultCapacity"),
                "is not supported; remote role capacity is owned by the source cluster layout; remove it",
            ));
        }
        let name = r.name.trim();
        if name.is_empty() {
            out.push(Problem::new(
                format!("{f}.name"),
                "must not be empty or whitespace",
            ));
        } else if let Some(j) = remotes[..i].iter().position(|o| o.name.trim() == name) {
            out.push(Problem::new(
                format!("{f}.name"),
                format!("{name:?} duplicates spec.remoteClusters[{j}]; remote names are cleanup ownership tags and must be unique"),
            ));
        }
        let zone = r.zone.trim();
        if zone.is_empty() {
            out.push(Problem::new(
                format!("{f}.zone"),
                "must not be empty or whitespace",
            ));
        } else if let Some(j) = remotes[..i].iter().position(|o| o.zone.trim() == zone) {
            out.push(Problem::new(
                format!("{f}.zone"),
                format!("{zone:?} duplicates spec.remoteClusters[{j}]; each physical Garage site must have a unique zone"),
            ));
        }
        if !legacy
            && let Some(p) =
                check_admin_endpoint(&format!("{f}.connection.adminApiEndpoint"), r.endpoint)
        {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn view<'a>(name: &'a str, zone: &'a str) -> RemoteView<'a> {
        RemoteView {
            name,
            zone,
            has_default_capacity: false,
            endpoint: "http://r:3903",
        }
    }

    #[test]
    fn sh9_sh10_references() {
        assert!(check_reference("f", "Bad_Cluster", None).is_some());
        assert!(check_reference("f", "ok", Some("Bad_Namespace")).is_some());
        assert!(check_reference("f", "ok", Some("ns")).is_none());
        let r = ClusterReference {
            name: "a".into(),
            kube_config_secret_ref: Some(Default::default()),
            namespace: None,
        };
        assert!(
            check_cluster_reference("f", &r)
                .is_some_and(|p| p.message.contains("kubeConfigSecretRef"))
        );
    }

    #[test]
    fn sh19_remote_clusters() {
        assert!(check_remote_clusters(&[view("a", "z1"), view("b", "z2")], false).is_empty());
        assert!(
            check_remote_clusters(&[view("a", "z1"), view(" a ", "z2")], false)[0]
                .message
                .contains("unique")
        );
        assert!(
            check_remote_clusters(&[view("a", "z1"), view("b", "z1")], false)[0]
                .message
                .contains("unique zone")
        );
        assert_eq!(check_remote_clusters(&[view(" ", "z")], false).len(), 1);
        let mut cap = view("a", "z");
        cap.has_default_capacity = true;
        cap.endpoint = "garage:3903";
        assert_eq!(check_remote_clusters(&[cap], false).len(), 2);
        assert!(check_remote_clusters(&[cap], true).is_empty());
    }
}
