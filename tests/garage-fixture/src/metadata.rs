//! Damaging and restoring entries of a Garage node's metadata store (the LMDB engine, Garage's
//! default), while the node runs: what a table entry written by another Garage version, or
//! damaged on disk, looks like to the Admin API, reproduced on real Garage.
//!
//! Garage keeps each table in an LMDB database named `<table>:table`, whose keys are the hash
//! of an entry's partition key followed by its sort key. [`damage`] overwrites the value of
//! every entry whose key ends with a given sort key with a byte MessagePack reserves (so no
//! Garage version decodes it) and returns what was there; [`restore`] writes it back. LMDB
//! lets two processes share one store, each write in its own transaction, so the running node
//! reads the change at its next lookup.

use std::path::Path;

use heed::types::Bytes;
use heed::{Database, Env, EnvOpenOptions};

use crate::FixtureError;

/// The entries [`damage`] changed: (table, key, the value before).
pub type Damaged = Vec<(String, Vec<u8>, Vec<u8>)>;

/// A value no Garage version decodes: `0xc1` is the one byte MessagePack never uses.
const UNDECODABLE: &[u8] = &[0xc1];

fn invalid(what: &str, e: heed::Error) -> FixtureError {
    FixtureError::Invalid(format!("{what}: {e}"))
}

/// Opens the LMDB store in `metadata_dir` (`<metadata_dir>/db.lmdb`) as Garage does: the same
/// map size, so neither process has to grow its map for the other.
fn open(metadata_dir: &Path) -> Result<Env, FixtureError> {
    let path = metadata_dir.join("db.lmdb");
    if !path.join("data.mdb").is_file() {
        return Err(FixtureError::Invalid(format!(
            "no LMDB metadata store at {}: damage needs Garage's lmdb engine",
            path.display()
        )));
    }
    // SAFETY: heed marks opening unsafe because a store opened twice in one process, or
    // changed under LMDB by other means, breaks its memory map. Here it is opened once per
    // call and dropped before returning, and both processes change it through LMDB only.
    #[allow(unsafe_code)]
    unsafe {
        EnvOpenOptions::new()
            .max_dbs(100)
            .map_size(1 << 40)
            .max_readers(2048)
            .open(&path)
    }
    .map_err(|e| invalid(&format!("opening {}", path.display()), e))
}

/// Overwrites, in table `table` of the node whose metadata is in `metadata_dir`, every entry
/// whose key ends with `sort_key`; returns the entries as they were. None found is an error:
/// the caller damaged nothing it meant to.
pub fn damage(metadata_dir: &Path, table: &str, sort_key: &[u8]) -> Result<Damaged, FixtureError> {
    let env = open(metadata_dir)?;
    let name = format!("{table}:table");
    let mut txn = env
        .write_txn()
        .map_err(|e| invalid("write transaction", e))?;
    let db: Database<Bytes, Bytes> = env
        .open_database(&txn, Some(&name))
        .map_err(|e| invalid(&name, e))?
        .ok_or_else(|| {
            FixtureError::Invalid(format!("no table {name} in {}", metadata_dir.display()))
        })?;
    let found: Damaged = db
        .iter(&txn)
        .map_err(|e| invalid(&name, e))?
        .filter_map(Result::ok)
        .filter(|(k, _)| k.ends_with(sort_key))
        .map(|(k, v)| (name.clone(), k.to_vec(), v.to_vec()))
        .collect();
    if found.is_empty() {
        return Err(FixtureError::Invalid(format!(
            "no entry of {name} in {} ends with the sort key given",
            metadata_dir.display()
        )));
    }
    for (_, key, _) in &found {
        db.put(&mut txn, key, UNDECODABLE)
            .map_err(|e| invalid(&name, e))?;
    }
    txn.commit().map_err(|e| invalid("commit", e))?;
    Ok(found)
}

/// Writes back what [`damage`] returned.
pub fn restore(metadata_dir: &Path, damaged: &Damaged) -> Result<(), FixtureError> {
    let env = open(metadata_dir)?;
    let mut txn = env
        .write_txn()
        .map_err(|e| invalid("write transaction", e))?;
    for (name, key, value) in damaged {
        let db: Database<Bytes, Bytes> = env
            .open_database(&txn, Some(name))
            .map_err(|e| invalid(name, e))?
            .ok_or_else(|| FixtureError::Invalid(format!("no table {name}")))?;
        db.put(&mut txn, key, value).map_err(|e| invalid(name, e))?;
    }
    txn.commit().map_err(|e| invalid("commit", e))
}
