//! The Admin API calls on buckets: lifecycle, key permissions, aliases, website, quotas, CORS
//! and lifecycle rules.

use garage_api_types::{
    BucketAlias, BucketInfo, BucketListItem, BucketLookup, BucketPermissions, BucketUpdate,
    CreateBucket,
};
use serde::{Deserialize, Serialize};

use crate::error::GarageError;
use crate::transport::{AdminClient, Kind};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PermissionChange<'a> {
    bucket_id: &'a str,
    access_key_id: &'a str,
    permissions: BucketPermissions,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CleanupResponse {
    uploads_deleted: u64,
}

impl AdminClient {
    /// `ListBuckets`.
    pub async fn list_buckets(&self) -> Result<Vec<BucketListItem>, GarageError> {
        self.get("ListBuckets", &[]).await
    }

    /// `GetBucketInfo`. Only [`GarageError::NotFound`] means the bucket does not exist.
    pub async fn bucket_info(&self, lookup: BucketLookup<'_>) -> Result<BucketInfo, GarageError> {
        let query = match lookup {
            BucketLookup::Id(v) => ("id", v),
            BucketLookup::GlobalAlias(v) => ("globalAlias", v),
            BucketLookup::Search(v) => ("search", v),
        };
        self.get("GetBucketInfo", &[query]).await
    }

    /// `CreateBucket`. [`GarageError::AlreadyExists`] when the alias is taken.
    pub async fn create_bucket(&self, request: &CreateBucket) -> Result<BucketInfo, GarageError> {
        self.post("CreateBucket", &[], Some(request), Kind::Write)
            .await
    }

    /// `UpdateBucket?id=`: website, quotas, CORS and lifecycle rules.
    pub async fn update_bucket(
        &self,
        id: &str,
        update: &BucketUpdate,
    ) -> Result<BucketInfo, GarageError> {
        self.post("UpdateBucket", &[("id", id)], Some(update), Kind::Write)
            .await
    }

    /// `DeleteBucket?id=`. [`GarageError::BucketNotEmpty`] while it holds objects or
    /// unfinished uploads.
    pub async fn delete_bucket(&self, id: &str) -> Result<(), GarageError> {
        self.post_no_content::<()>("DeleteBucket", &[("id", id)], None)
            .await
    }

    /// `AllowBucketKey`: grants the permissions set to true (others are left as they are).
    pub async fn allow_bucket_key(
        &self,
        bucket_id: &str,
        access_key_id: &str,
        permissions: BucketPermissions,
    ) -> Result<BucketInfo, GarageError> {
        self.permission_change("AllowBucketKey", bucket_id, access_key_id, permissions)
            .await
    }

    /// `DenyBucketKey`: revokes the permissions set to true (others are left as they are).
    pub async fn deny_bucket_key(
        &self,
        bucket_id: &str,
        access_key_id: &str,
        permissions: BucketPermissions,
    ) -> Result<BucketInfo, GarageError> {
        self.permission_change("DenyBucketKey", bucket_id, access_key_id, permissions)
            .await
    }

    async fn permission_change(
        &self,
        endpoint: &'static str,
        bucket_id: &str,
        access_key_id: &str,
        permissions: BucketPermissions,
    ) -> Result<BucketInfo, GarageError> {
        let body = PermissionChange {
            bucket_id,
            access_key_id,
            permissions,
        };
        self.post(endpoint, &[], Some(&body), Kind::Write).await
    }

    /// `AddBucketAlias`.
    pub async fn add_bucket_alias(&self, alias: &BucketAlias) -> Result<BucketInfo, GarageError> {
        self.post("AddBucketAlias", &[], Some(alias), Kind::Write)
            .await
    }

    /// `RemoveBucketAlias`.
    pub async fn remove_bucket_alias(
        &self,
        alias: &BucketAlias,
    ) -> Result<BucketInfo, GarageError> {
        self.post("RemoveBucketAlias", &[], Some(alias), Kind::Write)
            .await
    }

    /// `CleanupIncompleteUploads`: aborts multipart uploads older than `older_than_secs`;
    /// returns how many were deleted.
    pub async fn cleanup_incomplete_uploads(
        &self,
        bucket_id: &str,
        older_than_secs: u64,
    ) -> Result<u64, GarageError> {
        let body = serde_json::json!({ "bucketId": bucket_id, "olderThanSecs": older_than_secs });
        let r: CleanupResponse = self
            .post("CleanupIncompleteUploads", &[], Some(&body), Kind::Write)
            .await?;
        Ok(r.uploads_deleted)
    }
}
