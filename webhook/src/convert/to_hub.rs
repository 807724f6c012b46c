//! v1beta1 -> v1beta2 (the API server's "ConvertTo"; CONV-5, CONV-6).

use shared_types::garage_cluster::common::{LayoutPolicy, PodDisruptionBudgetConfig};
use shared_types::garage_cluster::{v1beta1, v1beta2};

use super::ConvertError;
use super::annotations::{
    ANNOTATION_V1BETA2_GATEWAY_TIER, ANNOTATION_V1BETA2_NODE_LOCAL_POOLS, Payloads, decode_gateway,
    decode_pools, take_transport,
};
use super::pod::PodFields;
use super::status;

/// Converts a v1beta1 GarageCluster to v1beta2.
///
/// The shape follows CONV-3: a tier-less management handle, an edge gateway
/// (`spec.gateway: true`), or otherwise a storage tier. Node-local pools and a gateway tier that a
/// previous conversion put into the reserved annotations are then restored, and those annotations
/// are removed. Metadata is otherwise untouched.
pub fn to_v1beta2(object: v1beta1::GarageCluster) -> Result<v1beta2::GarageCluster, ConvertError> {
    let v1beta1::GarageCluster {
        mut metadata,
        spec,
        status,
    } = object;
    let v1beta1::GarageClusterSpec {
        admin,
        affinity,
        blocks,
        capacity_reserve_percent,
        connect_to,
        container_security_context,
        database,
        default_node_tags,
        deletion_policy,
        discovery,
        gateway,
        image,
        image_pull_policy,
        image_pull_secrets,
        image_repository,
        k2v_api,
        layout_management,
        layout_policy,
        logging,
        maintenance,
        monitoring,
        network,
        node_selector,
        pod_annotations,
        pod_disruption_budget,
        pod_labels,
        priority_class_name,
        public_endpoint,
        remote_clusters,
        replicas,
        replication,
        resources,
        s3_api,
        security,
        security_context,
        service_account_name,
        storage,
        tolerations,
        topology_spread_constraints,
        web_api,
        workers,
        zone,
        zone_from,
    } = spec;
    let pod = PodFields {
        affinity,
        container_security_context,
        node_selector,
        pod_annotations,
        pod_labels,
        priority_class_name,
        resources,
        security_context,
        tolerations,
        topology_spread_constraints,
    };
    let storage = storage.unwrap_or_default();
    let edge = gateway == Some(true);

    let (hub_storage, hub_gateway) = tiers(
        edge,
        connect_to.is_some(),
        replicas,
        pod_disruption_budget,
        capacity_reserve_percent,
        pod,
        storage,
    )?;

    let payloads = take_transport(&mut metadata.annotations);
    let mut hub = v1beta2::GarageCluster {
        metadata,
        spec: v1beta2::GarageClusterSpec {
            admin,
            blocks,
            connect_to,
            database,
            default_node_tags,
            deletion_policy,
            discovery,
            gateway: hub_gateway,
            image,
            image_pull_policy,
            image_pull_secrets,
            image_repository,
            k2v_api,
            layout_management,
            layout_policy,
            logging,
            maintenance,
            monitoring,
            network,
            public_endpoint,
            remote_clusters: remote_clusters
                .map(|list| list.into_iter().map(remote_cluster).collect()),
            replication,
            s3_api,
            security,
            service_account_name,
            storage: hub_storage,
            web_api,
            workers,
            zone,
            zone_from,
        },
        status: status.map(status::to_v1beta2),
    };

    restore_payloads(&mut hub, payloads, edge)?;
    Ok(hub)
}

/// The v1beta2 tiers a v1beta1 spec describes: none for a management handle, a gateway tier
/// for an edge gateway, otherwise a storage tier. `connects`: the spec names a cluster to
/// connect to.
fn tiers(
    edge: bool,
    connects: bool,
    replicas: Option<i32>,
    pod_disruption_budget: Option<PodDisruptionBudgetConfig>,
    capacity_reserve_percent: Option<i64>,
    pod: PodFields,
    storage: v1beta1::StorageConfig,
) -> Result<(Option<v1beta2::StorageSpec>, Option<v1beta2::GatewaySpec>), ConvertError> {
    // An absent replicas is what Go reads as 0; only undefaulted input lacks it.
    let handle = !edge
        && connects
        && replicas.unwrap_or(0) == 0
        && storage.metadata.is_none()
        && storage.data.is_none();
    Ok(if handle {
        // CONV-10: a handle runs no pods, so pod fields, PDB and storage settings are dropped.
        (None, None)
    } else if edge {
        // CONV-12: storage-only settings have no place on a gateway and are dropped.
        let gateway = gateway_from_edge_view(
            replicas,
            pod_disruption_budget,
            pod,
            storage.metadata,
            storage.pvc_retention_policy,
        );
        (None, Some(gateway))
    } else {
        let tier = storage_tier(
            replicas,
            pod_disruption_budget,
            capacity_reserve_percent,
            pod,
            storage,
        )?;
        (Some(tier), None)
    })
}

/// Puts back the node-local pools and the gateway tier that an earlier conversion to
/// v1beta1 kept in reserved annotations.
fn restore_payloads(
    hub: &mut v1beta2::GarageCluster,
    payloads: Payloads,
    edge: bool,
) -> Result<(), ConvertError> {
    if let Some(pools) = payloads.pools {
        let pools = decode_pools(&pools).map_err(|source| ConvertError::PoolPayload {
            key: ANNOTATION_V1BETA2_NODE_LOCAL_POOLS,
            source,
        })?;
        let Some(storage) = hub.spec.storage.as_mut() else {
            return Err(ConvertError::PoolsWithoutStorage {
                key: ANNOTATION_V1BETA2_NODE_LOCAL_POOLS,
            });
        };
        storage.node_local_pools = Some(pools);
    }
    if let Some(gateway) = payloads.gateway {
        let payload = decode_gateway(&gateway).map_err(|source| ConvertError::GatewayPayload {
            key: ANNOTATION_V1BETA2_GATEWAY_TIER,
            source,
        })?;
        hub.spec.gateway = Some(if edge {
            overlay_edge_edits(payload, hub.spec.gateway.take().unwrap_or_default())
        } else if hub.spec.storage.is_some() {
            // A unified gateway is not editable through v1beta1: the payload is the gateway.
            payload
        } else {
            return Err(ConvertError::GatewayWithoutTier {
                key: ANNOTATION_V1BETA2_GATEWAY_TIER,
            });
        });
    }
    Ok(())
}

/// The gateway tier an edge view describes. Conversion to v1beta1 uses it too, to tell whether
/// the view alone reproduces the real gateway (then no payload is needed).
pub(crate) fn gateway_from_edge_view(
    replicas: Option<i32>,
    pod_disruption_budget: Option<PodDisruptionBudgetConfig>,
    pod: PodFields,
    metadata: Option<shared_types::garage_cluster::common::VolumeConfig>,
    pvc_retention_policy: Option<shared_types::garage_cluster::common::PvcRetentionPolicy>,
) -> v1beta2::GatewaySpec {
    v1beta2::GatewaySpec {
        affinity: pod.affinity,
        container_security_context: pod.container_security_context,
        env: None,
        env_from: None,
        metadata,
        node_selector: pod.node_selector,
        pod_annotations: pod.pod_annotations,
        pod_disruption_budget,
        pod_labels: pod.pod_labels,
        priority_class_name: pod.priority_class_name,
        pvc_retention_policy,
        readiness_probe: None,
        replicas,
        resources: pod.resources,
        rpc_public_addr: None,
        security_context: pod.security_context,
        tolerations: pod.tolerations,
        topology_spread_constraints: pod.topology_spread_constraints,
    }
}

/// CONV-6 for an edge view: what v1beta1 can edit comes from the view, everything else from the
/// payload. Unlike the Go operator (CONV-7), `metadata` and `pvcRetentionPolicy` are replaced, not
/// merged, so that a field removed through v1beta1 is really removed: the view showed the whole
/// value, so the whole value is what the client sent back.
fn overlay_edge_edits(
    payload: v1beta2::GatewaySpec,
    edited: v1beta2::GatewaySpec,
) -> v1beta2::GatewaySpec {
    v1beta2::GatewaySpec {
        affinity: edited.affinity,
        container_security_context: edited.container_security_context,
        metadata: edited.metadata,
        node_selector: edited.node_selector,
        pod_annotations: edited.pod_annotations,
        pod_disruption_budget: edited.pod_disruption_budget,
        pod_labels: edited.pod_labels,
        priority_class_name: edited.priority_class_name,
        pvc_retention_policy: edited.pvc_retention_policy,
        replicas: edited.replicas,
        resources: edited.resources,
        security_context: edited.security_context,
        tolerations: edited.tolerations,
        topology_spread_constraints: edited.topology_spread_constraints,
        // Fields v1beta1 cannot express (rpcPublicAddr, readinessProbe, env, envFrom and any
        // added later) keep the payload's values.
        ..payload
    }
}

fn storage_tier(
    replicas: Option<i32>,
    pod_disruption_budget: Option<PodDisruptionBudgetConfig>,
    capacity_reserve_percent: Option<i64>,
    pod: PodFields,
    storage: v1beta1::StorageConfig,
) -> Result<v1beta2::StorageSpec, ConvertError> {
    let v1beta1::StorageConfig {
        data,
        data_fsync,
        env,
        env_from,
        layout_policy,
        metadata,
        metadata_auto_snapshot_interval,
        metadata_fsync,
        metadata_snapshots_dir,
        pvc_retention_policy,
        rpc_public_addr,
    } = storage;
    Ok(v1beta2::StorageSpec {
        affinity: pod.affinity,
        capacity_reserve_percent,
        container_security_context: pod.container_security_context,
        data,
        data_fsync,
        env,
        env_from,
        layout_policy: layout_policy_to_hub(layout_policy)?,
        metadata,
        metadata_auto_snapshot_interval,
        metadata_fsync,
        metadata_snapshots_dir,
        node_local_pools: None,
        node_selector: pod.node_selector,
        pod_annotations: pod.pod_annotations,
        pod_disruption_budget,
        pod_labels: pod.pod_labels,
        priority_class_name: pod.priority_class_name,
        pvc_retention_policy,
        replicas,
        resources: pod.resources,
        rpc_public_addr,
        security_context: pod.security_context,
        tolerations: pod.tolerations,
        topology_spread_constraints: pod.topology_spread_constraints,
    })
}

/// v1beta1 has no enum on `storage.layoutPolicy`; v1beta2 has. Go copies any string and stores
/// a value its own schema forbids; here such a value fails the conversion with a message instead,
/// because the Rust hub type cannot hold it. An empty string means unset, as Go's omitempty
/// writes it.
fn layout_policy_to_hub(value: Option<String>) -> Result<Option<LayoutPolicy>, ConvertError> {
    match value.as_deref() {
        None | Some("") => Ok(None),
        Some("Auto") => Ok(Some(LayoutPolicy::Auto)),
        Some("Manual") => Ok(Some(LayoutPolicy::Manual)),
        Some(_) => Err(ConvertError::UnknownLayoutPolicy {
            value: value.unwrap_or_default(),
        }),
    }
}

fn remote_cluster(remote: v1beta1::RemoteClusterConfig) -> v1beta2::RemoteClusterConfig {
    let v1beta1::RemoteClusterConfig {
        connection,
        default_capacity,
        name,
        zone,
    } = remote;
    let v1beta1::RemoteClusterConnection {
        admin_api_endpoint,
        admin_token_secret_ref,
        gateway_rpc_endpoint_template,
    } = connection;
    v1beta2::RemoteClusterConfig {
        connection: v1beta2::RemoteClusterConnection {
            admin_api_endpoint,
            admin_token_secret_ref,
            gateway_rpc_endpoint_template,
            storage_rpc_endpoint_template: None,
        },
        default_capacity,
        name,
        zone,
    }
}
