//! Site F, after `zoneFrom`: `spec.publicEndpoint` with one LoadBalancer per member on the
//! running cluster with its 200 checksummed objects. kubesim plays the load balancer (an
//! address of its own per Service, forwarding to the pod the Service selects). Each Auto slot
//! gets its Service `garage-<i>-rpc` selecting the node that fills it (the promoted cycle
//! sibling in slot 1); each member is rolled onto a garage.toml of its own advertising its
//! Service's address, which Garage then reports as its own address and which the member's
//! layout role carries as its `rpc-address:` tag; each address answers on the RPC port; every
//! object reads back after the rollout.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::Service;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::conditions::cluster::CONDITION_PUBLIC_ENDPOINT_READY;
use shared_types::keys::label;

use crate::support::*;
use crate::{NAME, World};

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    w.clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"publicEndpoint": {
                "type": "LoadBalancer",
                "loadBalancer": {"perNode": true, "annotations": {"lb.example/scheme": "internal"}},
            }}})),
        )
        .await
        .context("spec.publicEndpoint was not admitted")?;
    let services: Api<Service> = Api::namespaced(w.client.clone(), crate::ns());
    let last = std::sync::Arc::new(std::sync::Mutex::new((String::new(), BTreeMap::new())));
    let seen = last.clone();
    let done = wait(
        "every member advertising its own load balancer's address",
        Duration::from_secs(900),
        || {
            let (w, services, last) = (&*w, services.clone(), last.clone());
            async move {
                let (wrong, addresses) = check(w, &services).await?;
                let ok = wrong.is_empty();
                *last.lock().unwrap() = (wrong.join("; "), addresses);
                Ok(ok)
            }
        },
    )
    .await;
    let (wrong, addresses) = seen.lock().unwrap().clone();
    done.with_context(|| format!("last seen: {wrong}"))?;
    for (node, addr) in &addresses {
        tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr))
            .await
            .with_context(|| format!("{node}'s address {addr} does not answer"))??;
    }
    wait_ready(&w.clusters, Duration::from_secs(300)).await?;
    let store = w.store.as_ref().context("no objects were written")?;
    verify(store, &s3(w.sim, "garage-storage-0-0")?, &w.checksummed).await?;
    println!(
        "publicEndpoint: each member advertises its own load balancer ({addresses:?}), rolled onto it; 200 objects read back ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// What is not yet as it should be, and each member's advertised address.
async fn check(
    w: &World<'_>,
    services: &Api<Service>,
) -> anyhow::Result<(Vec<String>, BTreeMap<String, String>)> {
    let mut wrong = Vec::new();
    let mut addresses = BTreeMap::new();
    let cluster = w.clusters.get(NAME).await?;
    if condition(&cluster, CONDITION_PUBLIC_ENDPOINT_READY).as_deref() != Some("True") {
        wrong.push("PublicEndpointReady is not True".into());
    }
    if cluster
        .status
        .as_ref()
        .is_some_and(|s| s.storage_rollout.is_some())
    {
        wrong.push("a rollout is recorded".into());
    }
    let admin = admin_client(&w.client, w.sim, 0).await?;
    let layout = admin.layout().await?;
    for gn in w.gns.list(&Default::default()).await?.items {
        let name = gn.name_any();
        let slot = gn
            .labels()
            .get(label::LABEL_AUTO_NODE_SLOT)
            .and_then(|s| s.rsplit('-').next())
            .context("a member without a slot")?
            .to_owned();
        let svc = services.get(&format!("{NAME}-{slot}-rpc")).await?;
        let selects = svc
            .spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .and_then(|s| s.get(label::LABEL_NODE))
            .cloned();
        ensure!(
            selects.as_deref() == Some(name.as_str()),
            "slot {slot}'s Service selects {selects:?}, not {name}"
        );
        let ip = svc
            .status
            .and_then(|s| s.load_balancer)
            .and_then(|l| l.ingress)
            .and_then(|i| i.into_iter().next())
            .and_then(|i| i.ip);
        let Some(ip) = ip else {
            wrong.push(format!("{name}: no address yet"));
            continue;
        };
        let want = format!("{ip}:3901");
        addresses.insert(name.clone(), want.clone());
        let Some(id) = gn.status.as_ref().and_then(|s| s.node_id.clone()) else {
            wrong.push(format!("{name}: no node ID"));
            continue;
        };
        let tag = format!("rpc-address:{want}");
        let tagged = layout
            .roles
            .iter()
            .any(|r| r.id.as_str() == id && r.tags.contains(&tag));
        if !tagged {
            wrong.push(format!("{name}: its role lacks {tag}"));
        }
        // Garage reports a node's own address as the one it advertises.
        let own = admin_client_at(&w.client, w.sim, &format!("{name}-0")).await?;
        let reported = own
            .cluster_status()
            .await?
            .nodes
            .into_iter()
            .find(|n| n.id.as_str() == id)
            .and_then(|n| n.addr);
        if reported.as_deref() != Some(want.as_str()) {
            wrong.push(format!("{name}: Garage reports {reported:?}, not {want}"));
        }
    }
    Ok((wrong, addresses))
}
