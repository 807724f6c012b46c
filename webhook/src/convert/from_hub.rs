//! v1beta2 -> v1beta1 (the API server's "ConvertFrom"), with v1beta2-only data carried in the
//! reserved annotations.

use shared_types::garage_cluster::common::{LayoutPolicy, PodDisruptionBudgetConfig};
use shared_types::garage_cluster::{v1beta1, v1beta2};

use super::ConvertError;
use super::annotations::{
    Payloads, TOTAL_ANNOTATION_SIZE_LIMIT, encode_payload, put_transport, take_transport,
    within_budget,
};
use super::pod::PodFields;
use super::status;
use super::to_hub::gateway_from_edge_view;

/// Converts a v1beta2 GarageCluster to its v1beta1 view.
///
/// A storage tier (alone or with a gateway) is shown as a v1beta1 storage cluster, a lone gateway
/// as an edge gateway (`spec.gateway: true`) and a management handle as a tier-less view.
/// What v1beta1 cannot show travels in the reserved annotations: the whole gateway tier of a
/// unified cluster, an edge gateway that uses v1beta2-only settings, and node-local pools.
/// Fails when those annotations would exceed the Kubernetes annotation size limit, which the API
/// server would otherwise refuse with a less helpful message.
pub fn to_v1beta1(hub: v1beta2::GarageCluster) -> Result<v1beta1::GarageCluster, ConvertError> {
    let v1beta2::GarageCluster {
        mut metadata,
        spec,
        status,
    } = hub;
    let v1beta2::GarageClusterSpec {
        admin,
        blocks,
        connect_to,
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
        public_endpoint,
        remote_clusters,
        replication,
        s3_api,
        security,
        service_account_name,
        storage,
        web_api,
        workers,
        zone,
        zone_from,
    } = spec;

    let (view, payloads) = view_and_payloads(storage, gateway)?;

    // Stale payloads or markers on a v1beta2 object describe nothing it holds; dropping them
    // keeps them from being restored as data on the way back.
    take_transport(&mut metadata.annotations);
    if let Some(size) = put_transport(&mut metadata.annotations, payloads)
        && !within_budget(size)
    {
        return Err(ConvertError::AnnotationBudget {
            size,
            limit: TOTAL_ANNOTATION_SIZE_LIMIT,
        });
    }

    let TierView {
        gateway,
        replicas,
        pod_disruption_budget,
        capacity_reserve_percent,
        pod,
        storage,
    } = view;
    Ok(v1beta1::GarageCluster {
        metadata,
        spec: v1beta1::GarageClusterSpec {
            admin,
            affinity: pod.affinity,
            blocks,
            capacity_reserve_percent,
            connect_to,
            container_security_context: pod.container_security_context,
            database,
            default_node_tags,
            deletion_policy,
            discovery,
            gateway: Some(gateway),
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
            node_selector: pod.node_selector,
            pod_annotations: pod.pod_annotations,
            pod_disruption_budget,
            pod_labels: pod.pod_labels,
            priority_class_name: pod.priority_class_name,
            public_endpoint,
            remote_clusters: remote_clusters
                .map(|list| list.into_iter().map(remote_cluster).collect()),
            replicas,
            replication,
            resources: pod.resources,
            s3_api,
            security,
            security_context: pod.security_context,
            service_account_name,
            storage: storage.filter(|s| *s != v1beta1::StorageConfig::default()),
            tolerations: pod.tolerations,
            topology_spread_constraints: pod.topology_spread_constraints,
            web_api,
            workers,
            zone,
            zone_from,
        },
        status: status.map(status::to_v1beta1),
    })
}

/// The v1beta1 view of the tiers, and what it cannot show (node-local pools, a gateway tier
/// beside storage, an edge gateway the view does not reproduce) as payloads to keep in
/// reserved annotations.
fn view_and_payloads(
    storage: Option<v1beta2::StorageSpec>,
    gateway: Option<v1beta2::GatewaySpec>,
) -> Result<(TierView, Payloads), ConvertError> {
    let mut payloads = Payloads::default();
    let view = match (storage, gateway) {
        (Some(storage), gateway) => {
            let (view, pools) = storage_view(storage);
            if let Some(gateway) = gateway {
                payloads.gateway = Some(encode_payload("gateway tier", &gateway)?);
            }
            if let Some(pools) = pools.filter(|p| !p.is_empty()) {
                payloads.pools = Some(encode_payload("node-local pools", &pools)?);
            }
            view
        }
        (None, Some(gateway)) => {
            let view = edge_view(&gateway);
            if edge_needs_payload(&gateway, &view) {
                payloads.gateway = Some(encode_payload("gateway tier", &gateway)?);
            }
            view
        }
        (None, None) => TierView::handle(),
    };
    Ok((view, payloads))
}

/// The tier-dependent part of a v1beta1 spec.
struct TierView {
    gateway: bool,
    replicas: Option<i32>,
    pod_disruption_budget: Option<PodDisruptionBudgetConfig>,
    capacity_reserve_percent: Option<i64>,
    pod: PodFields,
    storage: Option<v1beta1::StorageConfig>,
}

impl TierView {
    /// A management handle: no pods, `replicas: 0`, which the v1beta1 spoke recognises as a
    /// handle on the way back.
    fn handle() -> Self {
        TierView {
            gateway: false,
            replicas: Some(0),
            pod_disruption_budget: None,
            capacity_reserve_percent: None,
            pod: PodFields::default(),
            storage: None,
        }
    }
}

/// The storage-first view of a storage or unified cluster, and the pools it cannot show.
fn storage_view(
    storage: v1beta2::StorageSpec,
) -> (TierView, Option<Vec<v1beta2::NodeLocalPoolSpec>>) {
    let v1beta2::StorageSpec {
        affinity,
        capacity_reserve_percent,
        container_security_context,
        data,
        data_fsync,
        env,
        env_from,
        layout_policy,
        metadata,
        metadata_auto_snapshot_interval,
        metadata_fsync,
        metadata_snapshots_dir,
        node_local_pools,
        node_selector,
        pod_annotations,
        pod_disruption_budget,
        pod_labels,
        priority_class_name,
        pvc_retention_policy,
        replicas,
        resources,
        rpc_public_addr,
        security_context,
        tolerations,
        topology_spread_constraints,
    } = storage;
    let view = TierView {
        gateway: false,
        replicas,
        pod_disruption_budget,
        capacity_reserve_percent,
        pod: PodFields {
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
        },
        storage: Some(v1beta1::StorageConfig {
            data,
            data_fsync,
            env,
            env_from,
            layout_policy: layout_policy.map(layout_policy_name),
            metadata,
            metadata_auto_snapshot_interval,
            metadata_fsync,
            metadata_snapshots_dir,
            pvc_retention_policy,
            rpc_public_addr,
        }),
    };
    (view, node_local_pools)
}

/// The edge-gateway view: gateway metadata and PVC retention sit in v1beta1 `storage`.
fn edge_view(gateway: &v1beta2::GatewaySpec) -> TierView {
    let gateway = gateway.clone();
    TierView {
        gateway: true,
        replicas: gateway.replicas,
        pod_disruption_budget: gateway.pod_disruption_budget,
        capacity_reserve_percent: None,
        pod: PodFields {
            affinity: gateway.affinity,
            container_security_context: gateway.container_security_context,
            node_selector: gateway.node_selector,
            pod_annotations: gateway.pod_annotations,
            pod_labels: gateway.pod_labels,
            priority_class_name: gateway.priority_class_name,
            resources: gateway.resources,
            security_context: gateway.security_context,
            tolerations: gateway.tolerations,
            topology_spread_constraints: gateway.topology_spread_constraints,
        },
        storage: Some(v1beta1::StorageConfig {
            metadata: gateway.metadata,
            pvc_retention_policy: gateway.pvc_retention_policy,
            ..Default::default()
        }),
    }
}

/// An edge gateway needs the payload exactly when its view would convert back to something else,
/// i.e. when it uses a v1beta2-only setting. Comparing with the real round trip, rather than
/// listing those settings, also covers fields added to GatewaySpec later. A plain edge gateway
/// gets no reserved annotation, so a v1beta1 client never sees one it did not cause.
fn edge_needs_payload(gateway: &v1beta2::GatewaySpec, view: &TierView) -> bool {
    let storage = view.storage.clone().unwrap_or_default();
    let back = gateway_from_edge_view(
        view.replicas,
        view.pod_disruption_budget.clone(),
        view.pod.clone(),
        storage.metadata,
        storage.pvc_retention_policy,
    );
    back != *gateway
}

fn layout_policy_name(policy: LayoutPolicy) -> String {
    match policy {
        LayoutPolicy::Auto => "Auto",
        LayoutPolicy::Manual => "Manual",
    }
    .to_owned()
}

/// CONV-11: v1beta1 has no `storageRpcEndpointTemplate`, so it is not shown (and is lost if a
/// client writes the view back; see docs/compatibility.md).
fn remote_cluster(remote: v1beta2::RemoteClusterConfig) -> v1beta1::RemoteClusterConfig {
    let v1beta2::RemoteClusterConfig {
        connection,
        default_capacity,
        name,
        zone,
    } = remote;
    let v1beta2::RemoteClusterConnection {
        admin_api_endpoint,
        admin_token_secret_ref,
        gateway_rpc_endpoint_template,
        storage_rpc_endpoint_template: _,
    } = connection;
    v1beta1::RemoteClusterConfig {
        connection: v1beta1::RemoteClusterConnection {
            admin_api_endpoint,
            admin_token_secret_ref,
            gateway_rpc_endpoint_template,
        },
        default_capacity,
        name,
        zone,
    }
}
