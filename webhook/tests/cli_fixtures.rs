//! The recorded AdmissionReviews under tests/fixtures/admission through the `garage-webhook
//! review` and `convert` commands: exit codes and the key response fields.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/admission")
}

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/upstream-samples")
}

/// SH-20's hash of the drained fixtures' node sets (roles and storage both the single ID
/// `a…a`), computed outside this crate from the definition.
const DRAINED_HASH: &str =
    "sha256:557da8946bf94cc288b028c3067853b711e0f918f0b26c8d0368ea1157f4c6bd";

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_garage-webhook"))
        .args(args)
        .current_dir(fixtures())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

struct Case {
    file: &'static str,
    exit: i32,
    /// Substrings of `response.status.message` (or of stderr for exit 2 without output).
    message: &'static [&'static str],
    code: Option<u64>,
    patch: bool,
}

const CASES: &[Case] = &[
    Case {
        file: "cluster-v1beta2-create-allowed.json",
        exit: 0,
        message: &[],
        code: None,
        patch: true,
    },
    Case {
        file: "cluster-v1beta1-create-allowed.yaml",
        exit: 0,
        message: &[],
        code: None,
        patch: true,
    },
    Case {
        file: "cluster-v1beta2-update-allowed.json",
        exit: 0,
        message: &[],
        code: None,
        patch: true,
    },
    Case {
        file: "cluster-v1beta2-delete.json",
        exit: 0,
        message: &[],
        code: None,
        patch: false,
    },
    Case {
        file: "cluster-v1beta2-create-denied-replicas.json",
        exit: 1,
        message: &["spec.storage.replicas", "[GC-C15]"],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "cluster-v1beta2-create-denied-tier-shape.json",
        exit: 1,
        message: &["spec.connectTo", "[GC-C14]"],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "cluster-v1beta2-create-invalid-wrong-kind.json",
        exit: 2,
        message: &[
            "GarageNode",
            "reviews garage.rajsingh.info/v1beta2 GarageCluster",
        ],
        code: Some(400),
        patch: false,
    },
    Case {
        file: "cluster-scale-update-denied-stale.json",
        exit: 1,
        message: &["stale GarageCluster scale resourceVersion", "[SC-5]"],
        code: Some(409),
        patch: false,
    },
    Case {
        file: "cluster-v1beta1-scale-update-allowed.json",
        exit: 0,
        message: &[],
        code: None,
        patch: false,
    },
    Case {
        file: "cluster-v1beta2-delete-denied-foreground.json",
        exit: 1,
        message: &["options.propagationPolicy", "[GC-D7]"],
        code: Some(403),
        patch: false,
    },
    // The first validator's denial and the failed conversion for the second are both
    // denials: exit 1 with every message, not "unusable input".
    Case {
        file: "cluster-v1beta1-create-denied-unconvertible.json",
        exit: 1,
        message: &[
            "[G1-C3]",
            "does not convert to garage.rajsingh.info/v1beta2",
            "\"Sometimes\"",
        ],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "node-create-allowed.json",
        exit: 0,
        message: &[],
        code: None,
        patch: false,
    },
    Case {
        file: "node-create-denied-remote-cluster-ref.json",
        exit: 1,
        message: &["remoteClusterRef is not supported", "[GN-C1]"],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "pvc-update-allowed-label.json",
        exit: 0,
        message: &["barrier was not removed"],
        code: None,
        patch: false,
    },
    Case {
        file: "pvc-update-denied-finalizer-removed.json",
        exit: 1,
        message: &["pvc-reservation", "[PVC-5]"],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "bucket-create-allowed.json",
        exit: 0,
        message: &[],
        code: None,
        patch: true,
    },
    Case {
        file: "bucket-create-cross-namespace-allowed.json",
        exit: 0,
        message: &[],
        code: None,
        patch: true,
    },
    Case {
        file: "bucket-create-denied-alias.json",
        exit: 1,
        message: &["spec.globalAlias", "[GB-C3]"],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "bucket-create-denied-no-grant.json",
        exit: 1,
        message: &[
            "create a GarageReferenceGrant in namespace \"garage\"",
            "[GB-X1]",
        ],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "bucket-update-denied-bucket-id.json",
        exit: 1,
        message: &["spec.bucketId", "[GB-U2]"],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "key-create-allowed.json",
        exit: 0,
        message: &[],
        code: None,
        patch: true,
    },
    Case {
        file: "key-create-selector-grant-allowed.json",
        exit: 0,
        message: &[],
        code: None,
        patch: true,
    },
    Case {
        file: "key-create-denied-secret-template.json",
        exit: 1,
        message: &["spec.secretTemplate.additionalData", "[GK-ST]"],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "key-update-denied-import-key.json",
        exit: 1,
        message: &["importKey is immutable", "[GK-U2]"],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "key-create-invalid-wrong-kind.json",
        exit: 2,
        message: &[
            "GarageBucket",
            "reviews garage.rajsingh.info/v1beta1 GarageKey",
        ],
        code: Some(400),
        patch: false,
    },
    Case {
        file: "admintoken-create-allowed.json",
        exit: 0,
        message: &[],
        code: None,
        patch: false,
    },
    Case {
        file: "admintoken-create-denied-cross-namespace.json",
        exit: 1,
        message: &["spec.clusterRef.namespace", "[AT-C3]"],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "admintoken-delete-denied-referenced.json",
        exit: 1,
        message: &["still references generated Secret", "[AT-D3]"],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "referencegrant-create-allowed.json",
        exit: 0,
        message: &[],
        code: None,
        patch: false,
    },
    Case {
        file: "referencegrant-create-denied-empty-from.json",
        exit: 1,
        message: &["spec.from", "[RG-C1]"],
        code: Some(403),
        patch: false,
    },
    Case {
        file: "conversion-v1beta2-to-v1beta1.json",
        exit: 0,
        message: &[],
        code: None,
        patch: false,
    },
    Case {
        file: "conversion-denied-wrong-kind.json",
        exit: 1,
        message: &["converts only GarageCluster"],
        code: Some(422),
        patch: false,
    },
];

#[test]
fn every_recorded_review_gets_its_verdict() {
    let mut failures = Vec::new();
    for case in CASES {
        let (exit, stdout, stderr) = run(&["review", "--state", "state", case.file]);
        if exit != case.exit {
            failures.push(format!(
                "{}: exit {exit}, want {} ({stderr})",
                case.file, case.exit
            ));
            continue;
        }
        let review: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{}: output is not JSON ({e}): {stdout}", case.file));
        let response = &review["response"];
        let status = if response["status"].is_object() {
            &response["status"]
        } else {
            &response["result"]
        };
        let message = status["message"].as_str().unwrap_or_default();
        for part in case.message {
            if !message.contains(part) {
                failures.push(format!("{}: message {message:?} lacks {part:?}", case.file));
            }
        }
        if let Some(code) = case.code
            && status["code"].as_u64() != Some(code)
        {
            failures.push(format!(
                "{}: code {:?}, want {code}",
                case.file, status["code"]
            ));
        }
        if review["kind"] == "AdmissionReview" {
            assert_eq!(
                response["allowed"].as_bool(),
                Some(case.exit == 0),
                "{}",
                case.file
            );
            let has_patch = response["patch"].is_array();
            if has_patch != case.patch {
                failures.push(format!(
                    "{}: patch present {has_patch}, want {}",
                    case.file, case.patch
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_conversion_review_answers_with_v1beta1_objects() {
    let (exit, stdout, _) = run(&["review", "conversion-v1beta2-to-v1beta1.json"]);
    assert_eq!(exit, 0);
    let review: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(review["response"]["uid"], "cv1");
    assert_eq!(
        review["response"]["convertedObjects"][0]["apiVersion"],
        "garage.rajsingh.info/v1beta1"
    );
}

fn words(line: &str) -> Vec<&str> {
    line.split(' ').collect()
}

#[test]
fn unusable_input_exits_2_without_a_panic() {
    for args in [
        vec!["review", "malformed.json"],
        vec!["review", "no-such-file.json"],
        vec![
            "review",
            "--operation",
            "UPDATE",
            "cluster-v1beta2-create-allowed.json",
        ],
        vec!["review", "--operation", "CREATE", "state"],
        // Options that describe no request a client could send.
        words(
            "review --operation UPDATE --propagation Foreground --old state/cluster.json state/cluster.json",
        ),
        words("review --operation DELETE --subresource scale --old state/cluster.json"),
        words(
            "review --operation UPDATE --subresource scale --old manifests/scale-4.yaml manifests/scale-4.yaml",
        ),
        words(
            "review --operation UPDATE --subresource scale --old state/cluster.json state/cluster.json",
        ),
        words("review --propagation Foreground cluster-v1beta2-delete.json"),
        vec![
            "convert",
            "--to",
            "garage.rajsingh.info/v1beta1",
            "malformed.json",
        ],
    ] {
        let (exit, _, stderr) = run(&args);
        assert_eq!(exit, 2, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.is_empty(), "{args:?} says nothing");
    }
}

#[test]
fn manifests_are_reviewed_per_operation() {
    let sample = samples().join("garage_v1beta1_garagecluster.yaml");
    let sample = sample.to_str().unwrap();
    let (exit, stdout, stderr) = run(&["review", "--operation", "CREATE", sample]);
    assert_eq!(exit, 0, "{stderr}");
    assert!(stdout.contains("\"allowed\": true"));
    let (exit, _, stderr) = run(&["review", "--operation", "DELETE", "--old", sample]);
    assert_eq!(exit, 0, "{stderr}");
    let (exit, _, _) = run(&["review", "--operation", "DELETE", sample]);
    assert_eq!(exit, 2, "DELETE takes the object as --old");
    // Several documents: every reviewable one is answered.
    let nodes = samples().join("garage_v1beta1_garagenode.yaml");
    let (exit, stdout, stderr) = run(&["review", "--operation", "CREATE", nodes.to_str().unwrap()]);
    assert_eq!(exit, 0, "{stderr}");
    assert!(stdout.matches("\"kind\": \"AdmissionReview\"").count() > 1);
}

#[test]
fn convert_prints_yaml_in_the_target_version() {
    let sample = samples().join("garage_v1beta1_garagecluster.yaml");
    let (exit, stdout, stderr) = run(&[
        "convert",
        "--to",
        "garage.rajsingh.info/v1beta2",
        sample.to_str().unwrap(),
    ]);
    assert_eq!(exit, 0, "{stderr}");
    let object: Value = serde_saphyr::from_str(&stdout).unwrap();
    assert_eq!(object["apiVersion"], "garage.rajsingh.info/v1beta2");
    assert_eq!(object["spec"]["storage"]["replicas"], 3);
}

#[test]
fn manifest_reviews_reach_delete_options_scale_and_the_stored_old_object() {
    let scratch = tempfile::tempdir().unwrap();
    let drained = "manifests/cluster-drained.yaml";
    // The same drained cluster whose record's hash belongs to other node sets (all empty).
    let forged_path = scratch.path().join("cluster-drained-forged.yaml");
    let text = std::fs::read_to_string(fixtures().join("manifests/cluster-drained.yaml")).unwrap();
    let forged_text = text.replace(
        DRAINED_HASH,
        "sha256:caef2d293bbac3d3d33711edf643e687c1f52cad4c7bb1d8361cc6d16a2bd006",
    );
    std::fs::write(&forged_path, forged_text).unwrap();
    let forged = forged_path.to_str().unwrap().to_owned();
    fn delete<'a>(policy: &'a str, old: &'a str) -> Vec<&'a str> {
        vec![
            "--operation",
            "DELETE",
            "--propagation",
            policy,
            "--old",
            old,
        ]
    }
    let scale = |file| {
        vec![
            "--state",
            "state",
            "--operation",
            "UPDATE",
            "--subresource",
            "scale",
            "--old",
            "state/cluster.json",
            file,
        ]
    };
    // The old manifest, as kept in git, is reviewed as stored (defaulted): a label-only edit
    // of an object with a grandfathered name is then no spec change.
    let from_git = |file| {
        vec![
            "--operation",
            "UPDATE",
            "--old",
            "manifests/cluster-long-name-git.yaml",
            file,
        ]
    };
    let cases: Vec<(Vec<&str>, i32, &[&str])> = vec![
        (delete("Foreground", drained), 1, &["[GC-D7]"]),
        (delete("Background", drained), 0, &[]),
        (delete("Orphan", drained), 0, &[]),
        (
            delete("Background", &forged),
            1,
            &["status.storageDrain", "targetHash", "[GC-D6]"],
        ),
        (scale("manifests/scale-4.yaml"), 0, &[]),
        (
            scale("manifests/scale-2.yaml"),
            1,
            &["positive-capacity removal", "[GC-S10]"],
        ),
        (
            from_git("manifests/cluster-long-name-git-labelled.yaml"),
            0,
            &[],
        ),
        (from_git("manifests/cluster-long-name-git.yaml"), 0, &[]),
    ];
    let mut failures = Vec::new();
    for (case, want_exit, parts) in cases {
        let mut args = vec!["review"];
        args.extend(case);
        let (exit, stdout, stderr) = run(&args);
        if exit != want_exit {
            failures.push(format!(
                "{args:?}: exit {exit}, want {want_exit} ({stderr}{stdout})"
            ));
            continue;
        }
        let review: Value = serde_json::from_str(&stdout).unwrap();
        let message = review["response"]["status"]["message"]
            .as_str()
            .unwrap_or_default();
        for part in parts {
            if !message.contains(part) {
                failures.push(format!("{args:?}: message {message:?} lacks {part:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The Go operator's GarageBucket, GarageKey, GarageAdminToken and GarageReferenceGrant samples
/// are admitted as written; the cross-namespace bucket through the grant in the same file.
#[test]
fn upstream_bucket_key_token_and_grant_samples_are_admitted() {
    for file in [
        "garage_v1beta1_garagebucket.yaml",
        "garage_v1beta1_garagebucket_cross_namespace.yaml",
        "garage_v1beta1_garagekey.yaml",
        "garage_v1beta1_garageadmintoken.yaml",
        "garage_v1beta1_garagereferencegrant.yaml",
    ] {
        let sample = samples().join(file);
        let (exit, stdout, stderr) =
            run(&["review", "--operation", "CREATE", sample.to_str().unwrap()]);
        assert_eq!(exit, 0, "{file}: {stderr}{stdout}");
        let reviews: Vec<Value> = serde_json::Deserializer::from_str(&stdout)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{file}: {e}: {stdout}"));
        let documents = webhook::cli::manifest::load(&sample).unwrap().len();
        assert_eq!(
            reviews.len(),
            documents,
            "{file}: every document is reviewed"
        );
        for review in &reviews {
            assert_eq!(review["response"]["allowed"], true, "{file}: {review}");
        }
    }
    // The token sample's cluster (in the state directory) consumes its Secret: its deletion is
    // refused until the cluster is re-pointed; without that cluster it is allowed with a warning.
    let token = samples().join("garage_v1beta1_garageadmintoken.yaml");
    let token = token.to_str().unwrap();
    let (exit, stdout, _) = run(&[
        "review",
        "--state",
        "state",
        "--operation",
        "DELETE",
        "--old",
        token,
    ]);
    assert_eq!(exit, 1, "{stdout}");
    assert!(stdout.contains("[AT-D3]"), "{stdout}");
    let (exit, stdout, _) = run(&["review", "--operation", "DELETE", "--old", token]);
    assert_eq!(exit, 0, "{stdout}");
    assert!(stdout.contains("[AT-D2]"), "{stdout}");
}
