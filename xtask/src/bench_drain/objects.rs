//! The data a drain has to keep: objects of pseudo-random content written through S3 before
//! the drain and read back byte for byte after it, in a bucket and key made through the Admin
//! API. The floor and the operator run use the same objects.

use anyhow::{Context as _, Result, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use garage_admin::{AdminClient, BucketPermissions, CreateBucket, KeySpec};
use garage_fixture::s3::Objects;

/// Bucket alias and key name of the bench.
const BUCKET: &str = "drain-bench";
/// Requests in flight at once: enough to keep garage busy without the client taking a core.
const IN_FLIGHT: usize = 8;
/// Smallest object; the largest is 64 KiB, so every object is one Garage block.
const MIN_LEN: usize = 1024;
/// Spread of the object sizes above [`MIN_LEN`].
const LEN_SPREAD: u64 = 63 * 1024;

/// `n` objects named `object-<i>`, 1 to 64 KiB of content each, the same for the same `n`.
pub(crate) fn generate(n: usize) -> Vec<(String, Vec<u8>)> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..n)
        .map(|i| {
            let len = MIN_LEN + usize::try_from(next(&mut state) % LEN_SPREAD).unwrap_or(0);
            let mut body = Vec::with_capacity(len + 8);
            while body.len() < len {
                body.extend_from_slice(&next(&mut state).to_le_bytes());
            }
            body.truncate(len);
            (format!("object-{i}"), body)
        })
        .collect()
}

/// xorshift64*: incompressible enough that Garage stores every byte, and no dependency.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// Creates the bench's bucket and a key allowed to read and write it; returns the key's view
/// of the bucket.
pub(crate) async fn bucket(admin: &AdminClient) -> Result<Objects> {
    let key = admin
        .create_key(&KeySpec {
            name: Some(BUCKET.into()),
            ..Default::default()
        })
        .await
        .context("creating the bench's key")?;
    let bucket = admin
        .create_bucket(&CreateBucket {
            global_alias: Some(BUCKET.into()),
            ..Default::default()
        })
        .await
        .context("creating the bench's bucket")?;
    admin
        .allow_bucket_key(
            &bucket.id,
            &key.access_key_id,
            BucketPermissions {
                read: true,
                write: true,
                owner: false,
            },
        )
        .await
        .context("allowing the key on the bucket")?;
    let secret = key
        .secret_access_key
        .as_deref()
        .context("CreateKey returned no secret")?;
    Ok(Objects::new(BUCKET, &key.access_key_id, secret)?)
}

/// PUTs every object through `endpoint`.
pub(crate) async fn write(
    store: &Objects,
    endpoint: &str,
    objects: &[(String, Vec<u8>)],
) -> Result<()> {
    futures::stream::iter(objects)
        .map(|(name, body)| async move {
            store
                .put(endpoint, name, body.clone())
                .await
                .with_context(|| format!("writing {name} through {endpoint}"))
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<()>()
        .await
}

/// GETs every object through `endpoint` and fails unless each reads back byte-identical.
pub(crate) async fn verify(
    store: &Objects,
    endpoint: &str,
    objects: &[(String, Vec<u8>)],
) -> Result<()> {
    futures::stream::iter(objects)
        .map(|(name, body)| async move {
            let got = store
                .get(endpoint, name)
                .await
                .with_context(|| format!("reading {name} through {endpoint}"))?;
            if got != *body {
                bail!(
                    "{name} read back through {endpoint} as {} bytes differing from the {} written",
                    got.len(),
                    body.len()
                );
            }
            Ok(())
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<()>()
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_deterministic_distinct_and_within_bounds() {
        let a = generate(50);
        assert_eq!(a, generate(50));
        assert!(
            a.iter()
                .all(|(_, b)| (MIN_LEN..=MIN_LEN + 63 * 1024).contains(&b.len()))
        );
        assert_ne!(a[0].1, a[1].1);
    }
}
