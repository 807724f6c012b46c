//! Runs a GarageBucket [`Plan`]: each step in order against Garage and the API server, then
//! the status it publishes and the requeue of its outcome. Nothing here decides; Garage's
//! answers only feed the published status and the ID of a bucket just created.

use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::garage_bucket::{GarageBucket, GarageBucketStatus};
use shared_types::keys::finalizer as finalizers;

use super::health;
use crate::controller::events::Note;
use crate::controller::garage_objects::key::act::{admin, apply_change};
use crate::controller::garage_objects::reach::Target;
use crate::controller::garage_objects::{action, patch_status_if_changed};
use crate::controller::{Context, Error, finalizer};
use crate::garage::{BucketInfo, BucketLookup, CreateBucket, GarageError};
use decide::garage_objects::bucket::operations::{Plan, Publish, Step};
use decide::garage_objects::bucket::status::ready_status;
use decide::garage_objects::drift_check;
use decide::garage_objects::outcome::Outcome;

/// What running a plan came to.
pub enum Acted {
    /// The pass is over: requeue so.
    Done(Action),
    /// The bucket was created and this status recorded with its ID: observe it again.
    Created(Box<GarageBucketStatus>),
}

/// Runs `plan` for `bucket`; `target` is its cluster when the plan has Garage steps.
pub async fn act(
    api: &Api<GarageBucket>,
    ctx: &Context,
    bucket: &GarageBucket,
    target: Option<&Target>,
    plan: Plan,
) -> Result<Acted, Error> {
    let mut garage = plan.garage;
    let mut created = None;
    for step in plan.steps {
        match run_step(api, ctx, bucket, target, step, &mut garage).await? {
            Ran::Next => {}
            Ran::Created(status) => created = Some(status),
            Ran::Stop(action) => return Ok(Acted::Done(action)),
        }
    }
    if let Some(status) = created {
        return Ok(Acted::Created(status));
    }
    match plan.publish {
        Publish::Status(status) => {
            patch_status_if_changed(api, ctx, bucket, bucket.status.as_ref(), &*status).await?;
        }
        Publish::Ready(ready) => {
            if let Some(info) = &garage {
                let status =
                    ready_status(bucket, *ready.status, ready.web_endpoint.as_deref(), info);
                patch_status_if_changed(api, ctx, bucket, bucket.status.as_ref(), &status).await?;
            }
        }
        Publish::Nothing => {}
    }
    if let Outcome::Waiting { message, .. } = &plan.outcome
        && bucket.metadata.deletion_timestamp.is_some()
    {
        tracing::info!(bucket = %bucket.name_any(), message, "deletion waits for the cluster");
    }
    Ok(Acted::Done(requeue(ctx, bucket, &plan.outcome)))
}

fn requeue(ctx: &Context, bucket: &GarageBucket, outcome: &Outcome) -> Action {
    action(
        outcome,
        drift_check(ctx.config.drift_resync, bucket.metadata.uid.as_deref()),
    )
}

/// What one step came to.
enum Ran {
    /// Go on.
    Next,
    /// The bucket was created; this status records its ID.
    Created(Box<GarageBucketStatus>),
    /// Garage refused as the plan foresaw: the pass ends so.
    Stop(Action),
}

/// Runs one step; `garage` is the bucket as Garage last answered.
async fn run_step(
    api: &Api<GarageBucket>,
    ctx: &Context,
    bucket: &GarageBucket,
    target: Option<&Target>,
    step: Step,
    garage: &mut Option<BucketInfo>,
) -> Result<Ran, Error> {
    match step {
        Step::Create {
            reservation,
            record,
        } => {
            ctx.metrics.wrote();
            let created = admin(target)?
                .create_bucket(&CreateBucket {
                    global_alias: Some(reservation),
                    local_alias: None,
                })
                .await?;
            tracing::info!(bucket = %bucket.name_any(), id = %created.id, "bucket created in Garage");
            // The ID is recorded at once: from here on the object finds its bucket by ID.
            let mut status = *record;
            status.bucket_id = Some(created.id);
            patch_status_if_changed(api, ctx, bucket, bucket.status.as_ref(), &status).await?;
            return Ok(Ran::Created(Box::new(status)));
        }
        Step::Record(status) => {
            patch_status_if_changed(api, ctx, bucket, bucket.status.as_ref(), &*status).await?;
        }
        Step::AddAlias(alias) => {
            ctx.metrics.wrote();
            *garage = Some(admin(target)?.add_bucket_alias(&alias).await?);
        }
        Step::RemoveAlias(alias) => {
            ctx.metrics.wrote();
            *garage = Some(admin(target)?.remove_bucket_alias(&alias).await?);
        }
        Step::Update { id, update } => {
            ctx.metrics.wrote();
            *garage = Some(admin(target)?.update_bucket(&id, &update).await?);
        }
        Step::Permission(change) => apply_change(ctx, target, &change).await?,
        Step::CleanupUploads {
            id,
            older_than,
            annotations,
        } => {
            ctx.metrics.wrote();
            let aborted = admin(target)?
                .cleanup_incomplete_uploads(&id, older_than.as_secs())
                .await?;
            let message = format!(
                "aborted {aborted} unfinished multipart upload(s) older than {}s",
                older_than.as_secs()
            );
            tracing::info!(bucket = %bucket.name_any(), id, aborted, "cleanup-mpu ran");
            let note = Note::normal("UploadsCleanedUp", "CleanupMultipartUploads", message);
            ctx.events.publish(bucket, &[note]).await;
            crate::controller::one_shot::remove_request(api, bucket, &annotations, ctx).await?;
        }
        Step::ReadBack(id) => {
            *garage = Some(admin(target)?.bucket_info(BucketLookup::Id(&id)).await?);
        }
        Step::Counts(counts) => health::write_counts(api, ctx, bucket, &counts).await?,
        Step::RequestRepair(cluster) => health::request_repair(ctx, bucket, &cluster).await?,
        Step::Delete { id, not_empty } => {
            ctx.metrics.wrote();
            match admin(target)?.delete_bucket(&id).await {
                Ok(()) => {
                    tracing::info!(bucket = %bucket.name_any(), id, "bucket deleted from Garage");
                }
                Err(e) if e.is_not_found() => {}
                Err(GarageError::BucketNotEmpty { .. }) => {
                    let current = bucket.status.as_ref();
                    patch_status_if_changed(api, ctx, bucket, current, &not_empty.status).await?;
                    return Ok(Ran::Stop(requeue(ctx, bucket, &not_empty.outcome)));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Step::LeaveInGarage => {
            tracing::warn!(bucket = %bucket.name_any(), "the cluster grant is gone; the bucket is left in Garage");
        }
        Step::RemoveFinalizer => {
            finalizer::set(
                api,
                &ctx.metrics,
                bucket,
                finalizers::FINALIZER_BUCKET,
                false,
            )
            .await?;
        }
    }
    Ok(Ran::Next)
}
