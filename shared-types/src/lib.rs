//! The API of garage-operator: the custom resource types of every kind and
//! version in the `garage.rajsingh.info` group, the CRDs assembled from them,
//! and the vocabulary (condition types and reasons, label, annotation,
//! finalizer and scheduling-gate keys) that the webhook and the reconciler
//! share.
//!
//! The types are field-for-field compatible with the Go operator's CRDs, so
//! existing manifests load unchanged, plus the fields the node-local pool and
//! VolumeAttributesClass designs add. Optional fields are `Option`s that are
//! left out when unset, so reading and writing an object never adds a value
//! the user did not write; defaults live in the CRD schema, where the API
//! server applies them.

pub mod common;
pub mod conditions;
pub mod crds;
pub mod drain;
pub mod duration;
pub mod garage_admin_token;
pub mod garage_bucket;
pub mod garage_cluster;
pub mod garage_key;
pub mod garage_node;
pub mod garage_reference_grant;
pub mod keys;
pub mod operations;
pub mod quantity;
pub mod schema;
pub mod selector;
