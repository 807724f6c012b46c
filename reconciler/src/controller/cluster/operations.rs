//! Runs the one-shot operational annotation the decision chose, records the outcome in
//! `status.lastOperation` and removes the annotation once it ran (or was malformed). The
//! removal is a JSON patch that first tests the value the pass read: a value the user changed
//! meanwhile is a new request and stays.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{Api, ResourceExt};
use shared_types::conditions::reason;
use shared_types::garage_cluster::common::OperationStatus;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::operations::Request;

use crate::controller::{Context, Error};
use crate::garage::{AdminClient, NodeTarget, RepairType, RetrySelection, ScrubCommand};
use decide::cluster::operations::Pending;
use decide::note::Note;

/// Runs `p`; returns the `status.lastOperation` to publish.
pub async fn run(
    cluster: &GarageCluster,
    admin: &AdminClient,
    p: &Pending,
    notes: &mut Vec<Note>,
    ctx: &Context,
) -> Result<OperationStatus, Error> {
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let request = match &p.request {
        Ok(r) => r,
        Err(form) => {
            let error = format!(
                "{}: {:?} is not a valid value; expected {form}. The annotation was removed",
                p.annotation, p.value
            );
            notes.push(Note::warning(
                reason::REASON_VALIDATION_FAILED,
                "OperationalAnnotation",
                error.clone(),
            ));
            remove(cluster, p, ctx).await?;
            return Ok(OperationStatus {
                error: Some(error),
                succeeded: Some(false),
                triggered_at: Some(now),
                type_: Some(
                    p.annotation
                        .rsplit('/')
                        .next()
                        .unwrap_or(p.annotation)
                        .to_owned(),
                ),
            });
        }
    };
    let (record_type, outcome) = match call(admin, request).await {
        Ok(summary) => (summary.unwrap_or_else(|| request.record_type()), Ok(())),
        Err(e) => (request.record_type(), Err(e)),
    };
    let status = match outcome {
        Ok(()) => {
            notes.push(Note::normal(
                "OperationSucceeded",
                "OperationalAnnotation",
                describe(request, &record_type),
            ));
            remove(cluster, p, ctx).await?;
            OperationStatus {
                error: None,
                succeeded: Some(true),
                triggered_at: Some(now),
                type_: Some(record_type),
            }
        }
        Err(e) => {
            let error = format!(
                "{record_type} failed: {e}; the annotation is kept and tried again on the next pass"
            );
            notes.push(Note::warning(
                reason::REASON_GARAGE_API_ERROR,
                "OperationalAnnotation",
                error.clone(),
            ));
            OperationStatus {
                error: Some(error),
                succeeded: Some(false),
                triggered_at: Some(now),
                type_: Some(record_type),
            }
        }
    };
    Ok(status)
}

/// The Event text of a request that ran; a purge names every block it was given.
fn describe(request: &Request, record_type: &str) -> String {
    match request {
        Request::PurgeBlocks(hashes) => format!(
            "{record_type}: deleted every object referencing blocks {}",
            hashes.join(", ")
        ),
        _ => format!("{record_type} done on every node"),
    }
}

/// The Admin API call of `request`; a summary that replaces the record type when the answer
/// carries a count.
async fn call(admin: &AdminClient, request: &Request) -> Result<Option<String>, String> {
    let all = NodeTarget::All;
    match request {
        Request::ConnectNodes(peers) => {
            let results = admin
                .connect_nodes(peers)
                .await
                .map_err(|e| e.to_string())?;
            let refused: Vec<String> = peers
                .iter()
                .zip(results)
                .filter(|(_, r)| !r.success)
                .map(|(p, r)| format!("{p}: {}", r.error.unwrap_or_default()))
                .collect();
            if refused.is_empty() {
                Ok(None)
            } else {
                Err(format!("not connected: {}", refused.join("; ")))
            }
        }
        Request::Snapshot => {
            let (_, bad) = admin
                .create_metadata_snapshot(&all)
                .await
                .map_err(|e| e.to_string())?
                .into_parts();
            every_node(&bad)?;
            Ok(None)
        }
        Request::Repair(kind) => {
            let repair = repair_type(kind).ok_or_else(|| format!("unknown repair {kind}"))?;
            launch(admin, repair).await
        }
        Request::Scrub(cmd) => {
            let scrub = scrub_command(cmd).ok_or_else(|| format!("unknown scrub command {cmd}"))?;
            launch(admin, RepairType::Scrub(scrub)).await
        }
        Request::RevertLayout => {
            admin.revert_layout().await.map_err(|e| e.to_string())?;
            Ok(None)
        }
        Request::RetryBlockResync(hashes) => {
            let selection = match hashes {
                None => RetrySelection::all(),
                Some(h) => RetrySelection::Hashes {
                    block_hashes: h.clone(),
                },
            };
            let (ok, bad) = admin
                .retry_block_resync(&all, &selection)
                .await
                .map_err(|e| e.to_string())?
                .into_parts();
            every_node(&bad)?;
            let count: u64 = ok.values().map(|c| c.count).sum();
            Ok(Some(format!("RetryBlockResync:{count}")))
        }
        Request::PurgeBlocks(hashes) => {
            let (ok, bad) = admin
                .purge_blocks(&all, hashes)
                .await
                .map_err(|e| e.to_string())?
                .into_parts();
            every_node(&bad)?;
            let objects: u64 = ok.values().map(|r| r.objects_deleted).sum();
            Ok(Some(format!("PurgeBlocks:{objects}-objects")))
        }
    }
}

async fn launch(admin: &AdminClient, repair: RepairType) -> Result<Option<String>, String> {
    let (_, bad) = admin
        .launch_repair(&NodeTarget::All, repair)
        .await
        .map_err(|e| e.to_string())?
        .into_parts();
    every_node(&bad)?;
    Ok(None)
}

/// An error naming the nodes whose part of a `node=*` call failed, and why.
fn every_node(
    failures: &std::collections::BTreeMap<crate::garage::NodeId, String>,
) -> Result<(), String> {
    if failures.is_empty() {
        return Ok(());
    }
    let each: Vec<String> = failures
        .iter()
        .map(|(id, e)| format!("{}: {e}", id.short()))
        .collect();
    Err(format!("failed on nodes {}", each.join("; ")))
}

fn repair_type(kind: &str) -> Option<RepairType> {
    Some(match kind {
        "Tables" => RepairType::Tables,
        "Blocks" => RepairType::Blocks,
        "Versions" => RepairType::Versions,
        "MultipartUploads" => RepairType::MultipartUploads,
        "BlockRefs" => RepairType::BlockRefs,
        "BlockRc" => RepairType::BlockRc,
        "Rebalance" => RepairType::Rebalance,
        "Aliases" => RepairType::Aliases,
        _ => return None,
    })
}

fn scrub_command(cmd: &str) -> Option<ScrubCommand> {
    Some(match cmd {
        "start" => ScrubCommand::Start,
        "pause" => ScrubCommand::Pause,
        "resume" => ScrubCommand::Resume,
        "cancel" => ScrubCommand::Cancel,
        _ => return None,
    })
}

/// Removes the annotation if it still holds the value the pass read.
async fn remove(cluster: &GarageCluster, p: &Pending, ctx: &Context) -> Result<(), Error> {
    let api: Api<GarageCluster> =
        Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    let read = [(p.annotation.to_owned(), p.value.clone())];
    crate::controller::one_shot::remove_request(&api, cluster, &read, ctx).await
}
