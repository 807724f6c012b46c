//! The Go operator's own Admin API token, left behind when it hands a cluster over.
//!
//! The Go operator authenticates to Garage with a token row it creates in Garage's token table
//! (scope `*`, never expiring), named `garage-operator:<namespace>/<name>:<cluster UID>`. It
//! pins the row's ID in the cluster's `operator-admin-token-id` annotation and keeps the bearer
//! in a Secret it labels `operator-admin-token=true`. This operator never uses that token: it
//! talks to Garage with the cluster's own admin token. Left in place, the row is a root
//! credential of the store that nothing needs, readable by anyone who can read that Secret.
//!
//! So once this operator runs the cluster, it revokes the row, then removes the pin and the
//! Secret. Only a row whose name proves it is the Go operator's token for a cluster of this
//! namespace and name is revoked; a pinned ID Garage does not know is only unpinned; a row of
//! any other name is left alone, with a warning Event, and the pin stays. Going back to the Go
//! operator later is unaffected: it creates a new token when its pinned one is gone.

use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::ANNOTATION_OPERATOR_ADMIN_TOKEN_ID;

use kube::ResourceExt;

/// What Garage holds under the pinned ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    /// No row has that ID.
    Absent,
    /// A row with this name.
    Named(String),
}

/// A Secret of the namespace labelled `operator-admin-token=true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSecret {
    /// Its name.
    pub name: String,
    /// Whether the cluster controls it (the Go operator made it owned by the cluster).
    pub controlled: bool,
    /// Its `operator-admin-token-name` annotation: the row it holds the bearer of.
    pub token_name: Option<String>,
}

/// What a pass read about the pinned token: the row Garage holds under its ID, and the token
/// Secrets of the namespace. Read only while the cluster carries a pin and Garage answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The row.
    pub row: Row,
    /// The Secrets labelled `operator-admin-token=true`.
    pub secrets: Vec<TokenSecret>,
}

/// What a pass does about the Go operator's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revoke {
    /// The row to delete from Garage, when it is there and proven the Go operator's.
    pub delete_row: Option<String>,
    /// The pin to remove (annotation and the value read), once the row is gone or absent.
    pub unpin: Option<(String, String)>,
    /// The Secrets to delete with the pin.
    pub delete_secrets: Vec<String>,
    /// Why nothing is revoked, when a row of another name has the pinned ID.
    pub refused: Option<String>,
}

/// The name prefix of the Go operator's token rows for `cluster`: its namespace and name,
/// whatever the UID (a row of an earlier cluster of the same name is the Go operator's too).
fn prefix(cluster: &GarageCluster) -> String {
    format!(
        "garage-operator:{}/{}:",
        cluster.namespace().unwrap_or_default(),
        cluster.name_any()
    )
}

/// The pinned ID, when the cluster carries one.
pub fn pinned(cluster: &GarageCluster) -> Option<&str> {
    cluster
        .annotations()
        .get(ANNOTATION_OPERATOR_ADMIN_TOKEN_ID)
        .map(String::as_str)
        .filter(|id| !id.trim().is_empty())
}

/// The revocation for `cluster`, given what the pass read (`None` when Garage could not be
/// read this pass). `None`: nothing to do this pass.
pub fn revoke(cluster: &GarageCluster, seen: Option<&Seen>) -> Option<Revoke> {
    let id = pinned(cluster)?;
    let Seen { row, secrets } = seen?;
    let prefix = prefix(cluster);
    let delete_row = match row {
        Row::Absent => None,
        Row::Named(name) if name.starts_with(&prefix) => Some(id.to_owned()),
        Row::Named(name) => {
            return Some(Revoke {
                delete_row: None,
                unpin: None,
                delete_secrets: Vec::new(),
                refused: Some(format!(
                    "the annotation {ANNOTATION_OPERATOR_ADMIN_TOKEN_ID} pins Admin API token {id}, named {name:?}, which is not the Go operator's token for this cluster (named {prefix}<uid>): it is left in Garage; remove the annotation if it is yours"
                )),
            });
        }
    };
    let delete_secrets = secrets
        .iter()
        .filter(|s| s.controlled)
        .filter(|s| {
            s.token_name
                .as_deref()
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .map(|s| s.name.clone())
        .collect();
    Some(Revoke {
        delete_row,
        unpin: Some((ANNOTATION_OPERATOR_ADMIN_TOKEN_ID.to_owned(), id.to_owned())),
        delete_secrets,
        refused: None,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn cluster(pin: Option<&str>) -> GarageCluster {
        let mut annotations = serde_json::Map::new();
        if let Some(id) = pin {
            annotations.insert(ANNOTATION_OPERATOR_ADMIN_TOKEN_ID.into(), json!(id));
        }
        serde_json::from_value(json!({
            "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
            "metadata": {"name": "garage", "namespace": "store", "uid": "u1",
                         "annotations": annotations},
            "spec": {},
        }))
        .unwrap()
    }

    fn seen(row: Row, secrets: &[TokenSecret]) -> Seen {
        Seen {
            row,
            secrets: secrets.to_vec(),
        }
    }

    fn secret(name: &str, controlled: bool, token: Option<&str>) -> TokenSecret {
        TokenSecret {
            name: name.into(),
            controlled,
            token_name: token.map(str::to_owned),
        }
    }

    #[test]
    fn the_go_operators_row_is_revoked_then_unpinned_with_its_secret() {
        let go = "garage-operator:store/garage:u1";
        let secrets = [
            secret("garage-operator-0a00e387", true, Some(go)),
            // Not the cluster's, or for another cluster: kept.
            secret("copied", false, Some(go)),
            secret("other", true, Some("garage-operator:store/other:u9")),
        ];
        let r = revoke(
            &cluster(Some("6b12")),
            Some(&seen(Row::Named(go.into()), &secrets)),
        )
        .unwrap();
        assert_eq!(r.delete_row.as_deref(), Some("6b12"));
        assert_eq!(
            r.unpin,
            Some((
                ANNOTATION_OPERATOR_ADMIN_TOKEN_ID.to_owned(),
                "6b12".to_owned()
            ))
        );
        assert_eq!(r.delete_secrets, ["garage-operator-0a00e387"]);
        assert_eq!(r.refused, None);
        // A row of an earlier cluster of the same name is the Go operator's too.
        let earlier = Row::Named("garage-operator:store/garage:u0".into());
        assert_eq!(
            revoke(&cluster(Some("6b12")), Some(&seen(earlier, &[])))
                .unwrap()
                .delete_row
                .as_deref(),
            Some("6b12")
        );
    }

    #[test]
    fn a_pinned_id_garage_does_not_know_is_only_unpinned() {
        let r = revoke(&cluster(Some("6b12")), Some(&seen(Row::Absent, &[]))).unwrap();
        assert_eq!(r.delete_row, None);
        assert!(r.unpin.is_some());
    }

    #[test]
    fn a_row_of_another_name_is_left_with_the_pin() {
        let mine = Row::Named("backup-job".into());
        let r = revoke(
            &cluster(Some("6b12")),
            Some(&seen(mine, &[secret("s", true, Some("x"))])),
        )
        .unwrap();
        assert_eq!(
            (r.delete_row, r.unpin, r.delete_secrets.len()),
            (None, None, 0)
        );
        assert!(r.refused.unwrap().contains("\"backup-job\""));
    }

    #[test]
    fn nothing_without_a_pin_or_a_read() {
        assert_eq!(revoke(&cluster(None), Some(&seen(Row::Absent, &[]))), None);
        assert_eq!(
            revoke(&cluster(Some(" ")), Some(&seen(Row::Absent, &[]))),
            None
        );
        assert_eq!(revoke(&cluster(Some("6b12")), None), None);
    }
}
