//! When certificates are replaced, and what the certificate Secret should hold next. Pure: the
//! clock and the stored material are arguments.

use std::time::{Duration, SystemTime};

use crate::bundle::{bundle_matches, rotate_bundle};
use crate::generate::{KeyedCert, issue_serving, new_authority};
use crate::inspect::{self, Validity};
use crate::{Error, Lifetimes, resolver};

/// The instant after which a certificate with `validity` is replaced: `renew_at` of the way
/// from its start to its end.
pub fn renew_at(validity: Validity, renew_at: (u32, u32)) -> SystemTime {
    let span = validity
        .not_after
        .duration_since(validity.not_before)
        .unwrap_or(Duration::ZERO);
    let (num, den) = renew_at;
    let part = span
        .checked_mul(num)
        .and_then(|d| d.checked_div(den.max(1)))
        .unwrap_or(span);
    validity.not_before + part
}

/// Whether a certificate is kept or replaced now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Keep it until `until`.
    Keep {
        /// When it becomes due.
        until: SystemTime,
    },
    /// Replace it now.
    Renew,
}

/// Decides for one certificate.
pub fn decide(validity: Validity, fraction: (u32, u32), now: SystemTime) -> Decision {
    let due = renew_at(validity, fraction);
    if now >= due || now >= validity.not_after {
        Decision::Renew
    } else {
        Decision::Keep { until: due }
    }
}

/// What the certificate Secret holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Material {
    /// The CA that signs serving certificates now.
    pub ca: KeyedCert,
    /// Every CA the API server should trust, the signing CA first (PEM).
    pub bundle: String,
    /// The serving certificate and key.
    pub serving: KeyedCert,
}

/// The next state of the Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// The stored material is good; look again at `next_check` at the latest.
    Keep {
        /// The stored material.
        material: Material,
        /// When the first certificate becomes due.
        next_check: SystemTime,
    },
    /// Write `material` (create or replace the Secret).
    Write {
        /// The new material.
        material: Material,
        /// Why, for the log.
        reason: String,
    },
}

fn fresh(names: &[String], lifetimes: &Lifetimes, now: SystemTime) -> Result<Material, Error> {
    let ca = new_authority(now, lifetimes.ca)?;
    let serving = issue_serving(&ca, names, now, lifetimes.serving)?;
    Ok(Material {
        bundle: ca.cert_pem.clone(),
        ca,
        serving,
    })
}

/// Why the stored serving certificate must be replaced although the CA is fine, if it must.
fn serving_problem(
    material: &Material,
    names: &[String],
    lifetimes: &Lifetimes,
    now: SystemTime,
) -> Result<Option<String>, Error> {
    let serving = &material.serving;
    let validity = inspect::validity(&serving.cert_pem, "serving certificate")?;
    if decide(validity, lifetimes.renew_at, now) == Decision::Renew {
        return Ok(Some(
            "the serving certificate is due for renewal".to_owned(),
        ));
    }
    let mut have = inspect::subject_alt_names(&serving.cert_pem)?;
    let mut want = names.to_vec();
    have.sort();
    want.sort();
    if have != want {
        return Ok(Some(format!(
            "the serving certificate names {have:?}, configured {want:?}"
        )));
    }
    if !inspect::signed_by(&serving.cert_pem, &material.ca.cert_pem)? {
        return Ok(Some(
            "the serving certificate is not signed by the stored CA".to_owned(),
        ));
    }
    if let Err(e) = resolver::certified_key(&serving.cert_pem, &serving.key_pem) {
        return Ok(Some(format!("the serving keypair does not load: {e}")));
    }
    Ok(None)
}

fn serving_due(material: &Material, lifetimes: &Lifetimes) -> Result<SystemTime, Error> {
    let v = inspect::validity(&material.serving.cert_pem, "serving certificate")?;
    Ok(renew_at(v, lifetimes.renew_at))
}

/// Decides what the Secret should hold, given what it holds now (`None`: no Secret, or one
/// whose material does not parse), the serving names and the lifetimes.
///
/// A CA past its renewal point is replaced and the old one stays in the bundle while it is
/// valid; a serving certificate is reissued when it is due, names other hosts, was signed by
/// another CA or does not match its key. Anything unreadable starts over with a new CA.
pub fn plan(
    stored: Option<&Material>,
    names: &[String],
    lifetimes: &Lifetimes,
    now: SystemTime,
) -> Result<Plan, Error> {
    let Some(stored) = stored else {
        return Ok(Plan::Write {
            material: fresh(names, lifetimes, now)?,
            reason: "no certificate material is stored yet".to_owned(),
        });
    };
    let ca_validity = match inspect::validity(&stored.ca.cert_pem, "CA certificate") {
        Ok(v) => v,
        Err(e) => {
            return Ok(Plan::Write {
                material: fresh(names, lifetimes, now)?,
                reason: format!("the stored CA is unreadable ({e}); starting over"),
            });
        }
    };
    if let Decision::Renew = decide(ca_validity, lifetimes.renew_at, now) {
        let ca = new_authority(now, lifetimes.ca)?;
        let serving = issue_serving(&ca, names, now, lifetimes.serving)?;
        let bundle = rotate_bundle(&ca.cert_pem, &stored.bundle, now);
        return Ok(Plan::Write {
            material: Material {
                ca,
                bundle,
                serving,
            },
            reason: "the CA is due for renewal".to_owned(),
        });
    }
    let problem = match serving_problem(stored, names, lifetimes, now) {
        Ok(problem) => problem,
        Err(e) => Some(format!(
            "the stored serving certificate is unreadable ({e})"
        )),
    };
    // The signing CA must be in the bundle, or nothing it signs is trusted.
    let bundle_ok = inspect::certificates_der(stored.ca.cert_pem.as_bytes(), "CA certificate")
        .ok()
        .and_then(|ca| ca.into_iter().next())
        .is_some_and(|ca| {
            inspect::certificates_der(stored.bundle.as_bytes(), "CA bundle")
                .is_ok_and(|bundle| bundle.contains(&ca))
        });
    match (problem, bundle_ok) {
        (None, true) => {
            let serving_at = serving_due(stored, lifetimes)?;
            let ca_at = renew_at(ca_validity, lifetimes.renew_at);
            Ok(Plan::Keep {
                material: stored.clone(),
                next_check: serving_at.min(ca_at),
            })
        }
        (problem, _) => {
            let serving = match problem {
                Some(_) => issue_serving(&stored.ca, names, now, lifetimes.serving)?,
                None => stored.serving.clone(),
            };
            let bundle = rotate_bundle(&stored.ca.cert_pem, &stored.bundle, now);
            let reason = problem.unwrap_or_else(|| "the CA bundle lacks the signing CA".to_owned());
            Ok(Plan::Write {
                material: Material {
                    ca: stored.ca.clone(),
                    bundle,
                    serving,
                },
                reason,
            })
        }
    }
}

/// Whether two materials would make the API server trust the same CAs.
pub fn same_bundle(a: &Material, b: &Material) -> bool {
    bundle_matches(Some(a.bundle.as_bytes()), b.bundle.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn names() -> Vec<String> {
        vec!["svc".into(), "svc.ns".into(), "svc.ns.svc".into()]
    }

    fn lifetimes() -> Lifetimes {
        Lifetimes {
            ca: 300 * HOUR,
            serving: 30 * HOUR,
            renew_at: (2, 3),
        }
    }

    fn written(plan: Plan) -> (Material, String) {
        match plan {
            Plan::Write { material, reason } => (material, reason),
            Plan::Keep { .. } => panic!("expected a write"),
        }
    }

    #[test]
    fn renewal_happens_at_two_thirds() {
        let start = SystemTime::UNIX_EPOCH + 1000 * HOUR;
        let v = Validity {
            not_before: start,
            not_after: start + 90 * HOUR,
        };
        assert_eq!(renew_at(v, (2, 3)), start + 60 * HOUR);
        assert_eq!(
            decide(v, (2, 3), start + 59 * HOUR),
            Decision::Keep {
                until: start + 60 * HOUR
            }
        );
        assert_eq!(decide(v, (2, 3), start + 60 * HOUR), Decision::Renew);
        assert_eq!(decide(v, (2, 3), start + 200 * HOUR), Decision::Renew);
    }

    #[test]
    fn nothing_stored_makes_a_fresh_ca_and_leaf() {
        let now = SystemTime::now();
        let (m, _) = written(plan(None, &names(), &lifetimes(), now).unwrap());
        assert_eq!(m.bundle, m.ca.cert_pem);
        assert!(inspect::signed_by(&m.serving.cert_pem, &m.ca.cert_pem).unwrap());
    }

    #[test]
    fn fresh_material_is_kept_until_the_leaf_is_due() {
        let now = SystemTime::now();
        let (m, _) = written(plan(None, &names(), &lifetimes(), now).unwrap());
        match plan(Some(&m), &names(), &lifetimes(), now + HOUR).unwrap() {
            Plan::Keep {
                material,
                next_check,
            } => {
                assert_eq!(material, m);
                let leaf = inspect::validity(&m.serving.cert_pem, "leaf").unwrap();
                assert_eq!(next_check, renew_at(leaf, (2, 3)));
            }
            Plan::Write { reason, .. } => panic!("rewrote: {reason}"),
        }
    }

    #[test]
    fn a_due_leaf_is_reissued_by_the_same_ca() {
        let now = SystemTime::now();
        let (m, _) = written(plan(None, &names(), &lifetimes(), now).unwrap());
        let (next, reason) =
            written(plan(Some(&m), &names(), &lifetimes(), now + 25 * HOUR).unwrap());
        assert!(reason.contains("due"), "{reason}");
        assert_eq!(next.ca, m.ca);
        assert_eq!(next.bundle, m.bundle);
        assert_ne!(next.serving, m.serving);
        assert!(inspect::signed_by(&next.serving.cert_pem, &m.ca.cert_pem).unwrap());
    }

    #[test]
    fn changed_names_reissue_the_leaf() {
        let now = SystemTime::now();
        let (m, _) = written(plan(None, &names(), &lifetimes(), now).unwrap());
        let mut other = names();
        other.push("127.0.0.1".into());
        let (next, reason) = written(plan(Some(&m), &other, &lifetimes(), now).unwrap());
        assert!(reason.contains("names"), "{reason}");
        assert_eq!(next.ca, m.ca);
    }

    #[test]
    fn a_due_ca_is_rotated_and_the_old_one_stays_trusted() {
        let now = SystemTime::now();
        let (m, _) = written(plan(None, &names(), &lifetimes(), now).unwrap());
        let later = now + 210 * HOUR;
        let (next, reason) = written(plan(Some(&m), &names(), &lifetimes(), later).unwrap());
        assert!(reason.contains("CA"), "{reason}");
        assert_ne!(next.ca, m.ca);
        assert!(inspect::signed_by(&next.serving.cert_pem, &next.ca.cert_pem).unwrap());
        let both = format!("{}{}", next.ca.cert_pem, m.ca.cert_pem);
        assert!(bundle_matches(
            Some(next.bundle.as_bytes()),
            both.as_bytes()
        ));
        assert!(!same_bundle(&m, &next));
    }

    #[test]
    fn a_mismatched_key_or_foreign_leaf_is_replaced() {
        let now = SystemTime::now();
        let (m, _) = written(plan(None, &names(), &lifetimes(), now).unwrap());
        let (other, _) = written(plan(None, &names(), &lifetimes(), now).unwrap());
        let mut swapped = m.clone();
        swapped.serving.key_pem = other.serving.key_pem.clone();
        let (_, reason) = written(plan(Some(&swapped), &names(), &lifetimes(), now).unwrap());
        assert!(reason.contains("keypair"), "{reason}");
        let mut foreign = m.clone();
        foreign.serving = other.serving.clone();
        let (_, reason) = written(plan(Some(&foreign), &names(), &lifetimes(), now).unwrap());
        assert!(reason.contains("not signed"), "{reason}");
    }

    #[test]
    fn unreadable_material_starts_over() {
        let now = SystemTime::now();
        let (mut m, _) = written(plan(None, &names(), &lifetimes(), now).unwrap());
        m.ca.cert_pem = "junk".into();
        let (next, reason) = written(plan(Some(&m), &names(), &lifetimes(), now).unwrap());
        assert!(reason.contains("starting over"), "{reason}");
        assert!(inspect::signed_by(&next.serving.cert_pem, &next.ca.cert_pem).unwrap());
    }
}
