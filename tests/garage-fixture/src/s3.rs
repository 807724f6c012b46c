//! Objects written and read back through Garage's S3 API, the proof every end-to-end check
//! ends with: a bucket that accepts a PUT through one node and returns the same bytes
//! through another is a working cluster.
//!
//! Requests are presigned (SigV4 in the query string) so that any HTTP client can send them;
//! path-style addressing, because test endpoints are bare IP addresses.

use std::time::Duration;

use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

use crate::config::S3_REGION;

/// How long a presigned URL stays valid; long enough for a slow machine, short enough that a
/// leaked test URL is useless.
const PRESIGN_FOR: Duration = Duration::from_secs(600);

/// A failed S3 request, naming the object and what came back.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// The endpoint or bucket name does not form a valid S3 URL.
    #[error("S3 endpoint {endpoint} with bucket {bucket}: {reason}")]
    Address {
        /// The endpoint given.
        endpoint: String,
        /// The bucket given.
        bucket: String,
        /// Why no URL could be made.
        reason: String,
    },
    /// The HTTP client could not be built (no TLS provider, no resolver).
    #[error("building the S3 HTTP client: {0}")]
    Client(reqwest::Error),
    /// The request got no answer (connection refused, timeout, broken body).
    #[error("{method} {key} through {endpoint}: {source}")]
    Transport {
        /// HTTP method.
        method: &'static str,
        /// Object key.
        key: String,
        /// The endpoint it was sent to.
        endpoint: String,
        /// The client error.
        source: reqwest::Error,
    },
    /// Garage answered with an error status.
    #[error("{method} {key} through {endpoint}: HTTP {status}: {body}")]
    Status {
        /// HTTP method.
        method: &'static str,
        /// Object key.
        key: String,
        /// The endpoint it was sent to.
        endpoint: String,
        /// The status code.
        status: u16,
        /// The start of the error document Garage sent.
        body: String,
    },
    /// An object read back differs from what was written.
    #[error("{key} read back through {endpoint} as {got} bytes differing from the {sent} written")]
    Mismatch {
        /// Object key.
        key: String,
        /// The endpoint it was read through.
        endpoint: String,
        /// Bytes written.
        sent: usize,
        /// Bytes read.
        got: usize,
    },
}

/// One bucket seen through the S3 API with one key's credentials, at any node's endpoint.
#[derive(Clone)]
pub struct Objects {
    bucket: String,
    credentials: Credentials,
    http: reqwest::Client,
}

impl Objects {
    /// Objects of `bucket` (its global alias) accessed as the key `access_key_id`.
    pub fn new(
        bucket: &str,
        access_key_id: &str,
        secret_access_key: &str,
    ) -> Result<Self, S3Error> {
        // Endpoints are plain HTTP, but the client still wants a TLS provider chosen; the
        // workspace uses ring everywhere.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(S3Error::Client)?;
        Ok(Self {
            bucket: bucket.to_owned(),
            credentials: Credentials::new(access_key_id.to_owned(), secret_access_key.to_owned()),
            http,
        })
    }

    fn at(&self, endpoint: &str) -> Result<Bucket, S3Error> {
        let address = |reason: String| S3Error::Address {
            endpoint: endpoint.to_owned(),
            bucket: self.bucket.clone(),
            reason,
        };
        let url = endpoint.parse().map_err(|e| address(format!("{e}")))?;
        Bucket::new(url, UrlStyle::Path, self.bucket.clone(), S3_REGION)
            .map_err(|e| address(e.to_string()))
    }

    /// PUTs `body` as `key` through `endpoint`; an error unless Garage answers with success.
    pub async fn put(&self, endpoint: &str, key: &str, body: Vec<u8>) -> Result<(), S3Error> {
        let url = self
            .at(endpoint)?
            .put_object(Some(&self.credentials), key)
            .sign(PRESIGN_FOR);
        let sent = self.http.put(url).body(body).send().await;
        checked("PUT", key, endpoint, sent).await.map(drop)
    }

    /// GETs `key` through `endpoint`: its bytes, or an error naming the status.
    pub async fn get(&self, endpoint: &str, key: &str) -> Result<Vec<u8>, S3Error> {
        let url = self
            .at(endpoint)?
            .get_object(Some(&self.credentials), key)
            .sign(PRESIGN_FOR);
        let response = checked("GET", key, endpoint, self.http.get(url).send().await).await?;
        let body = response
            .bytes()
            .await
            .map_err(|source| S3Error::Transport {
                method: "GET",
                key: key.to_owned(),
                endpoint: endpoint.to_owned(),
                source,
            })?;
        Ok(body.to_vec())
    }

    /// DELETEs `key` through `endpoint`.
    pub async fn delete(&self, endpoint: &str, key: &str) -> Result<(), S3Error> {
        let url = self
            .at(endpoint)?
            .delete_object(Some(&self.credentials), key)
            .sign(PRESIGN_FOR);
        let sent = self.http.delete(url).send().await;
        checked("DELETE", key, endpoint, sent).await.map(drop)
    }

    /// Starts a multipart upload of `key` through `endpoint` and leaves it unfinished: its
    /// upload ID. rusty-s3 builds this request only with its XML feature, so it is presigned
    /// here with its signer and the ID read from the answer's `UploadId` element.
    pub async fn start_upload(&self, endpoint: &str, key: &str) -> Result<String, S3Error> {
        let url = self.at(endpoint)?.object_url(key);
        let url = rusty_s3::signing::sign(
            &jiff::Timestamp::now(),
            rusty_s3::Method::Post,
            url,
            self.credentials.key(),
            self.credentials.secret(),
            None,
            S3_REGION,
            PRESIGN_FOR.as_secs(),
            [("uploads", "")].into_iter(),
            std::iter::empty(),
        );
        let sent = self.http.post(url).send().await;
        let response = checked("CreateMultipartUpload", key, endpoint, sent).await?;
        let body = response.text().await.map_err(|source| S3Error::Transport {
            method: "CreateMultipartUpload",
            key: key.to_owned(),
            endpoint: endpoint.to_owned(),
            source,
        })?;
        body.split_once("<UploadId>")
            .and_then(|(_, rest)| rest.split_once("</UploadId>"))
            .map(|(id, _)| id.to_owned())
            .ok_or_else(|| S3Error::Status {
                method: "CreateMultipartUpload",
                key: key.to_owned(),
                endpoint: endpoint.to_owned(),
                status: 200,
                body: body.chars().take(300).collect(),
            })
    }

    /// Writes each `(key, body)` through `writer`, then reads every one back through `reader`
    /// and compares the bytes.
    pub async fn round_trip(
        &self,
        writer: &str,
        reader: &str,
        objects: &[(String, Vec<u8>)],
    ) -> Result<(), S3Error> {
        for (key, body) in objects {
            self.put(writer, key, body.clone()).await?;
        }
        for (key, body) in objects {
            let read = self.get(reader, key).await?;
            if &read != body {
                return Err(S3Error::Mismatch {
                    key: key.clone(),
                    endpoint: reader.to_owned(),
                    sent: body.len(),
                    got: read.len(),
                });
            }
        }
        Ok(())
    }
}

async fn checked(
    method: &'static str,
    key: &str,
    endpoint: &str,
    sent: Result<reqwest::Response, reqwest::Error>,
) -> Result<reqwest::Response, S3Error> {
    let response = sent.map_err(|source| S3Error::Transport {
        method,
        key: key.to_owned(),
        endpoint: endpoint.to_owned(),
        source,
    })?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body = response
        .text()
        .await
        .unwrap_or_default()
        .chars()
        .take(300)
        .collect();
    Err(S3Error::Status {
        method,
        key: key.to_owned(),
        endpoint: endpoint.to_owned(),
        status: status.as_u16(),
        body,
    })
}
