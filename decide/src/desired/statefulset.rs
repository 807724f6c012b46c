//! The single-replica StatefulSet of a GarageNode with its claim templates: `metadata`, then
//! `data` or one `data-<i>` per data path. A gateway's only claim is its metadata; its data
//! directories are emptyDirs.
//!
//! Default-group storage runs on PVCs, so no `.garage-volume-id` marker volume is added: the
//! marker guards HostPath mounts of node-local pools only.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    StatefulSet, StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetSpec,
    StatefulSetUpdateStrategy,
};
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, Container, ContainerPort, DownwardAPIVolumeFile,
    DownwardAPIVolumeSource, EmptyDirVolumeSource, EnvFromSource, EnvVar, EnvVarSource,
    HTTPGetAction, KeyToPath, ObjectFieldSelector, PersistentVolumeClaim,
    PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, Probe,
    SecretVolumeSource, TCPSocketAction, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use shared_types::common::VolumeType;
use shared_types::garage_cluster::common::PvcRetention;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::{GarageNode, NodeVolumeConfig};
use shared_types::keys::{annotation, label};

use super::config::{
    ADMIN_TOKEN_DIR, ADMIN_TOKEN_KEY, CONFIG_DIR, CONFIG_KEY, ConfigRevision, DATA_DIR,
    METADATA_DIR, METRICS_TOKEN_DIR, METRICS_TOKEN_KEY, RPC_SECRET_DIR, RPC_SECRET_KEY,
};
use super::pod_security::{self, DiskOwnership};
use super::secrets::{SECRET_FILE_MODE, SecretSource};
use super::tier_defaults::TierDefaults;
use super::{
    DEFAULT_VOLUME_SIZE, DesiredError, Settings, controller_ref, data_dirs, labels, rendered_hash,
};
use crate::names;

/// Name of the Garage container.
pub const CONTAINER: &str = "garage";
/// Environment variable names the operator owns; user `env` may not set them.
pub const RESERVED_ENV: &[&str] = &[
    "GARAGE_CONFIG_FILE",
    "GARAGE_RPC_SECRET",
    "GARAGE_RPC_SECRET_FILE",
    "GARAGE_ADMIN_TOKEN",
    "GARAGE_ADMIN_TOKEN_FILE",
    "GARAGE_METRICS_TOKEN",
    "GARAGE_METRICS_TOKEN_FILE",
];

/// Everything a GarageNode's StatefulSet is rendered from.
#[derive(Debug, Clone, Copy)]
pub struct NodeInputs<'a> {
    /// Parent cluster.
    pub cluster: &'a GarageCluster,
    /// Its effective settings.
    pub settings: &'a Settings,
    /// The node.
    pub node: &'a GarageNode,
    /// The config revision to mount.
    pub config: &'a ConfigRevision,
    /// RPC secret to mount.
    pub rpc_secret: &'a SecretSource,
    /// Admin token to mount.
    pub admin_token: &'a SecretSource,
    /// The identity was acknowledged lost and the parent recorded it: nothing may run it
    /// again, so the set is kept at zero replicas.
    pub fenced: bool,
}

/// One claim the StatefulSet of a node generates from its templates.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedClaim {
    /// Claim name (`<volume>-<node>-0`).
    pub name: String,
    /// The VolumeAttributesClass its volume asks for.
    pub class: Option<String>,
    /// The size its volume asks for, which the claim template requests.
    pub size: Quantity,
    /// It holds Garage data, not metadata: its size counts toward the layout capacity.
    pub data: bool,
}

/// The claims the StatefulSet of `node` generates from its templates (volumes that are
/// neither an emptyDir nor an existing claim), in mount order: `metadata`, then `data` or each
/// data path's `data-<i>`.
pub fn managed_claims(node: &GarageNode) -> Vec<ManagedClaim> {
    let name = node.metadata.name.clone().unwrap_or_default();
    storage_volumes(node)
        .into_iter()
        .filter(|d| {
            d.volume.type_ != Some(VolumeType::EmptyDir)
                && d.volume
                    .existing_claim
                    .as_ref()
                    .is_none_or(String::is_empty)
        })
        .map(|d| ManagedClaim {
            name: format!("{}-{name}-0", d.name),
            data: d.name != "metadata",
            size: claim_size(&d.volume),
            class: d.volume.volume_attributes_class_name,
        })
        .collect()
}

/// What the claim template of `v` requests.
fn claim_size(v: &NodeVolumeConfig) -> Quantity {
    v.size
        .clone()
        .unwrap_or_else(|| Quantity(DEFAULT_VOLUME_SIZE.into()))
}

/// Size of a gateway's metadata claim when its node sets none.
pub const GATEWAY_METADATA_SIZE: &str = "1Gi";
/// File name Garage keeps in each data directory to recognise it.
const GARAGE_MARKER: &str = "garage-marker";

/// A gateway's data directories: one emptyDir per directory the shared garage.toml lists,
/// each with Garage's marker file projected into it from the pod annotation
/// `gateway-data-marker` (empty). Garage records a data directory's marker in its metadata and
/// refuses to start when the file is missing; a gateway keeps its metadata across restarts
/// while its scratch data is new each time, so the file must be there from the start, with the
/// same (empty) content every time.
fn gateway_data(s: &Settings) -> (Vec<Volume>, Vec<VolumeMount>) {
    let paths: Vec<String> = match &s.data_dirs {
        Some(dirs) => dirs.iter().map(|d| d.path.clone()).collect(),
        None => vec![DATA_DIR.to_owned()],
    };
    let mut volumes = vec![Volume {
        name: "gateway-marker".into(),
        downward_api: Some(DownwardAPIVolumeSource {
            items: Some(vec![DownwardAPIVolumeFile {
                path: GARAGE_MARKER.into(),
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!(
                        "metadata.annotations['{}']",
                        annotation::ANNOTATION_GATEWAY_DATA_MARKER
                    ),
                    api_version: None,
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }];
    let mut mounts = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let name = if s.data_dirs.is_some() {
            data_dirs::volume_name(i)
        } else {
            "data".to_owned()
        };
        volumes.push(Volume {
            name: name.clone(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        });
        mounts.push(mount(&name, path, false));
        mounts.push(VolumeMount {
            name: "gateway-marker".into(),
            mount_path: format!("{path}/{GARAGE_MARKER}"),
            sub_path: Some(GARAGE_MARKER.into()),
            read_only: Some(true),
            ..Default::default()
        });
    }
    (volumes, mounts)
}

/// One storage volume of a node's pod.
struct Disk {
    /// Pod volume name, which is also the claim template's.
    name: String,
    /// What backs it.
    volume: NodeVolumeConfig,
    /// Where Garage finds it.
    mount_path: String,
}

/// The node's storage volumes in mount order: `metadata` (a default claim when unset), then
/// `data`, or one `data-<i>` per data path mounted at its path. A node with neither gets a
/// default `data` here; [`statefulset`] refuses it.
fn storage_volumes(node: &GarageNode) -> Vec<Disk> {
    let storage = node.spec.storage.as_ref();
    let mut metadata = storage.and_then(|s| s.metadata.clone()).unwrap_or_default();
    let gateway = node.spec.gateway == Some(true);
    if gateway && metadata.size.is_none() {
        metadata.size = Some(Quantity(GATEWAY_METADATA_SIZE.into()));
    }
    let mut disks = vec![Disk {
        name: "metadata".into(),
        volume: metadata,
        mount_path: METADATA_DIR.into(),
    }];
    // A gateway's data directories are scratch space: see [`gateway_data`].
    if gateway {
        return disks;
    }
    match storage
        .and_then(|s| s.data_paths.as_deref())
        .filter(|p| !p.is_empty())
    {
        Some(paths) => disks.extend(paths.iter().enumerate().map(|(i, v)| Disk {
            name: data_dirs::volume_name(i),
            volume: v.clone(),
            mount_path: data_dirs::mount_path(v, i),
        })),
        None => disks.push(Disk {
            name: "data".into(),
            volume: storage.and_then(|s| s.data.clone()).unwrap_or_default(),
            mount_path: DATA_DIR.into(),
        }),
    }
    disks
}

/// The StatefulSet of a storage GarageNode.
pub fn statefulset(i: NodeInputs<'_>) -> Result<StatefulSet, DesiredError> {
    let s = i.settings;
    let node_name = i
        .node
        .metadata
        .name
        .clone()
        .ok_or(DesiredError::MissingMetadata("name"))?;
    let node_uid = i
        .node
        .metadata
        .uid
        .clone()
        .ok_or(DesiredError::MissingMetadata("uid"))?;
    let storage = i.node.spec.storage.as_ref();
    let gateway = i.node.spec.gateway == Some(true);
    if !gateway
        && storage
            .is_none_or(|st| st.data.is_none() && st.data_paths.as_ref().is_none_or(Vec::is_empty))
    {
        return Err(DesiredError::Invalid {
            field: "spec.storage.data",
            message: "a storage node needs a data volume or dataPaths".into(),
        });
    }
    let disks = storage_volumes(i.node);
    let pod_labels = labels::node_pod_labels(&s.name, i.node);
    let (mut volumes, claims) = volumes_and_claims(i, &disks, &pod_labels, &node_uid);
    let mut mounts = vec![
        mount("config", CONFIG_DIR, true),
        mount("rpc-secret", RPC_SECRET_DIR, true),
        mount("admin-token", ADMIN_TOKEN_DIR, true),
    ];
    // Writable even for a read-only data path: Garage keeps a marker file in each directory.
    mounts.extend(disks.iter().map(|d| mount(&d.name, &d.mount_path, false)));
    if gateway {
        let (v, m) = gateway_data(s);
        volumes.extend(v);
        mounts.extend(m);
    }
    let pod_spec = pod_spec(i, DiskOwnership::Volumes, mounts, volumes);
    let retention = TierDefaults::of(i.cluster, i.node).pvc_retention_policy;
    let template_meta = template_metadata(i, &pod_spec, &pod_labels);
    let spec = StatefulSetSpec {
        replicas: Some(if i.fenced { 0 } else { 1 }),
        service_name: Some(names::headless_service(&s.name)),
        pod_management_policy: Some("Parallel".into()),
        update_strategy: Some(StatefulSetUpdateStrategy {
            type_: Some("OnDelete".into()),
            rolling_update: None,
        }),
        persistent_volume_claim_retention_policy: Some(claim_retention(retention, i.fenced)),
        selector: LabelSelector {
            match_labels: Some(labels::node_selector(&node_name)),
            match_expressions: None,
        },
        template: PodTemplateSpec {
            metadata: Some(template_meta),
            spec: Some(pod_spec),
        },
        volume_claim_templates: (!claims.is_empty()).then_some(claims),
        ..Default::default()
    };
    // Only what an update may change goes into the hash: claim templates are immutable.
    let hash = rendered_hash(&(
        &spec.template,
        spec.replicas,
        &spec.update_strategy,
        &spec.persistent_volume_claim_retention_policy,
    ));
    Ok(StatefulSet {
        metadata: ObjectMeta {
            name: Some(node_name.clone()),
            namespace: Some(s.namespace.clone()),
            labels: Some(pod_labels),
            annotations: Some(BTreeMap::from([(
                annotation::ANNOTATION_RENDERED_HASH.to_owned(),
                hash,
            )])),
            owner_references: Some(vec![controller_ref(i.node)?]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    })
}

/// The pod's volumes (config, secrets, and the disks that are not claim templates) and the
/// claim templates of the disks that are.
fn volumes_and_claims(
    i: NodeInputs<'_>,
    disks: &[Disk],
    pod_labels: &BTreeMap<String, String>,
    node_uid: &str,
) -> (Vec<Volume>, Vec<PersistentVolumeClaim>) {
    let mut claims = Vec::new();
    let mut volumes = vec![
        Volume {
            name: "config".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: i.config.name.clone(),
                items: Some(vec![KeyToPath {
                    key: CONFIG_KEY.into(),
                    path: CONFIG_KEY.into(),
                    mode: None,
                }]),
                ..Default::default()
            }),
            ..Default::default()
        },
        secret_volume("rpc-secret", i.rpc_secret, RPC_SECRET_KEY),
        secret_volume("admin-token", i.admin_token, ADMIN_TOKEN_KEY),
    ];
    for Disk { name, volume, .. } in disks {
        let name = name.as_str();
        if volume.type_ == Some(VolumeType::EmptyDir) {
            volumes.push(Volume {
                name: name.into(),
                empty_dir: Some(EmptyDirVolumeSource {
                    size_limit: volume.size.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            });
        } else if let Some(claim) = volume.existing_claim.as_ref().filter(|c| !c.is_empty()) {
            // A claim the user made: mounted as it is, never templated, resized or deleted.
            volumes.push(Volume {
                name: name.into(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim.clone(),
                    read_only: None,
                }),
                ..Default::default()
            });
        } else {
            claims.push(claim_template(name, volume, pod_labels, node_uid));
        }
    }
    (volumes, claims)
}

/// The pod template's labels and annotations: the user's (operator keys removed), then the
/// operator's own, with the hashes that tell a rollout the pod must change.
fn template_metadata(
    i: NodeInputs<'_>,
    pod_spec: &PodSpec,
    pod_labels: &BTreeMap<String, String>,
) -> ObjectMeta {
    let t = TierDefaults::of(i.cluster, i.node);
    let user_labels = user_pod_labels(i.node.spec.pod_labels.as_ref().or(t.pod_labels));
    let user_annotations = i
        .node
        .spec
        .pod_annotations
        .clone()
        .or_else(|| t.pod_annotations.cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| !k.starts_with("garage.rajsingh.info/"))
        .collect::<BTreeMap<_, _>>();
    let pod_spec_hash = rendered_hash(&(pod_spec, &user_annotations, &user_labels));
    let mut template_labels = user_labels;
    template_labels.extend(pod_labels.clone());
    let mut template_annotations = user_annotations;
    template_annotations.insert(annotation::ANNOTATION_POD_SPEC_HASH.into(), pod_spec_hash);
    if i.node.spec.gateway == Some(true) {
        // The content of the marker file each data directory gets (see `gateway_data`).
        template_annotations.insert(
            annotation::ANNOTATION_GATEWAY_DATA_MARKER.into(),
            String::new(),
        );
    }
    template_annotations.insert(
        annotation::ANNOTATION_CONFIG_HASH.into(),
        i.config.revision[..16].to_owned(),
    );
    ObjectMeta {
        labels: Some(template_labels),
        annotations: Some(template_annotations),
        ..Default::default()
    }
}

/// What happens to the member's claims when its StatefulSet is deleted or scaled down.
fn claim_retention(
    retention: Option<&shared_types::garage_cluster::common::PvcRetentionPolicy>,
    fenced: bool,
) -> StatefulSetPersistentVolumeClaimRetentionPolicy {
    let retention_str = |r: Option<PvcRetention>| match r {
        Some(PvcRetention::Delete) => "Delete".to_owned(),
        _ => "Retain".to_owned(),
    };
    StatefulSetPersistentVolumeClaimRetentionPolicy {
        when_deleted: Some(retention_str(retention.and_then(|r| r.when_deleted))),
        // A fence scales the StatefulSet to zero; with `Delete` the StatefulSet
        // controller would delete the member's claims then, before the proof that
        // nothing lives only on them, and even if the machine comes back.
        when_scaled: Some(if fenced {
            retention_str(None)
        } else {
            retention_str(retention.and_then(|r| r.when_scaled))
        }),
    }
}

pub(super) fn pod_spec(
    i: NodeInputs<'_>,
    disks: DiskOwnership,
    mut mounts: Vec<VolumeMount>,
    mut volumes: Vec<Volume>,
) -> PodSpec {
    let s = i.settings;
    // Every Garage pod, StatefulSet or pool DaemonSet, reads the metrics token the same way.
    if let Some(token) = super::credentials::metrics_token_source(i.cluster, s) {
        volumes.push(secret_volume("metrics-token", &token, METRICS_TOKEN_KEY));
        mounts.push(mount("metrics-token", METRICS_TOKEN_DIR, true));
    }
    let t = TierDefaults::of(i.cluster, i.node);
    let n = &i.node.spec;
    let security = pod_security::contexts(
        disks,
        n.security_context.as_ref().or(t.security_context),
        n.container_security_context
            .as_ref()
            .or(t.container_security_context),
    );
    let mut env = env(i);
    // Before the user's entries, and only when they do not set it themselves.
    if let Some(e) = pod_security::env(&security).filter(|e| env.iter().all(|x| x.name != e.name)) {
        env.insert(1, e);
    }
    let mut ports = vec![
        port("rpc", s.rpc_port),
        port("s3", s.s3_port),
        port("admin", s.admin_port),
    ];
    if let Some(web) = s.web_port {
        ports.push(port("web", web));
    }
    if let Some(k2v) = s.k2v_port {
        ports.push(port("k2v", k2v));
    }
    let container = Container {
        name: CONTAINER.into(),
        image: Some(n.image.clone().unwrap_or_else(|| s.image.clone())),
        image_pull_policy: i.cluster.spec.image_pull_policy.clone(),
        command: Some(vec!["/garage".into(), "server".into()]),
        ports: Some(ports),
        env: Some(env),
        env_from: env_from(n.env_from.as_ref().or(t.env_from)),
        volume_mounts: Some(mounts),
        resources: n.resources.clone().or_else(|| t.resources.cloned()),
        security_context: Some(security.container),
        // Ready only while Garage itself says it can serve: a quorum for every partition as
        // this node sees it. A process that has just started, or has not reached its peers
        // again, would fail the requests sent to it.
        readiness_probe: Some(readiness(i, &t)),
        startup_probe: gateway_startup(i),
        ..Default::default()
    };
    PodSpec {
        containers: vec![container],
        volumes: Some(volumes),
        node_selector: n.node_selector.clone().or_else(|| t.node_selector.cloned()),
        tolerations: n.tolerations.clone().or_else(|| t.tolerations.cloned()),
        affinity: n.affinity.clone().or_else(|| t.affinity.cloned()),
        priority_class_name: n
            .priority_class_name
            .clone()
            .or_else(|| t.priority_class_name.cloned()),
        topology_spread_constraints: n
            .topology_spread_constraints
            .clone()
            .or_else(|| t.topology_spread_constraints.cloned()),
        security_context: Some(security.pod),
        // Garage reads the Kubernetes API only for its own Kubernetes discovery, which
        // gateways run without: no token is mounted into pods that do not run it.
        automount_service_account_token: Some(
            super::config::kubernetes_discovery(i.cluster)
                && !super::node_config::gateway_without_discovery(i.cluster, i.node),
        ),
        service_account_name: n
            .service_account_name
            .clone()
            .or_else(|| i.cluster.spec.service_account_name.clone()),
        image_pull_secrets: n
            .image_pull_secrets
            .clone()
            .or_else(|| i.cluster.spec.image_pull_secrets.clone()),
        ..Default::default()
    }
}

/// The readiness probe: a storage member is Ready only while Garage itself says it can serve
/// (a quorum for every partition as this node sees it); a gateway while its S3 port accepts
/// connections, unless the gateway tier sets its own probe. A gateway stores nothing, and
/// tying it to the cluster's quorum would cut off reads that could still succeed.
fn readiness(i: NodeInputs<'_>, t: &TierDefaults<'_>) -> Probe {
    let s = i.settings;
    if i.node.spec.gateway == Some(true) {
        return t.readiness_probe.cloned().unwrap_or_else(|| Probe {
            tcp_socket: Some(TCPSocketAction {
                port: IntOrString::Int(i32::from(s.s3_port)),
                host: None,
            }),
            period_seconds: Some(5),
            timeout_seconds: Some(3),
            failure_threshold: Some(2),
            ..Default::default()
        });
    }
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some("/health".into()),
            port: IntOrString::Int(i32::from(s.admin_port)),
            ..Default::default()
        }),
        period_seconds: Some(5),
        timeout_seconds: Some(3),
        failure_threshold: Some(2),
        ..Default::default()
    }
}

/// A gateway's startup probe: Garage's `/health`, which answers 200 only once the process
/// knows a layout whose partitions it can reach. A gateway that starts (or lost its metadata
/// and starts as a new identity) has no peer yet and would fail every request; its S3 port
/// opens long before that. The check runs until it first passes only, so a later loss of
/// quorum does not take a running gateway out of its Service. Up to ten minutes are allowed
/// before the kubelet restarts it.
fn gateway_startup(i: NodeInputs<'_>) -> Option<Probe> {
    (i.node.spec.gateway == Some(true)).then(|| Probe {
        http_get: Some(HTTPGetAction {
            path: Some("/health".into()),
            port: IntOrString::Int(i32::from(i.settings.admin_port)),
            ..Default::default()
        }),
        period_seconds: Some(2),
        timeout_seconds: Some(2),
        failure_threshold: Some(300),
        ..Default::default()
    })
}

fn env(i: NodeInputs<'_>) -> Vec<EnvVar> {
    let mut env = vec![EnvVar {
        name: "GARAGE_NODE_HOST".into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: "status.podIP".into(),
                api_version: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }];
    let logging = i
        .node
        .spec
        .logging
        .as_ref()
        .or(i.cluster.spec.logging.as_ref());
    if let Some(level) = logging.and_then(|l| l.level.as_ref()) {
        env.push(plain("RUST_LOG", level));
    }
    if logging.and_then(|l| l.syslog) == Some(true) {
        env.push(plain("GARAGE_LOG_TO_SYSLOG", "1"));
    }
    if logging.and_then(|l| l.journald) == Some(true) {
        env.push(plain("GARAGE_LOG_TO_JOURNALD", "1"));
    }
    // Node entries win over cluster entries of the same name.
    let cluster_env = TierDefaults::of(i.cluster, i.node)
        .env
        .cloned()
        .unwrap_or_default();
    let node_env = i.node.spec.env.clone().unwrap_or_default();
    let mut merged: Vec<EnvVar> = cluster_env
        .into_iter()
        .filter(|e| !node_env.iter().any(|n| n.name == e.name))
        .collect();
    merged.extend(node_env);
    env.extend(
        merged
            .into_iter()
            .filter(|e| !RESERVED_ENV.contains(&e.name.as_str())),
    );
    env.push(plain(
        "GARAGE_CONFIG_FILE",
        &format!("{CONFIG_DIR}/{CONFIG_KEY}"),
    ));
    env
}

/// envFrom sources whose prefix cannot produce a reserved name (an empty prefix, or one that
/// is a prefix of a reserved name, could inject the RPC secret or admin token).
fn env_from(sources: Option<&Vec<EnvFromSource>>) -> Option<Vec<EnvFromSource>> {
    let kept: Vec<EnvFromSource> = sources?
        .iter()
        .filter(|s| {
            let prefix = s.prefix.as_deref().unwrap_or_default();
            !prefix.is_empty() && !RESERVED_ENV.iter().any(|r| r.starts_with(prefix))
        })
        .cloned()
        .collect();
    (!kept.is_empty()).then_some(kept)
}

fn user_pod_labels(user: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    user.cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| {
            !label::RESERVED_POD_LABELS.contains(&k.as_str())
                && !k.starts_with("garage.rajsingh.info/")
        })
        .collect()
}

fn claim_template(
    name: &str,
    v: &NodeVolumeConfig,
    pod_labels: &BTreeMap<String, String>,
    node_uid: &str,
) -> PersistentVolumeClaim {
    let mut claim_labels = v.labels.clone().unwrap_or_default();
    claim_labels.extend(pod_labels.clone());
    let mut claim_annotations = v.annotations.clone().unwrap_or_default();
    claim_annotations.insert(
        annotation::ANNOTATION_GARAGE_NODE_UID.into(),
        node_uid.into(),
    );
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(claim_labels),
            annotations: Some(claim_annotations),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(
                v.access_modes
                    .clone()
                    .unwrap_or_else(|| vec!["ReadWriteOnce".into()]),
            ),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_owned(), claim_size(v))])),
                limits: None,
            }),
            storage_class_name: v.storage_class_name.clone(),
            volume_attributes_class_name: v.volume_attributes_class_name.clone(),
            selector: v.selector.clone(),
            ..Default::default()
        }),
        status: None,
    }
}

pub(super) fn secret_volume(name: &str, source: &SecretSource, file: &str) -> Volume {
    Volume {
        name: name.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(source.name.clone()),
            items: Some(vec![KeyToPath {
                key: source.key.clone(),
                path: file.into(),
                mode: Some(SECRET_FILE_MODE),
            }]),
            default_mode: Some(SECRET_FILE_MODE),
            optional: Some(false),
        }),
        ..Default::default()
    }
}

pub(super) fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: read_only.then_some(true),
        ..Default::default()
    }
}

fn port(name: &str, number: u16) -> ContainerPort {
    ContainerPort {
        name: Some(name.into()),
        container_port: i32::from(number),
        protocol: Some("TCP".into()),
        ..Default::default()
    }
}

fn plain(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        value_from: None,
    }
}

#[cfg(test)]
mod tests;
