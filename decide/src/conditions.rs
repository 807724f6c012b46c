//! Conditions that change only when their content does: an unchanged condition keeps its
//! `lastTransitionTime`, so a converged object's status compares equal and is not rewritten.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// A condition to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    /// Type.
    pub type_: &'static str,
    /// `True` or `False`.
    pub status: bool,
    /// Reason.
    pub reason: &'static str,
    /// Message (never a secret).
    pub message: String,
}

/// Merges `desired` into `current`: types listed in `owned` that are not desired are removed,
/// others are kept, and a condition whose status, reason, message and generation are unchanged
/// keeps its transition time.
pub fn merge(
    current: Option<&[Condition]>,
    desired: &[Desired],
    owned: &[&str],
    generation: Option<i64>,
) -> Vec<Condition> {
    let current = current.unwrap_or_default();
    let mut out: Vec<Condition> = current
        .iter()
        .filter(|c| {
            !owned.contains(&c.type_.as_str()) || desired.iter().any(|d| d.type_ == c.type_)
        })
        .filter(|c| !desired.iter().any(|d| d.type_ == c.type_))
        .cloned()
        .collect();
    for d in desired {
        let status = if d.status { "True" } else { "False" };
        let previous = current.iter().find(|c| c.type_ == d.type_);
        let time = match previous {
            Some(p) if p.status == status => p.last_transition_time.clone(),
            _ => Time(k8s_openapi::jiff::Timestamp::now()),
        };
        out.push(Condition {
            type_: d.type_.to_owned(),
            status: status.to_owned(),
            reason: d.reason.to_owned(),
            message: cap(&d.message),
            last_transition_time: time,
            observed_generation: generation,
        });
    }
    out.sort_by(|a, b| a.type_.cmp(&b.type_));
    out
}

/// Condition messages are capped at 4096 bytes, cut at a character boundary.
fn cap(message: &str) -> String {
    if message.len() <= 4096 {
        return message.to_owned();
    }
    let mut end = 4096;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(status: bool, message: &str) -> Desired {
        Desired {
            type_: "Ready",
            status,
            reason: "R",
            message: message.into(),
        }
    }

    #[test]
    fn unchanged_conditions_keep_their_time_and_compare_equal() {
        let first = merge(None, &[ready(false, "a")], &["Ready"], Some(1));
        let again = merge(Some(&first), &[ready(false, "a")], &["Ready"], Some(1));
        assert_eq!(first, again);
        let flipped = merge(Some(&first), &[ready(true, "b")], &["Ready"], Some(1));
        assert_eq!(flipped[0].status, "True");
    }

    #[test]
    fn owned_types_not_desired_are_removed_and_foreign_kept() {
        let mut current = merge(None, &[ready(true, "")], &["Ready"], Some(1));
        current.push(Condition {
            type_: "Other".into(),
            ..current[0].clone()
        });
        let out = merge(Some(&current), &[], &["Ready"], Some(1));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].type_, "Other");
        assert_eq!(cap(&"é".repeat(3000)).len(), 4096);
    }
}
