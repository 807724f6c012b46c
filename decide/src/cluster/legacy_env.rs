//! The RPC secret and configuration file running pods get from their environment. The Go
//! operator gives its own pods `GARAGE_RPC_SECRET` (from a Secret key) and
//! `GARAGE_CONFIG_FILE` (`/etc/garage/garage.toml`), and its releases let a user set these
//! in `spec.storage.env` too; this operator mounts the RPC secret and configuration as files
//! instead, and admission refuses both variables in the spec. A cluster taken over keeps its
//! pods running with them until they are replaced.
//!
//! Replacing such a pod from this operator's template changes what Garage runs with. For the
//! RPC secret that splits the cluster: a pod started with another secret cannot talk to the
//! ones still running. A configuration file the user pointed elsewhere may name other
//! directories. So while a pod of the cluster carries one whose safety is not established,
//! nothing is rendered, replaced or changed in the layout, and the cluster says why:
//!
//! - `GARAGE_RPC_SECRET` is settled once the reconciler finds its value (the literal, or the
//!   Secret key it reads, as it is now) byte for byte equal to the secret the operator mounts:
//!   the Go operator's own pods pass at once, since both read the same generated Secret. A
//!   user's override passes once `spec.network.rpcSecretRef` names a Secret holding the same
//!   secret (admission lets that change through with the annotation
//!   `garage.rajsingh.info/migrate-legacy-rpc-secret: "true"`, which proves nothing by
//!   itself). `GARAGE_RPC_SECRET_FILE` names a file inside the pod, which nothing outside can
//!   read: it is never settled here;
//! - `GARAGE_CONFIG_FILE` at the Go operator's own path is the file that operator rendered,
//!   which this operator's rollout replaces with its own rendering. Anywhere else it is
//!   settled by the annotation `garage.rajsingh.info/acknowledge-legacy-config-migration:
//!   "true"`, the user's statement that the file matches what this operator renders. It never
//!   settles the RPC secret.
//!
//! The admin and metrics tokens a pod gets from its environment are left out: a token that
//! differs from the one the operator holds only stops the operator from reading Garage, which
//! already stops every change.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::{
    ANNOTATION_ACKNOWLEDGE_LEGACY_CONFIG_MIGRATION, ANNOTATION_MIGRATE_LEGACY_RPC_SECRET,
};

use crate::desired::DesiredError;
use crate::desired::statefulset::CONTAINER;

/// The variable carrying the RPC secret itself.
pub const RPC_SECRET: &str = "GARAGE_RPC_SECRET";
/// The variable naming a file inside the pod that holds the RPC secret.
pub const RPC_SECRET_FILE: &str = "GARAGE_RPC_SECRET_FILE";
/// The variable naming Garage's configuration file.
pub const CONFIG_FILE: &str = "GARAGE_CONFIG_FILE";
/// Where the Go operator mounts the configuration it renders.
pub const GO_CONFIG_PATH: &str = "/etc/garage/garage.toml";

/// Where a carried variable's value comes from, as far as the reconciler can read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A literal `value` in the pod's spec (an absent one is the empty string).
    Literal,
    /// `valueFrom.secretKeyRef`: this Secret's key, in the pod's namespace.
    SecretKey {
        /// Secret name.
        name: String,
        /// Key.
        key: String,
    },
    /// Anything else (a ConfigMap, a field reference): not read here.
    Unreadable,
}

/// One variable one running pod carries whose safety must be established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carrier {
    /// The pod.
    pub pod: String,
    /// The variable.
    pub name: String,
    /// Where its value comes from.
    pub source: Source,
}

impl Carrier {
    /// Whether it carries the RPC secret.
    pub fn is_rpc(&self) -> bool {
        self.name == RPC_SECRET || self.name == RPC_SECRET_FILE
    }

    /// The RPC secret's own variable with a value the reconciler can compare.
    pub fn comparable(&self) -> bool {
        self.name == RPC_SECRET && self.source != Source::Unreadable
    }
}

/// Every such variable the Garage container of a pod in `pods` carries (pods being deleted
/// included: they run until they are gone), in pod order.
pub fn carriers(pods: &[Pod]) -> Vec<Carrier> {
    let mut out = Vec::new();
    for pod in pods {
        let containers = pod.spec.iter().flat_map(|s| &s.containers);
        for e in containers
            .filter(|c| c.name == CONTAINER)
            .flat_map(|c| c.env.iter().flatten())
        {
            let go_config = e.name == CONFIG_FILE && e.value.as_deref() == Some(GO_CONFIG_PATH);
            if ![RPC_SECRET, RPC_SECRET_FILE, CONFIG_FILE].contains(&e.name.as_str()) || go_config {
                continue;
            }
            let secret = e
                .value_from
                .as_ref()
                .and_then(|v| v.secret_key_ref.as_ref());
            let source = match (&e.value_from, secret) {
                (None, _) => Source::Literal,
                (Some(_), Some(r)) => Source::SecretKey {
                    name: r.name.clone(),
                    key: r.key.clone(),
                },
                (Some(_), None) => Source::Unreadable,
            };
            out.push(Carrier {
                pod: pod.name_any(),
                name: e.name.clone(),
                source,
            });
        }
    }
    out
}

/// Whether the reconciler has RPC bytes to compare this pass.
pub fn wants_proof(carriers: &[Carrier]) -> bool {
    carriers.iter().any(Carrier::comparable)
}

/// Whether `cluster` carries annotation `key` with the value `true`.
fn opted(cluster: &GarageCluster, key: &str) -> bool {
    cluster.annotations().get(key).map(String::as_str) == Some("true")
}

/// The refusal while one of `carriers` is not settled; `None` once every one is. `proven`
/// holds the `(pod, variable)` pairs whose value the reconciler found byte for byte equal to
/// the RPC secret the operator mounts.
pub fn refused(
    cluster: &GarageCluster,
    carriers: &[Carrier],
    proven: &BTreeSet<(String, String)>,
) -> Option<DesiredError> {
    let acknowledged = opted(cluster, ANNOTATION_ACKNOWLEDGE_LEGACY_CONFIG_MIGRATION);
    let unsettled: Vec<&Carrier> = carriers
        .iter()
        .filter(|c| {
            if c.is_rpc() {
                !(c.comparable() && proven.contains(&(c.pod.clone(), c.name.clone())))
            } else {
                !acknowledged
            }
        })
        .collect();
    let first = unsettled.first()?;
    let listed = unsettled
        .iter()
        .map(|c| format!("{} in pod {}", c.name, c.pod))
        .collect::<Vec<_>>()
        .join(", ");
    let todo = if first.is_rpc() {
        rpc_todo(cluster, first)
    } else {
        format!(
            "once the file it names matches what this operator renders, say so with the annotation {ANNOTATION_ACKNOWLEDGE_LEGACY_CONFIG_MIGRATION}: \"true\""
        )
    };
    Some(DesiredError::UnsupportedChange {
        field: "spec.storage.env",
        message: format!(
            "running pods get their RPC secret or configuration file from the environment ({listed}), and replacing them from this operator's template could change what Garage runs with, so nothing is rendered, replaced or changed in the layout until that is settled: {todo}"
        ),
    })
}

/// What the user does next about an RPC secret variable not proven equal.
fn rpc_todo(cluster: &GarageCluster, c: &Carrier) -> String {
    if !c.comparable() {
        return format!(
            "the secret {} gives cannot be read from outside the pod; have the Go operator run the pods with GARAGE_RPC_SECRET from a Secret key first",
            c.name
        );
    }
    let mounted = cluster
        .spec
        .network
        .as_ref()
        .and_then(|n| n.rpc_secret_ref.as_ref())
        .map_or_else(
            || {
                format!(
                    "the generated Secret {}",
                    crate::names::rpc_secret(&cluster.name_any())
                )
            },
            |r| format!("the Secret {} that spec.network.rpcSecretRef names", r.name),
        );
    let read = match &c.source {
        Source::SecretKey { name, key } => format!("the Secret key {name}/{key} the pods read"),
        _ => "the value in the pods' spec".into(),
    };
    format!(
        "{read} and {mounted} (which replaced pods mount) do not hold the same secret, or one cannot be read; make both hold the secret the pods run with (while spec.storage.env still sets GARAGE_RPC_SECRET, spec.network.rpcSecretRef may change to a Secret holding it, with the annotation {ANNOTATION_MIGRATE_LEGACY_RPC_SECRET}: \"true\")"
    )
}

#[cfg(test)]
mod tests;
