//! What `bench resources` checks and reports beside its figures: a few random key and bucket
//! pairs checked through Garage's Admin API once everything is Ready, and, when it is not
//! within `--timeout`, what the objects that are not Ready and the reconciler's log say.

use std::collections::BTreeMap;
use std::net::IpAddr;

use anyhow::{Context as _, Result};
use garage_admin::{AdminClient, AdminToken, BucketLookup, Lookup};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::Client;
use kube::api::ListParams;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_key::GarageKey;

use super::objects::ready_state;
use super::{ADMIN_PORT, CLUSTER, POD};
use crate::bench_reconciler::NS;
use crate::bench_reconciler::process::Reconciler;

/// How many random pairs are checked through the Admin API.
const SAMPLES: usize = 3;

/// What the objects that are not Ready say, grouped by state, and the reconciler's failed
/// passes from its log.
pub(super) async fn stuck(client: &Client, reconciler: &Reconciler) -> Result<()> {
    let mut states: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for b in Api::<GarageBucket>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await?
        .items
    {
        let (state, message) = ready_state(b.status.as_ref().and_then(|s| s.conditions.as_deref()));
        let e = states
            .entry(format!("bucket {state}"))
            .or_insert((0, message));
        e.0 += 1;
    }
    for k in Api::<GarageKey>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await?
        .items
    {
        let (state, message) = ready_state(k.status.as_ref().and_then(|s| s.conditions.as_deref()));
        let e = states.entry(format!("key {state}")).or_insert((0, message));
        e.0 += 1;
    }
    for (state, (count, message)) in &states {
        println!("    {count} {state}: \"{message}\"");
    }
    let pod = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), NS)
        .get_opt(POD)
        .await?;
    let pod_ready = pod
        .and_then(|p| p.status?.conditions)
        .and_then(|cs| cs.into_iter().find(|c| c.type_ == "Ready"))
        .map(|c| {
            format!(
                "{} since {} ({})",
                c.status,
                c.last_transition_time
                    .map(|t| t.0.to_string())
                    .unwrap_or_default(),
                c.message.unwrap_or_default()
            )
        });
    println!(
        "    storage pod {POD} Ready: {}",
        pod_ready.unwrap_or_else(|| "unknown".into())
    );
    let text = std::fs::read_to_string(reconciler.log())
        .with_context(|| format!("reading {}", reconciler.log().display()))?;
    let mut failures: BTreeMap<String, usize> = BTreeMap::new();
    for line in text.lines().filter(|l| l.contains("reconcile failed")) {
        let Ok(entry) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let error = entry["fields"]["error"].as_str().unwrap_or_default();
        *failures.entry(error.to_owned()).or_default() += 1;
    }
    for (error, count) in failures.iter().take(10) {
        println!("    reconciler log: {count} failed passes: {error}");
    }
    println!("    log: {}", reconciler.log().display());
    Ok(())
}

/// An Admin API client of the storage pod at `ip`, with the cluster's admin token.
pub(super) async fn admin_client(client: &Client, ip: IpAddr) -> Result<AdminClient> {
    let secret = Api::<Secret>::namespaced(client.clone(), NS)
        .get(&format!("{CLUSTER}-admin-token"))
        .await
        .context("reading the cluster's admin token Secret")?;
    let token = secret
        .data
        .as_ref()
        .and_then(|d| d.get("admin-token"))
        .context("the admin token Secret has no admin-token")?;
    Ok(AdminClient::new(
        &format!("http://{ip}:{ADMIN_PORT}"),
        &AdminToken::new(String::from_utf8(token.0.clone())?),
    )?)
}

/// Checks `SAMPLES` random pairs through the Admin API: the key `k-i` named in its status
/// holds read and write on the bucket of global alias `b-i`. Returns the one-line verdict.
pub(super) async fn sample(client: &Client, admin: &AdminClient, n: usize) -> Result<String> {
    let keys: Api<GarageKey> = Api::namespaced(client.clone(), NS);
    let mut picked: Vec<usize> = Vec::new();
    let mut random = random_words()?;
    while picked.len() < SAMPLES.min(n) {
        let i = (random.next().context("out of random words")? % n as u64) as usize + 1;
        if !picked.contains(&i) {
            picked.push(i);
        }
    }
    let mut verdicts = Vec::new();
    for i in picked {
        let key = keys.get(&format!("k-{i}")).await?;
        let Some(id) = key.status.as_ref().and_then(|s| s.access_key_id.clone()) else {
            println!("  k-{i}: no access key ID in its status");
            verdicts.push(format!("k-{i} FAILED"));
            continue;
        };
        let bucket = admin
            .bucket_info(BucketLookup::GlobalAlias(&format!("b-{i}")))
            .await
            .with_context(|| format!("GetBucketInfo globalAlias=b-{i}"))?;
        let info = admin
            .key_info(Lookup::Id(&id), false)
            .await
            .with_context(|| format!("GetKeyInfo {id}"))?;
        let on_key = info.buckets.iter().find(|b| b.id == bucket.id);
        let on_bucket = bucket.keys.iter().find(|k| k.access_key_id == id);
        let ok = on_key.is_some_and(|b| b.permissions.read && b.permissions.write)
            && on_bucket.is_some_and(|k| k.permissions.read && k.permissions.write);
        println!(
            "  k-{i} ({id}) on b-{i} ({}): key lists {:?}, bucket lists {:?}; the key holds {} bucket(s) -> {}",
            bucket.id,
            on_key.map(|b| b.permissions),
            on_bucket.map(|k| k.permissions),
            info.buckets.len(),
            if ok { "read+write" } else { "MISSING" }
        );
        verdicts.push(format!(
            "k-{i} {}",
            if ok { "read+write" } else { "MISSING" }
        ));
    }
    Ok(verdicts.join(", "))
}

/// Random 64-bit words from `/dev/urandom`.
fn random_words() -> Result<impl Iterator<Item = u64>> {
    let mut bytes = [0u8; 8 * 16];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").context("opening /dev/urandom")?,
        &mut bytes,
    )
    .context("reading /dev/urandom")?;
    Ok(bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect::<Vec<_>>()
        .into_iter())
}
