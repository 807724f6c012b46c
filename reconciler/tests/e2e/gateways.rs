//! Site F, after `publicEndpoint`: the unified gateway tier of the upstream sample
//! (`spec.gateway.replicas: 2`, its metadata claims on kubesim's StorageClass, since the test
//! cluster has no default one) added to the running cluster with its 200 checksummed
//! objects. Two generated gateways `garage-gateway-0/1` join the layout with capacity-less
//! roles tagged `tier:gateway`; the `garage-gateway` Service selects exactly their pods and
//! the `garage-gateway` budget lets one go at a time; every object reads back through each
//! gateway and objects written through a gateway read back through a storage pod. The tier is
//! then scaled to one under a continuous reader going through the Ready gateways: the leaving
//! gateway leaves its Service, then its role leaves the layout (a role-only transaction, no
//! block proof) before its GarageNode and pod go. No GET fails, and every object reads back
//! through the gateway left.
//!
//! The site runs Garage's Kubernetes discovery; the gateways run without it (their garage.toml
//! has no `[kubernetes_discovery]` section and their pods no API token), so that a gateway
//! that comes back as a new identity cannot connect, turn Ready and serve before the operator
//! has taken it out of the Service. Each gateway pod carries the `seen-without-role` mark for
//! its identity, which ran before its role was added.
//!
//! Before the scale-down, `garage-gateway-0`'s metadata is wiped under its running process,
//! which then restarts as a new identity, under the same continuous reader: its pod is seen out of the
//! Service during the swap, the new identity takes over the old one's role in exactly one
//! layout version, the storage roles stay as they were, the pod is back in the Service and
//! Ready once the record is cleared, and no GET fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use localcluster::wait_until as wait;
use serde_json::json;

use crate::support::*;
use crate::{NAME, World};
use shared_types::keys::label::LABEL_TIER;

const GATEWAYS: [&str; 2] = ["garage-gateway-0", "garage-gateway-1"];

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    set_replicas(w, 2)
        .await
        .context("spec.gateway was not admitted")?;
    let ids = joined(w).await?;
    println!(
        "gateways: both joined with capacity-less roles ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    wait_ready(&w.clusters, Duration::from_secs(300)).await?;
    service_and_budget(w).await?;
    without_discovery(w).await?;
    let store = w.store.clone().context("no objects were written")?;
    for gw in GATEWAYS {
        verify(&store, &s3(w.sim, &format!("{gw}-0"))?, &w.checksummed).await?;
    }
    // Written through a gateway, stored on the storage tier.
    // Names of their own: the 200 objects every step reads back stay as they are.
    let through: Vec<(String, Vec<u8>)> = random_objects(20, 0x9a7e)
        .into_iter()
        .map(|(name, body)| (format!("through-gateway-{name}"), body))
        .collect();
    let gateway = s3(w.sim, "garage-gateway-1-0")?;
    for (name, body) in &through {
        store.put(&gateway, name, body.clone()).await?;
    }
    verify(&store, &s3(w.sim, "garage-storage-0-0")?, &through).await?;
    println!(
        "gateways: every object read through each gateway, 20 written through one read back from storage ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    swap(w, &ids[0]).await?;
    scale_down(w, &ids[1]).await?;
    verify(&store, &s3(w.sim, "garage-gateway-0-0")?, &w.checksummed).await?;
    println!(
        "gateways: 2 -> 1 under a continuous reader, role retired first; every object reads back ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

async fn set_replicas(w: &World<'_>, replicas: i32) -> anyhow::Result<()> {
    w.clusters
        .patch(
            NAME,
            &PatchParams::default(),
            // The sample's tier; the test cluster has no default StorageClass, so the
            // metadata claims name kubesim's.
            &Patch::Merge(json!({"spec": {"gateway": {
                "replicas": replicas,
                "metadata": {"storageClassName": "local-sim"},
            }}})),
        )
        .await?;
    Ok(())
}

/// Waits until both gateways hold a capacity-less `tier:gateway` role under the identity
/// their GarageNode records; returns those identities.
async fn joined(w: &World<'_>) -> anyhow::Result<Vec<String>> {
    let admin = admin_client(&w.client, w.sim, 0).await?;
    wait(
        "both gateways in the layout without capacity",
        Duration::from_secs(300),
        || {
            let (admin, gns) = (admin.clone(), w.gns.clone());
            async move {
                let layout = admin.layout().await?;
                for gw in GATEWAYS {
                    let Some(id) = gns
                        .get_opt(gw)
                        .await?
                        .and_then(|g| g.status)
                        .and_then(|s| s.node_id)
                    else {
                        return Ok(false);
                    };
                    let placed = layout.roles.iter().any(|r| {
                        r.id.as_str() == id
                            && r.capacity.is_none()
                            && r.tags.iter().any(|t| t == "tier:gateway")
                    });
                    if !placed {
                        return Ok(false);
                    }
                }
                Ok(layout.staged_role_changes.is_empty())
            }
        },
    )
    .await?;
    let mut ids = Vec::new();
    for gw in GATEWAYS {
        let gn = w.gns.get(gw).await?;
        ensure!(gn.spec.gateway == Some(true) && gn.spec.capacity.is_none());
        ids.push(gn.status.and_then(|s| s.node_id).context("no node id")?);
    }
    let storage_roles = admin
        .layout()
        .await?
        .roles
        .iter()
        .filter(|r| r.capacity.is_some())
        .count();
    ensure!(storage_roles == 3, "{storage_roles} storage roles, not 3");
    Ok(ids)
}

/// The `garage-gateway` Service routes to the two gateway pods and nothing else; the budget
/// lets one go; the status counts them.
async fn service_and_budget(w: &World<'_>) -> anyhow::Result<()> {
    let ns = crate::ns();
    let svc = Api::<Service>::namespaced(w.client.clone(), ns)
        .get("garage-gateway")
        .await?;
    let spec = svc.spec.context("no spec")?;
    ensure!(
        spec.publish_not_ready_addresses != Some(true),
        "the gateway Service routes to pods that are not Ready"
    );
    let mut want: Vec<String> = Vec::new();
    for gw in GATEWAYS {
        want.push(
            w.sim
                .pod_ip(ns, &format!("{gw}-0"))
                .context("no ip")?
                .to_string(),
        );
    }
    want.sort();
    let slices: Api<EndpointSlice> = Api::namespaced(w.client.clone(), ns);
    wait(
        "the garage-gateway Service's endpoints to be the two gateway pods",
        Duration::from_secs(120),
        || {
            let (slices, want) = (slices.clone(), want.clone());
            async move {
                let list = slices
                    .list(
                        &ListParams::default().labels("kubernetes.io/service-name=garage-gateway"),
                    )
                    .await?;
                let mut got: Vec<String> = list
                    .items
                    .iter()
                    .flat_map(|s| s.endpoints.iter().flatten())
                    .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
                    .flat_map(|e| e.addresses.iter().cloned())
                    .collect();
                got.sort();
                Ok(got == want)
            }
        },
    )
    .await?;
    let pdb = Api::<PodDisruptionBudget>::namespaced(w.client.clone(), ns)
        .get("garage-gateway")
        .await?;
    ensure!(
        pdb.spec.and_then(|s| s.min_available) == Some(IntOrString::Int(1)),
        "the gateway budget does not keep one of two"
    );
    let status = w.clusters.get(NAME).await?.status.unwrap_or_default();
    ensure!(
        (status.gateway_replicas, status.gateway_ready_replicas) == (Some(2), Some(2)),
        "status counts {:?} gateways, {:?} ready",
        status.gateway_replicas,
        status.gateway_ready_replicas
    );
    Ok(())
}

/// The site's storage pods run Garage's Kubernetes discovery with an API token; its gateway
/// pods run neither.
async fn without_discovery(w: &World<'_>) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let maps: Api<ConfigMap> = Api::namespaced(w.client.clone(), crate::ns());
    for (pod, discovering) in [
        ("garage-storage-0-0", true),
        ("garage-gateway-0-0", false),
        ("garage-gateway-1-0", false),
    ] {
        let p = w.pods.get(pod).await?;
        let map = crate::pool_disks::mounted_config(&p)?;
        let spec = p.spec.clone().context("no pod spec")?;
        let toml = maps
            .get(&map)
            .await?
            .data
            .and_then(|d| d.get("garage.toml").cloned())
            .with_context(|| format!("{map} has no garage.toml"))?;
        ensure!(
            toml.contains("[kubernetes_discovery]") == discovering,
            "{pod} mounts {map}, which should {}run Kubernetes discovery",
            if discovering { "" } else { "not " }
        );
        ensure!(
            spec.automount_service_account_token == Some(discovering),
            "{pod}: automountServiceAccountToken is {:?}",
            spec.automount_service_account_token
        );
        if discovering {
            continue;
        }
        // Each gateway ran its identity before its role was added, and its pod says so: its
        // age holds no later layout change.
        let id = w
            .gns
            .get(pod.strip_suffix("-0").unwrap_or(pod))
            .await?
            .status
            .and_then(|s| s.node_id)
            .context("no node id")?;
        let mark = p
            .annotations()
            .get(shared_types::keys::annotation::ANNOTATION_SEEN_WITHOUT_ROLE)
            .cloned()
            .unwrap_or_default();
        ensure!(
            mark.starts_with(&format!("{id}/")),
            "{pod} is not marked as seen running {id} without a role: {mark:?}"
        );
    }
    println!(
        "gateways: run without Kubernetes discovery or an API token (storage runs both), each pod marked as seen without a role before its role"
    );
    Ok(())
}

/// Wipes `garage-gateway-0`'s metadata under its running process and restarts it, under a
/// continuous reader: the new identity takes over the role of `old` in exactly one layout
/// version, the storage roles stay as they were, and no GET fails.
async fn swap(w: &World<'_>, old: &str) -> anyhow::Result<()> {
    let t = Instant::now();
    let admin = admin_client(&w.client, w.sim, 0).await?;
    let before = admin.layout().await?;
    let storage = |l: &garage_admin::ClusterLayout| -> Vec<(String, Option<u64>)> {
        l.roles
            .iter()
            .filter(|r| r.capacity.is_some())
            .map(|r| (r.id.to_string(), r.capacity))
            .collect()
    };
    let (stop, reader) = gateway_reader(w)?;
    wipe_metadata(&w.client, "garage-gateway-0").await?;
    w.sim
        .kill_container(crate::ns(), "garage-gateway-0-0", "garage")
        .await?;
    // Whether a poll found the pod out of the gateway Service: the reader's zero must come from
    // the operator keeping the new identity out, not from a reader that never met it.
    let left = Arc::new(AtomicBool::new(false));
    let swapped = wait(
        "garage-gateway-0's new identity holding the gateway role",
        Duration::from_secs(300),
        || {
            let (admin, gns, clusters) = (admin.clone(), w.gns.clone(), w.clusters.clone());
            let (pods, left) = (w.pods.clone(), left.clone());
            async move {
                let pod = pods.get("garage-gateway-0-0").await?;
                if pod.labels().get(LABEL_TIER).is_none() {
                    left.store(true, Ordering::SeqCst);
                }
                let id = gns
                    .get("garage-gateway-0")
                    .await?
                    .status
                    .and_then(|s| s.node_id)
                    .unwrap_or_default();
                let layout = admin.layout().await?;
                let done = id != old
                    && layout
                        .roles
                        .iter()
                        .any(|r| r.id.as_str() == id && r.capacity.is_none())
                    && !layout.roles.iter().any(|r| r.id.as_str() == old)
                    && clusters
                        .get(NAME)
                        .await?
                        .status
                        .and_then(|s| s.storage_drain)
                        .is_none();
                Ok(done)
            }
        },
    )
    .await;
    // Back in the Service once its new identity holds the role.
    let served = match swapped {
        Ok(()) => {
            wait(
                "garage-gateway-0's pod back in the gateway Service",
                Duration::from_secs(120),
                || {
                    let pods = w.pods.clone();
                    async move {
                        let pod = pods.get("garage-gateway-0-0").await?;
                        Ok(
                            pod.labels().get(LABEL_TIER).map(String::as_str) == Some("gateway")
                                && crate::rollout::ready(&pod),
                        )
                    }
                },
            )
            .await
        }
        Err(e) => Err(e),
    };
    stop.store(true, Ordering::SeqCst);
    let crate::rollout::Reads {
        reads,
        failed,
        first_failure,
    } = reader.await??;
    served?;
    let after = admin.layout().await?;
    ensure!(
        after.version == before.version + 1,
        "the swap took layout versions {} -> {}, not one",
        before.version,
        after.version
    );
    ensure!(
        storage(&after) == storage(&before),
        "the storage roles changed"
    );
    println!(
        "gateways: metadata wiped under garage-gateway-0; its new identity took the role in one version ({} -> {}); reader: {reads} GETs, {failed} failed ({:.1}s)",
        before.version,
        after.version,
        t.elapsed().as_secs_f64()
    );
    ensure!(
        reads > 0 && failed == 0,
        "{failed} of {reads} GETs through the gateways failed; the first: {}",
        first_failure.unwrap_or_default()
    );
    ensure!(
        left.load(Ordering::SeqCst),
        "garage-gateway-0's pod never left the gateway Service during the swap"
    );
    Ok(())
}

/// 2 -> 1 under a continuous reader through the Ready gateways: `garage-gateway-1` goes only
/// after its role `leaving` is out of the layout, and no GET fails.
async fn scale_down(w: &World<'_>, leaving: &str) -> anyhow::Result<()> {
    let (stop, reader) = gateway_reader(w)?;
    set_replicas(w, 1).await?;
    let admin = admin_client(&w.client, w.sim, 0).await?;
    // The pod may not stop before the role is gone: checked on every look until both are.
    let early = Arc::new(AtomicBool::new(false));
    let order = wait(
        "garage-gateway-1 retired: role, GarageNode and pod gone",
        Duration::from_secs(300),
        || {
            let (admin, gns, pods, early) =
                (admin.clone(), w.gns.clone(), w.pods.clone(), early.clone());
            async move {
                let pod = pods.get_opt("garage-gateway-1-0").await?;
                let role = admin
                    .layout()
                    .await?
                    .roles
                    .iter()
                    .any(|r| r.id.as_str() == leaving);
                if role
                    && pod
                        .as_ref()
                        .is_none_or(|p| p.metadata.deletion_timestamp.is_some())
                {
                    early.store(true, Ordering::SeqCst);
                }
                Ok(!role && pod.is_none() && gns.get_opt("garage-gateway-1").await?.is_none())
            }
        },
    )
    .await;
    stop.store(true, Ordering::SeqCst);
    let crate::rollout::Reads {
        reads,
        failed,
        first_failure,
    } = reader.await??;
    order?;
    ensure!(
        !early.load(Ordering::SeqCst),
        "garage-gateway-1's pod stopped while its role was still in the layout"
    );
    println!("gateways: continuous reader: {reads} GETs, {failed} failed");
    ensure!(
        reads > 0 && failed == 0,
        "{failed} of {reads} GETs through the gateways failed; the first: {}",
        first_failure.unwrap_or_default()
    );
    // The cluster releases the record once it sees the GarageNode gone, in a pass after the
    // node's finalizer let it go.
    wait(
        "the retirement record released",
        Duration::from_secs(60),
        || {
            let clusters = w.clusters.clone();
            async move {
                Ok(clusters
                    .get(NAME)
                    .await?
                    .status
                    .and_then(|s| s.storage_drain)
                    .is_none())
            }
        },
    )
    .await?;
    ensure!(w.gns.get_opt("garage-gateway-0").await?.is_some());
    let names: Vec<String> = w
        .gns
        .list(&Default::default())
        .await?
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    ensure!(!names.iter().any(|n| n == "garage-gateway-1"), "{names:?}");
    Ok(())
}

/// A running reader: its GETs and failed GETs once stopped.
type Reader = tokio::task::JoinHandle<anyhow::Result<crate::rollout::Reads>>;

/// A continuous reader of the 200 objects through the Ready pods in the gateway Service, and
/// the flag that stops it.
fn gateway_reader(w: &World<'_>) -> anyhow::Result<(Arc<AtomicBool>, Reader)> {
    let stop = Arc::new(AtomicBool::new(false));
    let reader = tokio::spawn(crate::rollout::read_continuously(
        w.pods.clone(),
        "gateway",
        w.store.clone().context("no store")?,
        w.checksummed.clone(),
        stop.clone(),
    ));
    Ok((stop, reader))
}
