//! What a GarageBucket pass reads before it decides: the bucket in Garage this object owns
//! (by `spec.bucketId`, the ID in its status, or its reservation alias), the bucket its wanted
//! global alias names when it lacks that alias, and the keys, buckets and grants of its
//! cluster. A bucket Garage does not have is a fact; a lookup that timed out or that Garage
//! could not decode is the fact [`Identity::Unreadable`]; any other failed read is an error.

use kube::ResourceExt;
use shared_types::garage_bucket::GarageBucket;

use crate::controller::garage_objects::reach::{Cleaning, Target};
use crate::controller::garage_objects::{Me, Stores, cluster_deleting};
use crate::controller::{Context, Error};
use crate::garage::{AdminClient, BucketInfo, BucketLookup, GarageError};
use decide::garage_objects::bucket::health::{ClusterRef, LookupFailure};
use decide::garage_objects::bucket::operations::{
    Cleanup, Found, Identity, Observed, ObservedDeletion,
};
use decide::garage_objects::bucket::{reservation_alias, wanted_alias};
use shared_types::keys::annotation::ANNOTATION_TRIGGER_REPAIR;

/// The facts of a pass over a live bucket whose cluster `target` answers.
pub async fn observe(
    ctx: &Context,
    stores: &Stores,
    bucket: &GarageBucket,
    target: &Target,
) -> Result<Observed, Error> {
    Ok(Observed {
        bucket: bucket.clone(),
        identity: identity(ctx, stores, bucket, target).await?,
        web_endpoint: target.web_endpoint.clone(),
        cluster: ClusterRef {
            namespace: target.cluster.namespace().unwrap_or_default(),
            name: target.cluster.name_any(),
            pending_repair: target
                .cluster
                .annotations()
                .get(ANNOTATION_TRIGGER_REPAIR)
                .cloned(),
            resource_version: target.cluster.resource_version(),
        },
    })
}

async fn identity(
    ctx: &Context,
    stores: &Stores,
    bucket: &GarageBucket,
    target: &Target,
) -> Result<Identity, Error> {
    let (info, alias_holder) = match find(&target.admin, bucket).await {
        Ok(Looked::Found(info, holder)) => (*info, holder),
        Ok(Looked::Other(identity)) => return Ok(identity),
        Err(e) if e.is_timeout() => {
            return Ok(Identity::Unreadable(LookupFailure::Timeout(e.to_string())));
        }
        Err(e) if e.is_metadata_decode() => {
            return Ok(Identity::Unreadable(LookupFailure::MetadataDecode(
                e.to_string(),
            )));
        }
        Err(e) => return Err(e.into()),
    };
    let mut me = bucket.clone();
    me.status.get_or_insert_with(Default::default).bucket_id = Some(info.id.clone());
    let snapshot = stores.snapshot(ctx, target, Me::Bucket(me)).await?;
    Ok(Identity::Found(Box::new(Found {
        info,
        alias_holder,
        snapshot,
    })))
}

/// What the lookups of a bucket found.
enum Looked {
    /// This object's bucket, and the bucket its wanted global alias names when it lacks it.
    Found(Box<BucketInfo>, Option<String>),
    /// No bucket of this object's, or a recorded one gone.
    Other(Identity),
}

/// Finds the bucket this object owns: by `spec.bucketId` or the recorded ID, else by its
/// reservation alias.
async fn find(admin: &AdminClient, bucket: &GarageBucket) -> Result<Looked, GarageError> {
    let known = bucket
        .spec
        .bucket_id
        .clone()
        .filter(|s| !s.is_empty())
        .or_else(|| bucket.status.as_ref().and_then(|s| s.bucket_id.clone()));
    let alias = wanted_alias(bucket);
    let info = match known {
        Some(id) => match lookup(admin, BucketLookup::Id(&id)).await? {
            Some(info) => info,
            None => return Ok(Looked::Other(Identity::Missing(id))),
        },
        None => {
            let reservation = reservation_alias(&bucket.uid().unwrap_or_default());
            match lookup(admin, BucketLookup::GlobalAlias(&reservation)).await? {
                Some(info) => info,
                None => {
                    let holder = lookup(admin, BucketLookup::GlobalAlias(&alias)).await?;
                    return Ok(Looked::Other(Identity::New {
                        alias_holder: holder.map(|b| b.id),
                    }));
                }
            }
        }
    };
    let alias_holder = if info.global_aliases.contains(&alias) {
        None
    } else {
        lookup(admin, BucketLookup::GlobalAlias(&alias))
            .await?
            .map(|b| b.id)
    };
    Ok(Looked::Found(Box::new(info), alias_holder))
}

/// The bucket `lookup` finds; `None` when Garage has none.
async fn lookup(
    admin: &AdminClient,
    lookup: BucketLookup<'_>,
) -> Result<Option<BucketInfo>, GarageError> {
    match admin.bucket_info(lookup).await {
        Ok(info) => Ok(Some(info)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// The facts of a pass over a deleted bucket whose cluster cleanup reaches as `reached` says.
pub async fn observe_deletion(
    ctx: &Context,
    bucket: &GarageBucket,
    reached: &Cleaning,
) -> Result<ObservedDeletion, Error> {
    let cluster = match reached {
        Cleaning::Reached(target) => Cleanup::Reached {
            granted: target.granted,
        },
        Cleaning::Gone => Cleanup::Gone,
        Cleaning::Unreachable { reason, message } => Cleanup::Unreachable {
            reason,
            message: message.clone(),
            cluster_deleting: cluster_deleting(
                ctx,
                &bucket.namespace().unwrap_or_default(),
                &bucket.spec.cluster_ref,
            )
            .await?,
        },
    };
    Ok(ObservedDeletion {
        bucket: bucket.clone(),
        cluster,
    })
}
