//! When certificates are replaced, and what the certificate Secret should hold next. Pure: the
//! clock and the stored material are arguments.

use std::time::{Duration, SystemTime};

use crate::bundle::{bundle_matches, next_retirement, trusted_bundle};
use crate::generate::{BACKDATE, KeyedCert, issue_serving, new_authority};
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

/// Until when CAs other than the signing one (whose validity is `signing`) must stay trusted.
///
/// Once a CA signs, no older CA signs again: every serving certificate an older CA signed was
/// issued before the signing CA was made (at most [`BACKDATE`] after its `not_before`), so it
/// expires no later than that plus the serving lifetime. Until then a replica may still serve
/// one (it has not read the new Secret yet, or cannot reach the API server), and the API server
/// must keep trusting its CA. The bound holds while the serving lifetime is not lengthened
/// between two CAs.
pub fn retirement_end(signing: Validity, lifetimes: &Lifetimes) -> SystemTime {
    signing.not_before + BACKDATE + lifetimes.serving
}

/// The DER certificates of a PEM bundle; an unreadable bundle has none.
fn bundle_certificates(bundle: &str) -> Vec<Vec<u8>> {
    inspect::certificates_der(bundle.as_bytes(), "CA bundle").unwrap_or_default()
}

/// The bundle `ca` (PEM) signs under, keeping those of `others` still in use at `now`.
fn bundle_for(
    ca: &str,
    others: &[Vec<u8>],
    lifetimes: &Lifetimes,
    now: SystemTime,
) -> Result<String, Error> {
    let end = retirement_end(inspect::validity(ca, "CA certificate")?, lifetimes);
    Ok(trusted_bundle(ca, others, Some(end), now))
}

/// Makes `material`, whose CA was just made, also trust the CAs of the caBundles installed now
/// (`installed`, DER): when the certificate Secret was deleted or unreadable, those are the
/// CAs that signed the certificates replicas still serve. They stay in the bundle until
/// [`retirement_end`] of the new CA, or their own end when sooner.
pub fn adopt_installed(
    material: &mut Material,
    installed: &[Vec<u8>],
    lifetimes: &Lifetimes,
    now: SystemTime,
) -> Result<(), Error> {
    let mut others = bundle_certificates(&material.bundle);
    others.extend(installed.iter().cloned());
    material.bundle = bundle_for(&material.ca.cert_pem, &others, lifetimes, now)?;
    Ok(())
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
/// A CA past its renewal point is replaced and the old one stays in the bundle until no
/// certificate it signed can be in use ([`retirement_end`]); a serving certificate is reissued
/// when it is due, names other hosts, was signed by another CA or does not match its key; a
/// bundle holding a CA no longer needed is rewritten without it. Anything unreadable starts
/// over with a new CA. A new CA's bundle holds only what the Secret held: the caller adds the
/// CAs installed in the API server ([`adopt_installed`]).
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
        let mut previous = bundle_certificates(&stored.ca.cert_pem);
        previous.extend(bundle_certificates(&stored.bundle));
        let bundle = bundle_for(&ca.cert_pem, &previous, lifetimes, now)?;
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
    // The signing CA first, then the retired CAs still in use: the signing CA must be in the
    // bundle or nothing it signs is trusted, and a CA no longer needed leaves it.
    let others = bundle_certificates(&stored.bundle);
    let bundle = bundle_for(&stored.ca.cert_pem, &others, lifetimes, now)?;
    let bundle_ok = bundle_matches(Some(stored.bundle.as_bytes()), bundle.as_bytes());
    match (problem, bundle_ok) {
        (None, true) => {
            let serving_at = serving_due(stored, lifetimes)?;
            let ca_at = renew_at(ca_validity, lifetimes.renew_at);
            let end = retirement_end(ca_validity, lifetimes);
            let retire_at = next_retirement(&stored.ca.cert_pem, &others, Some(end), now);
            Ok(Plan::Keep {
                material: stored.clone(),
                next_check: [Some(serving_at), Some(ca_at), retire_at]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap_or(serving_at),
            })
        }
        (problem, _) => {
            let serving = match problem {
                Some(_) => issue_serving(&stored.ca, names, now, lifetimes.serving)?,
                None => stored.serving.clone(),
            };
            let reason = problem.unwrap_or_else(|| {
                "the CA bundle lacks the signing CA or holds a CA no longer needed".to_owned()
            });
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

    fn kept(plan: Plan) -> (Material, SystemTime) {
        match plan {
            Plan::Keep {
                material,
                next_check,
            } => (material, next_check),
            Plan::Write { reason, .. } => panic!("rewrote: {reason}"),
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

        // The old CA leaves once the new one is a serving lifetime old: every certificate the
        // old one signed has expired by then.
        let retired = later + lifetimes().serving + BACKDATE;
        let (after, reason) = written(plan(Some(&next), &names(), &lifetimes(), retired).unwrap());
        assert!(!trusts(&after, &m.ca), "{reason}");
        assert!(trusts(&after, &next.ca));
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

    fn certificates(bundle: &str) -> Vec<Vec<u8>> {
        inspect::certificates_der(bundle.as_bytes(), "bundle").unwrap()
    }

    fn trusts(m: &Material, ca: &KeyedCert) -> bool {
        certificates(&m.bundle).contains(&certificates(&ca.cert_pem)[0])
    }

    /// The certificate Secret is deleted while replicas serve a certificate of its CA: the new
    /// material has a new CA, and its bundle also holds the old CA read from the installed
    /// caBundle, until no certificate the old CA signed can still be valid.
    #[test]
    fn a_deleted_secret_keeps_the_installed_ca_until_its_certificates_are_gone() {
        let start = SystemTime::now();
        let (old, _) = written(plan(None, &names(), &lifetimes(), start).unwrap());
        // What the webhook configurations carry: the old bundle.
        let installed = certificates(&old.bundle);

        let deleted_at = start + 5 * HOUR;
        let (mut new, reason) = written(plan(None, &names(), &lifetimes(), deleted_at).unwrap());
        assert!(reason.contains("no certificate material"), "{reason}");
        assert_ne!(new.ca, old.ca);
        assert!(
            !trusts(&new, &old.ca),
            "the Secret alone knows nothing of the old CA"
        );
        adopt_installed(&mut new, &installed, &lifetimes(), deleted_at).unwrap();
        assert!(
            new.bundle.starts_with(&new.ca.cert_pem),
            "the signing CA comes first"
        );
        assert!(trusts(&new, &new.ca) && trusts(&new, &old.ca));
        assert_eq!(certificates(&new.bundle).len(), 2);
        // The old serving certificate, still served by replicas, chains to the bundle.
        assert!(inspect::signed_by(&old.serving.cert_pem, &old.ca.cert_pem).unwrap());

        // Kept while any certificate the old CA signed can be valid, with a look scheduled
        // for the moment it can be dropped.
        let end = retirement_end(
            inspect::validity(&new.ca.cert_pem, "ca").unwrap(),
            &lifetimes(),
        );
        let old_leaf_end = inspect::validity(&old.serving.cert_pem, "leaf")
            .unwrap()
            .not_after;
        assert!(end >= old_leaf_end, "dropped before the old leaf expires");
        assert!(end <= deleted_at + lifetimes().serving + BACKDATE);
        let (material, next_check) =
            kept(plan(Some(&new), &names(), &lifetimes(), deleted_at + HOUR).unwrap());
        assert_eq!(material, new);
        assert!(next_check <= end, "{next_check:?} after {end:?}");

        // The new leaf is renewed (20 h) before the old CA's retirement (30 h): both stay.
        let (renewed, reason) =
            written(plan(Some(&new), &names(), &lifetimes(), deleted_at + 21 * HOUR).unwrap());
        assert!(reason.contains("due"), "{reason}");
        assert!(trusts(&renewed, &old.ca) && trusts(&renewed, &new.ca));

        // Past the end the old CA leaves and only the signing CA remains.
        let (pruned, reason) =
            written(plan(Some(&renewed), &names(), &lifetimes(), end + HOUR / 60).unwrap());
        assert!(reason.contains("no longer needed"), "{reason}");
        assert_eq!(certificates(&pruned.bundle), certificates(&new.ca.cert_pem));
        assert_eq!(pruned.serving, renewed.serving);
        kept(plan(Some(&pruned), &names(), &lifetimes(), end + HOUR / 30).unwrap());
    }

    #[test]
    fn an_installed_ca_that_expires_first_leaves_at_its_own_end() {
        let now = SystemTime::now();
        let short = new_authority(now, 2 * HOUR).unwrap();
        let (mut m, _) = written(plan(None, &names(), &lifetimes(), now).unwrap());
        adopt_installed(&mut m, &certificates(&short.cert_pem), &lifetimes(), now).unwrap();
        assert!(trusts(&m, &short));
        match plan(Some(&m), &names(), &lifetimes(), now + HOUR).unwrap() {
            Plan::Keep { next_check, .. } => assert_eq!(
                next_check,
                inspect::validity(&short.cert_pem, "short")
                    .unwrap()
                    .not_after
            ),
            Plan::Write { reason, .. } => panic!("rewrote: {reason}"),
        }
        let (next, _) = written(plan(Some(&m), &names(), &lifetimes(), now + 3 * HOUR).unwrap());
        assert!(!trusts(&next, &short));
        // Garbage among the installed bundles is ignored.
        adopt_installed(&mut m, &[b"junk".to_vec()], &lifetimes(), now).unwrap();
        assert!(trusts(&m, &m.ca.clone()));
    }
}
