//! What a node-local pool is made of in Kubernetes: its DaemonSet, the keys it writes on
//! Kubernetes Nodes, and the GarageNode of each member. Pure builders; the cluster controller
//! decides when each is written.
//!
//! The DaemonSet never schedules from the user's selector. Its pods select only the private
//! activation label the operator puts on chosen Nodes, and every pod starts behind the
//! activation scheduling gate, so no pod reaches a disk before the operator has checked that
//! Node. Every `Directory` HostPath also mounts its `.garage-volume-id` marker as a `File`
//! HostPath: when the real disk is not mounted the marker is missing and the kubelet refuses
//! to start the pod, so Garage never writes to the Node's root filesystem.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategy};
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, HostPathVolumeSource, KeyToPath, PodSchedulingGate, PodSpec,
    PodTemplateSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use shared_types::common::ClusterReference;
use shared_types::garage_cluster::v1beta2::{
    GarageCluster, HostPathType, HostPathVolume, NodeLocalPoolSpec, PodTemplate,
};
use shared_types::garage_node::{GarageNode, GarageNodeSpec, NodeBacking};
use shared_types::keys::generated::{SUFFIX_NODE_ID, activation_label, node_id_annotation};
use shared_types::keys::scheduling_gate::SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION;
use shared_types::keys::{annotation, label};

use super::config::{
    ADMIN_TOKEN_DIR, ADMIN_TOKEN_KEY, CONFIG_DIR, CONFIG_KEY, ConfigRevision, METADATA_DIR,
    RPC_SECRET_DIR, RPC_SECRET_KEY,
};
use super::pod_security::DiskOwnership;
use super::secrets::SecretSource;
use super::statefulset;
use super::{DesiredError, Settings, controller_ref, data_dirs, disk_layout, rendered_hash};
use crate::names;

/// Where the `.garage-volume-id` markers are mounted, one file per HostPath volume.
pub const MARKER_DIR: &str = "/var/run/garage-volume-markers";
/// The marker file every `Directory` HostPath must contain.
pub const MARKER_FILE: &str = ".garage-volume-id";
/// The value of the activation label on a Node whose pool pod may run there.
pub const ACTIVE: &str = "true";

/// The DaemonSet of pool `pool` of cluster `cluster`.
pub fn daemonset_name(cluster: &str, pool: &str) -> String {
    names::bounded(&format!("{cluster}-storage-{pool}"), 63)
}

/// The GarageNode of the member of `pool` on Kubernetes Node `node` (bounded to 61
/// characters, a digest keeping long or non-DNS Node names apart).
pub fn garage_node_name(cluster: &str, pool: &str, node: &str) -> String {
    names::bounded(&format!("{cluster}-node-local-{pool}-{node}"), 61)
}

/// A Kubernetes Node name as a label value (63 characters, DNS-safe); the exact name goes in
/// the annotation of the same key.
pub fn node_label_value(node: &str) -> String {
    names::bounded(node, 63)
}

/// The first 16 hex digits of the SHA-256 of `x`: the cluster and pool parts of Node keys.
pub(crate) fn digest16(x: &str) -> String {
    names::sha256_hex(x.as_bytes())[..16].to_owned()
}

/// The activation label key of `pool`: keyed by the cluster's namespace, name and UID, so a
/// re-created cluster of the same name never inherits a scheduling authorisation.
pub fn activation_key(s: &Settings, pool: &str) -> String {
    activation_label(
        &digest16(&format!("{}/{}/{}", s.namespace, s.name, s.uid)),
        &digest16(pool),
    )
}

/// The Node annotation recording the Garage ID committed for `pool` on that Node's disks:
/// keyed by namespace and name only, so it outlives a re-created cluster of the same name.
pub fn node_id_key(s: &Settings, pool: &str) -> String {
    node_id_annotation(
        &digest16(&format!("{}/{}", s.namespace, s.name)),
        &digest16(pool),
    )
}

/// True when `key` is an activation label of any pool of the cluster `namespace/name` with
/// `uid`, or an identity record or HostPath claim of any pool of `namespace/name`: what
/// whole-store teardown removes from Nodes.
pub fn is_binding_key(namespace: &str, name: &str, uid: &str, key: &str) -> bool {
    let activation = activation_label(&digest16(&format!("{namespace}/{name}/{uid}")), "");
    let record = node_id_annotation(&digest16(&format!("{namespace}/{name}")), "");
    let record_prefix = record.strip_suffix(SUFFIX_NODE_ID).unwrap_or(&record);
    (key.starts_with(&activation) && !key.ends_with(SUFFIX_NODE_ID))
        || (key.starts_with(record_prefix) && key.ends_with(SUFFIX_NODE_ID))
        || super::hostpath_claim::is_claim_of(namespace, name, key)
}

/// Labels of everything that belongs to `pool` (DaemonSet selector, pods, GarageNodes).
pub fn pool_labels(cluster: &str, pool: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            label::LABEL_APP_NAME.into(),
            label::value::APP_NAME_GARAGE.into(),
        ),
        (label::LABEL_APP_INSTANCE.into(), cluster.into()),
        (
            label::LABEL_APP_MANAGED_BY.into(),
            label::value::MANAGED_BY_OPERATOR.into(),
        ),
        (label::LABEL_CLUSTER.into(), cluster.into()),
        (label::LABEL_TIER.into(), label::value::TIER_STORAGE.into()),
        (
            label::LABEL_STORAGE_GROUP.into(),
            label::value::STORAGE_GROUP_NODE_LOCAL.into(),
        ),
        (label::LABEL_NODE_LOCAL_POOL.into(), pool.into()),
    ])
}

/// Everything a pool DaemonSet is built from.
#[derive(Clone, Copy)]
pub struct PoolInputs<'a> {
    /// The cluster.
    pub cluster: &'a GarageCluster,
    /// Its settings.
    pub settings: &'a Settings,
    /// The pool.
    pub pool: &'a NodeLocalPoolSpec,
    /// The config revision its pods mount.
    pub config: &'a ConfigRevision,
    /// RPC secret.
    pub rpc_secret: &'a SecretSource,
    /// Admin token.
    pub admin_token: &'a SecretSource,
}

/// The pool's DaemonSet.
pub fn daemonset(i: PoolInputs<'_>) -> Result<DaemonSet, DesiredError> {
    let s = i.settings;
    let pool = &i.pool.name;
    let name = daemonset_name(&s.name, pool);
    let layout = disk_layout::of_pool(i.pool);
    let (volumes, mounts) = volumes_and_mounts(&i, &layout);
    // The shared pod builder reads its per-member settings from a GarageNode; a pool's come
    // from its pod template, so they are handed over as one.
    let template = i.pool.pod_template.clone().unwrap_or_default();
    let stand_in = stand_in_node(s, &name, &template);
    let mut pod = statefulset::pod_spec(
        statefulset::NodeInputs {
            cluster: i.cluster,
            settings: s,
            node: &stand_in,
            config: i.config,
            rpc_secret: i.rpc_secret,
            admin_token: i.admin_token,
            fenced: false,
        },
        DiskOwnership::HostPaths,
        mounts,
        volumes,
    );
    let key = activation_key(s, pool);
    pod.node_selector = Some(BTreeMap::from([(key.clone(), ACTIVE.to_owned())]));
    pod.scheduling_gates = Some(vec![PodSchedulingGate {
        name: SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION.into(),
    }]);
    let selector = pool_labels(&s.name, pool);
    let template_meta = template_metadata(&template, &selector, &pod, i.config);
    let spec = DaemonSetSpec {
        selector: LabelSelector {
            match_labels: Some(selector.clone()),
            match_expressions: None,
        },
        update_strategy: Some(DaemonSetUpdateStrategy {
            type_: Some("OnDelete".into()),
            rolling_update: None,
        }),
        template: PodTemplateSpec {
            metadata: Some(template_meta),
            spec: Some(pod),
        },
        ..Default::default()
    };
    // The disk-layout record is part of what is rendered: a DaemonSet that lacks it (or holds
    // another) is patched even when its template is the same.
    let record = layout.to_json();
    let hash = rendered_hash(&(&spec.template, &spec.update_strategy, &record));
    Ok(DaemonSet {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(s.namespace.clone()),
            labels: Some(selector),
            annotations: Some(BTreeMap::from([
                (annotation::ANNOTATION_RENDERED_HASH.to_owned(), hash),
                (
                    annotation::ANNOTATION_NODE_LOCAL_POOL_ACTIVATION_LABEL.to_owned(),
                    key,
                ),
                (
                    annotation::ANNOTATION_NODE_LOCAL_POOL_ACTIVATION_VALUE.to_owned(),
                    ACTIVE.to_owned(),
                ),
                (
                    annotation::ANNOTATION_STORAGE_DISK_LAYOUT.to_owned(),
                    record,
                ),
            ])),
            owner_references: Some(vec![controller_ref(i.cluster)?]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    })
}

/// The pod's volumes and mounts: config, secrets, then the metadata HostPath and every data
/// HostPath, each with its marker.
fn volumes_and_mounts(
    i: &PoolInputs<'_>,
    layout: &disk_layout::DiskLayout,
) -> (Vec<Volume>, Vec<VolumeMount>) {
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
        statefulset::secret_volume("rpc-secret", i.rpc_secret, RPC_SECRET_KEY),
        statefulset::secret_volume("admin-token", i.admin_token, ADMIN_TOKEN_KEY),
    ];
    let mut mounts = vec![
        statefulset::mount("config", CONFIG_DIR, true),
        statefulset::mount("rpc-secret", RPC_SECRET_DIR, true),
        statefulset::mount("admin-token", ADMIN_TOKEN_DIR, true),
    ];
    // The metadata HostPath, then every data HostPath, each with its marker. A read-only data
    // path is still mounted read-write: Garage maintains its marker file there and moves its
    // blocks away (Garage's own `read_only` is in garage.toml).
    let single = i.pool.data.is_some();
    let data = layout.data_paths.iter().enumerate().map(|(n, d)| {
        let volume = if single {
            "data".to_owned()
        } else {
            data_dirs::volume_name(n)
        };
        let host = HostPathVolume {
            host_path: d.host_path.clone(),
            host_path_type: (d.host_path_type == disk_layout::DIRECTORY_OR_CREATE)
                .then_some(HostPathType::DirectoryOrCreate),
        };
        (volume, host, d.path.clone())
    });
    let disks: Vec<(String, HostPathVolume, String)> = std::iter::once((
        "metadata".to_owned(),
        i.pool.metadata.clone(),
        METADATA_DIR.to_owned(),
    ))
    .chain(data)
    .collect();
    for (volume, host, at) in &disks {
        let volume = volume.as_str();
        let (v, marker) = host_path(volume, host);
        volumes.push(v);
        mounts.push(statefulset::mount(volume, at, false));
        if let Some(marker) = marker {
            mounts.push(statefulset::mount(
                &marker.name,
                &format!("{MARKER_DIR}/{volume}"),
                true,
            ));
            volumes.push(marker);
        }
    }
    (volumes, mounts)
}

/// The shared pod builder reads its per-member settings from a GarageNode; a pool's come
/// from its pod template, so they are handed over as one.
fn stand_in_node(s: &Settings, name: &str, template: &PodTemplate) -> GarageNode {
    GarageNode::new(
        name,
        GarageNodeSpec {
            cluster_ref: ClusterReference {
                name: s.name.clone(),
                ..Default::default()
            },
            zone: s.zone.clone(),
            affinity: template.affinity.clone(),
            container_security_context: template.container_security_context.clone(),
            env: template.env.clone(),
            env_from: template.env_from.clone(),
            priority_class_name: template.priority_class_name.clone(),
            resources: template.resources.clone(),
            security_context: template.security_context.clone(),
            tolerations: template.tolerations.clone(),
            topology_spread_constraints: template.topology_spread_constraints.clone(),
            ..Default::default()
        },
    )
}

/// The pod template's labels (the user's, reserved keys removed, then the pool selector)
/// and annotations (the user's, then the hashes that tell a rollout the pod must change).
fn template_metadata(
    template: &PodTemplate,
    selector: &BTreeMap<String, String>,
    pod: &PodSpec,
    config: &ConfigRevision,
) -> ObjectMeta {
    let mut pod_labels: BTreeMap<String, String> = template
        .pod_labels
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| {
            !label::RESERVED_POD_LABELS.contains(&k.as_str())
                && !k.starts_with("garage.rajsingh.info/")
        })
        .collect();
    pod_labels.extend(selector.clone());
    let mut pod_annotations: BTreeMap<String, String> = template
        .pod_annotations
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| !k.starts_with("garage.rajsingh.info/"))
        .collect();
    pod_annotations.insert(
        annotation::ANNOTATION_CONFIG_HASH.into(),
        config.revision[..16].to_owned(),
    );
    pod_annotations.insert(
        annotation::ANNOTATION_POD_SPEC_HASH.into(),
        rendered_hash(&(&pod, &pod_labels)),
    );
    ObjectMeta {
        labels: Some(pod_labels),
        annotations: Some(pod_annotations),
        ..Default::default()
    }
}

/// The config revision of `pool` when it has several data directories: the cluster's
/// garage.toml with the pool's `data_dir` list (rendered as for `spec.storage.data.paths`),
/// in an immutable ConfigMap `<cluster>-storage-<pool>-config-<12 hex>` whose revision mixes
/// in the pool's disk layout, which it also records. A pool with the single `data` HostPath
/// mounts the cluster's shared revision (`None`): its garage.toml is the same.
pub fn config_revision(
    c: &GarageCluster,
    s: &Settings,
    pool: &NodeLocalPoolSpec,
) -> Result<Option<ConfigRevision>, DesiredError> {
    let Some(dirs) = data_dirs::pool_data_dirs(pool)? else {
        return Ok(None);
    };
    let pool_settings = Settings {
        data_dirs: Some(dirs),
        ..s.clone()
    };
    let body = super::config::render(c, &pool_settings)?;
    let layout = disk_layout::of_pool(pool).to_json();
    let revision = names::sha256_hex(format!("{body}\0{layout}").as_bytes());
    let base = names::bounded(&format!("{}-storage-{}-config", s.name, pool.name), 63);
    let mut labels = super::labels::cluster_labels(&s.name);
    labels.insert(label::LABEL_NODE_LOCAL_POOL.into(), pool.name.clone());
    let record = BTreeMap::from([(
        annotation::ANNOTATION_STORAGE_DISK_LAYOUT.to_owned(),
        layout,
    )]);
    super::config::revision_of(c, s, &base, revision, body, labels, record).map(Some)
}

/// The HostPath volume `name` and, for a `Directory` path, its marker volume.
fn host_path(name: &str, v: &HostPathVolume) -> (Volume, Option<Volume>) {
    let kind = match v.host_path_type {
        Some(HostPathType::DirectoryOrCreate) => "DirectoryOrCreate",
        _ => "Directory",
    };
    let volume = Volume {
        name: name.into(),
        host_path: Some(HostPathVolumeSource {
            path: v.host_path.clone(),
            type_: Some(kind.into()),
        }),
        ..Default::default()
    };
    let marker = (kind == "Directory").then(|| Volume {
        name: format!("verify-{name}"),
        host_path: Some(HostPathVolumeSource {
            path: format!("{}/{MARKER_FILE}", v.host_path.trim_end_matches('/')),
            type_: Some("File".into()),
        }),
        ..Default::default()
    });
    (volume, marker)
}

/// The GarageNode of the member of `pool` on Kubernetes Node `node`, once its pod has been
/// scheduled there. `recovery_id` is the identity the Node's record holds for this pool.
pub fn member_node(
    c: &GarageCluster,
    s: &Settings,
    pool: &NodeLocalPoolSpec,
    node: &str,
    recovery_id: Option<&str>,
) -> Result<GarageNode, DesiredError> {
    let name = garage_node_name(&s.name, &pool.name, node);
    let spec = GarageNodeSpec {
        cluster_ref: ClusterReference {
            name: s.name.clone(),
            ..Default::default()
        },
        backing: Some(NodeBacking::NodeLocalPool),
        kubernetes_node_name: Some(node.to_owned()),
        node_local_pool_name: Some(pool.name.clone()),
        zone: s.zone.clone(),
        zone_from: c.spec.zone_from.clone(),
        // The layout weight is the pool's `capacity`, also with `dataPaths`: it is the weight
        // every member of the pool advertises (uniform within a pool, admission keeps it
        // within the writable paths' total), not a sum of the paths. Adding a disk or marking
        // one read-only therefore rolls the pods without moving every member's role weight
        // and starting a rebalance the user did not ask for; changing `capacity` does that.
        capacity: pool
            .capacity
            .clone()
            .or(Some(Quantity(s.capacity.to_string()))),
        tags: c.spec.default_node_tags.clone(),
        ..Default::default()
    };
    let mut labels = pool_labels(&s.name, &pool.name);
    labels.insert(
        label::LABEL_APP_MANAGED_BY.into(),
        label::value::MANAGED_BY_GENERATED_NODE.into(),
    );
    labels.insert(label::LABEL_KUBERNETES_NODE.into(), node_label_value(node));
    labels.remove(label::LABEL_STORAGE_GROUP);
    let mut annotations = BTreeMap::from([
        (label::LABEL_KUBERNETES_NODE.to_owned(), node.to_owned()),
        (
            annotation::ANNOTATION_RENDERED_HASH.to_owned(),
            rendered_hash(&spec),
        ),
    ]);
    if let Some(id) = recovery_id {
        annotations.insert(
            annotation::ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID.to_owned(),
            id.to_owned(),
        );
    }
    Ok(GarageNode {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(s.namespace.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![controller_ref(c)?]),
            ..Default::default()
        },
        spec,
        status: None,
    })
}

#[cfg(test)]
mod tests;
