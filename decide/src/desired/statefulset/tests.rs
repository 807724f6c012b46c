use super::*;
use crate::desired::nodes::auto_storage_node;
use crate::desired::secrets::{admin_token_source, rpc_secret_source};
use crate::desired::test_support::{claim_template_names, cluster};
use crate::desired::{Settings, config};

fn render(c: &GarageCluster) -> StatefulSet {
    render_with(c, |_| {})
}

/// The StatefulSet of `c`'s first Auto node after `change` to that node.
fn render_with(c: &GarageCluster, change: impl FnOnce(&mut GarageNode)) -> StatefulSet {
    render_fenced(c, change, false)
}

fn render_fenced(
    c: &GarageCluster,
    change: impl FnOnce(&mut GarageNode),
    fenced: bool,
) -> StatefulSet {
    let s = Settings::from_cluster(c).unwrap();
    let mut node = auto_storage_node(c, &s, 0).unwrap();
    node.metadata.uid = Some("node-uid".into());
    change(&mut node);
    let rev = config::revision(c, &s).unwrap();
    statefulset(NodeInputs {
        fenced,
        cluster: c,
        settings: &s,
        node: &node,
        config: &rev,
        rpc_secret: &rpc_secret_source(c, &s),
        admin_token: &admin_token_source(c, &s),
    })
    .unwrap()
}

#[test]
fn one_replica_on_delete_owned_by_the_node() {
    let sts = render(&cluster(3));
    let spec = sts.spec.as_ref().unwrap();
    assert_eq!(sts.metadata.name.as_deref(), Some("garage-storage-0"));
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.service_name.as_deref(), Some("garage-headless"));
    assert_eq!(
        spec.update_strategy.as_ref().unwrap().type_.as_deref(),
        Some("OnDelete")
    );
    let retention = spec
        .persistent_volume_claim_retention_policy
        .as_ref()
        .unwrap();
    assert_eq!(retention.when_deleted.as_deref(), Some("Retain"));
    assert_eq!(retention.when_scaled.as_deref(), Some("Retain"));
    let owner = &sts.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("GarageNode", "node-uid")
    );
    let selector = spec.selector.match_labels.as_ref().unwrap();
    let pod_labels = spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .as_ref()
        .unwrap();
    assert!(selector.iter().all(|(k, v)| pod_labels.get(k) == Some(v)));
}

#[test]
fn a_fence_never_deletes_claims_whatever_when_scaled_says() {
    use shared_types::garage_cluster::common::{PvcRetention, PvcRetentionPolicy};
    let mut c = cluster(3);
    c.spec.storage.as_mut().unwrap().pvc_retention_policy = Some(PvcRetentionPolicy {
        when_deleted: Some(PvcRetention::Delete),
        when_scaled: Some(PvcRetention::Delete),
    });
    let retention = |sts: StatefulSet| {
        let spec = sts.spec.unwrap();
        let r = spec.persistent_volume_claim_retention_policy.unwrap();
        (spec.replicas, r.when_scaled, r.when_deleted)
    };
    // Running: the user's policy as written.
    assert_eq!(
        retention(render(&c)),
        (Some(1), Some("Delete".into()), Some("Delete".into()))
    );
    // Fenced: scaled to zero, and the scale-down keeps the claims.
    assert_eq!(
        retention(render_fenced(&c, |_| {}, true)),
        (Some(0), Some("Retain".into()), Some("Delete".into()))
    );
}

#[test]
fn claims_carry_class_attributes_class_and_node_uid() {
    let mut c = cluster(3);
    c.spec
        .storage
        .as_mut()
        .unwrap()
        .data
        .as_mut()
        .unwrap()
        .volume_attributes_class_name = Some("gold".into());
    let sts = render(&c);
    let claims = sts.spec.unwrap().volume_claim_templates.unwrap();
    let names: Vec<_> = claims
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["metadata", "data"]);
    let data = claims[1].spec.as_ref().unwrap();
    assert_eq!(data.storage_class_name.as_deref(), Some("local-sim"));
    assert_eq!(data.volume_attributes_class_name.as_deref(), Some("gold"));
    assert_eq!(
        data.access_modes.as_deref(),
        Some(&["ReadWriteOnce".to_owned()][..])
    );
    assert_eq!(
        data.resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"],
        Quantity("1Gi".into())
    );
    assert_eq!(
        claims[0]
            .spec
            .as_ref()
            .unwrap()
            .volume_attributes_class_name,
        None
    );
    let uid =
        &claims[0].metadata.annotations.as_ref().unwrap()[annotation::ANNOTATION_GARAGE_NODE_UID];
    assert_eq!(uid, "node-uid");
}

#[test]
fn secrets_are_mounted_as_0400_files_and_no_marker_volume_exists() {
    let sts = render(&cluster(3));
    let pod = sts.spec.unwrap().template.spec.unwrap();
    let volumes = pod.volumes.unwrap();
    for name in ["rpc-secret", "admin-token"] {
        let v = volumes.iter().find(|v| v.name == name).unwrap();
        let secret = v.secret.as_ref().unwrap();
        assert_eq!(secret.default_mode, Some(0o400));
        assert!(
            secret
                .items
                .as_ref()
                .unwrap()
                .iter()
                .all(|i| i.mode == Some(0o400))
        );
    }
    assert!(
        volumes
            .iter()
            .all(|v| !v.name.starts_with("verify-") && v.host_path.is_none()),
        "PVC-backed storage gets no .garage-volume-id marker"
    );
    let c = &pod.containers[0];
    assert_eq!(
        c.command.as_deref(),
        Some(&["/garage".to_owned(), "server".to_owned()][..])
    );
    // Ready means Garage answers /health (quorum for every partition as this node sees it);
    // no liveness probe: a slow Garage is not restarted by Kubernetes.
    let ready = c
        .readiness_probe
        .as_ref()
        .unwrap()
        .http_get
        .as_ref()
        .unwrap();
    assert_eq!(ready.path.as_deref(), Some("/health"));
    assert_eq!(
        ready.port,
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(3903)
    );
    assert!(c.liveness_probe.is_none());
    let env = c.env.as_ref().unwrap();
    assert_eq!(env.last().unwrap().name, "GARAGE_CONFIG_FILE");
    assert_eq!(env[0].name, "GARAGE_NODE_HOST");
}

#[test]
fn reserved_env_and_dangerous_env_from_are_dropped() {
    use k8s_openapi::api::core::v1::{ConfigMapEnvSource, EnvFromSource};
    let mut c = cluster(3);
    let st = c.spec.storage.as_mut().unwrap();
    st.env = Some(vec![plain("GARAGE_RPC_SECRET", "x"), plain("FOO", "bar")]);
    let src = |prefix: Option<&str>| EnvFromSource {
        prefix: prefix.map(Into::into),
        config_map_ref: Some(ConfigMapEnvSource {
            name: "cm".into(),
            optional: None,
        }),
        secret_ref: None,
    };
    st.env_from = Some(vec![src(None), src(Some("GARAGE_")), src(Some("APP_"))]);
    let sts = render(&c);
    let container = &sts.spec.unwrap().template.spec.unwrap().containers[0];
    let env = container.env.as_ref().unwrap();
    assert!(env.iter().any(|e| e.name == "FOO"));
    assert!(!env.iter().any(|e| e.name == "GARAGE_RPC_SECRET"));
    let from = container.env_from.as_ref().unwrap();
    assert_eq!(from.len(), 1);
    assert_eq!(from[0].prefix.as_deref(), Some("APP_"));
}

#[test]
fn hash_tracks_the_template_but_not_replicas_of_the_cluster() {
    let a = render(&cluster(3));
    let b = render(&cluster(4));
    let hash = |s: &StatefulSet| {
        s.metadata.annotations.as_ref().unwrap()[annotation::ANNOTATION_RENDERED_HASH].clone()
    };
    assert_eq!(hash(&a), hash(&b));
    let mut c = cluster(3);
    c.spec.image = Some("dxflrs/garage:v2.6.0".into());
    assert_ne!(hash(&a), hash(&render(&c)));
    let annotations = a
        .spec
        .unwrap()
        .template
        .metadata
        .unwrap()
        .annotations
        .unwrap();
    assert!(annotations.contains_key(annotation::ANNOTATION_POD_SPEC_HASH));
    assert_eq!(annotations[annotation::ANNOTATION_CONFIG_HASH].len(), 16);
}

#[test]
fn each_data_path_is_a_claim_template_with_its_class_mounted_at_its_path() {
    use crate::desired::test_support::paths_cluster;
    let c = paths_cluster(1);
    let sts = render(&c);
    let spec = sts.spec.unwrap();
    let claims = spec.volume_claim_templates.unwrap();
    let got: Vec<(String, Option<String>, Quantity)> = claims
        .iter()
        .map(|c| {
            let spec = c.spec.as_ref().unwrap();
            (
                c.metadata.name.clone().unwrap(),
                spec.volume_attributes_class_name.clone(),
                spec.resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"].clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("metadata".into(), None, Quantity("100Mi".into())),
            ("data-0".into(), Some("fast".into()), Quantity("1Gi".into())),
            ("data-1".into(), Some("slow".into()), Quantity("2Gi".into())),
            // The top-level class is not taken; the top-level storage class is.
            ("data-2".into(), None, Quantity("1Gi".into())),
        ]
    );
    assert!(
        claims[1..].iter().all(|c| {
            c.spec.as_ref().unwrap().storage_class_name.as_deref() == Some("local-sim")
        })
    );
    let pod = spec.template.spec.unwrap();
    let mounts: Vec<(String, String, Option<bool>)> = pod.containers[0]
        .volume_mounts
        .clone()
        .unwrap()
        .into_iter()
        .map(|m| (m.name, m.mount_path, m.read_only))
        .collect();
    assert_eq!(
        mounts[3..],
        [
            ("metadata".into(), "/data/metadata".into(), None),
            ("data-0".into(), "/data/fast".into(), None),
            ("data-1".into(), "/data/slow".into(), None),
            // Read-only for Garage's placement only: it keeps a marker file there.
            ("data-2".into(), "/data/old".into(), None),
        ]
    );
    assert!(!mounts.iter().any(|m| m.1 == "/data/data"));
    // Templates need no pod volume of their own.
    let volumes = pod.volumes.unwrap();
    assert!(!volumes.iter().any(|v| v.name.starts_with("data")));
}

#[test]
fn data_path_emptydir_and_existing_claim_are_pod_volumes() {
    use shared_types::garage_node::NodeStorageConfig;
    let paths = vec![
        NodeVolumeConfig {
            type_: Some(VolumeType::EmptyDir),
            size: Some(Quantity("1Gi".into())),
            ..Default::default()
        },
        NodeVolumeConfig {
            existing_claim: Some("mine".into()),
            path: Some("/mnt/hdd".into()),
            ..Default::default()
        },
    ];
    let mut node = None;
    let sts = render_with(&cluster(1), |n| {
        n.spec.storage = Some(NodeStorageConfig {
            metadata: n.spec.storage.as_ref().unwrap().metadata.clone(),
            data_paths: Some(paths),
            ..Default::default()
        });
        node = Some(n.clone());
    });
    assert_eq!(claim_template_names(&sts), ["metadata"]);
    let spec = sts.spec.unwrap();
    let pod = spec.template.spec.unwrap();
    let volumes = pod.volumes.unwrap();
    let empty = volumes.iter().find(|v| v.name == "data-0").unwrap();
    assert_eq!(
        empty.empty_dir.as_ref().unwrap().size_limit,
        Some(Quantity("1Gi".into()))
    );
    let claim = volumes.iter().find(|v| v.name == "data-1").unwrap();
    assert_eq!(
        claim.persistent_volume_claim.as_ref().unwrap().claim_name,
        "mine"
    );
    let mounts = pod.containers[0].volume_mounts.clone().unwrap();
    let at = |name: &str| {
        mounts
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.mount_path.clone())
    };
    assert_eq!(at("data-0").as_deref(), Some("/data/data-0"));
    assert_eq!(at("data-1").as_deref(), Some("/mnt/hdd"));
    assert_eq!(
        names_and_classes(&node.unwrap()),
        [("metadata-garage-storage-0-0".to_owned(), None)]
    );
}

fn names_and_classes(node: &GarageNode) -> Vec<(String, Option<String>)> {
    managed_claims(node)
        .into_iter()
        .map(|c| (c.name, c.class))
        .collect()
}

#[test]
fn managed_claims_carry_their_size_and_whether_they_hold_data() {
    use crate::desired::test_support::paths_cluster;
    let c = paths_cluster(1);
    let node = auto_storage_node(&c, &Settings::from_cluster(&c).unwrap(), 0).unwrap();
    let claims = managed_claims(&node);
    assert!(!claims[0].data, "metadata holds no data");
    assert!(claims[1..].iter().all(|c| c.data));
    // Each claim asks for what its template requests.
    let sts = render(&c);
    for t in sts.spec.unwrap().volume_claim_templates.unwrap() {
        let template = t.metadata.name.unwrap();
        let claim = claims
            .iter()
            .find(|c| c.name.starts_with(&format!("{template}-")))
            .unwrap();
        assert_eq!(
            t.spec.unwrap().resources.unwrap().requests.unwrap()["storage"],
            claim.size
        );
    }
}

#[test]
fn managed_claims_name_each_path_claim_with_its_class() {
    use crate::desired::test_support::paths_cluster;
    let c = paths_cluster(1);
    let node = auto_storage_node(&c, &Settings::from_cluster(&c).unwrap(), 0).unwrap();
    assert_eq!(
        names_and_classes(&node),
        [
            ("metadata-garage-storage-0-0".to_owned(), None),
            (
                "data-0-garage-storage-0-0".to_owned(),
                Some("fast".to_owned())
            ),
            (
                "data-1-garage-storage-0-0".to_owned(),
                Some("slow".to_owned())
            ),
            ("data-2-garage-storage-0-0".to_owned(), None),
        ]
    );
    let single = cluster(1);
    let node = auto_storage_node(&single, &Settings::from_cluster(&single).unwrap(), 0).unwrap();
    assert_eq!(
        names_and_classes(&node),
        [
            ("metadata-garage-storage-0-0".to_owned(), None),
            ("data-garage-storage-0-0".to_owned(), None),
        ]
    );
}

#[test]
fn a_path_class_change_leaves_the_hash_alone() {
    use crate::desired::test_support::paths_cluster;
    let hash = |s: &StatefulSet| {
        s.metadata.annotations.as_ref().unwrap()[annotation::ANNOTATION_RENDERED_HASH].clone()
    };
    let a = paths_cluster(1);
    let mut b = paths_cluster(1);
    let paths = b.spec.storage.as_mut().unwrap().data.as_mut().unwrap();
    paths.paths.as_mut().unwrap()[0]
        .volume
        .as_mut()
        .unwrap()
        .volume_attributes_class_name = Some("slow".into());
    let (ra, rb) = (render(&a), render(&b));
    assert_eq!(
        hash(&ra),
        hash(&rb),
        "a class change never recreates or rolls"
    );
    assert_ne!(
        ra.spec.unwrap().volume_claim_templates,
        rb.spec.unwrap().volume_claim_templates,
        "new claims are still created with the new class"
    );
}

#[test]
fn only_a_cluster_with_kubernetes_discovery_mounts_a_service_account_token() {
    let token = |enabled: Option<bool>| {
        let mut c = cluster(3);
        c.spec.discovery = Some(
            serde_json::from_value(serde_json::json!({"kubernetes": {"enabled": enabled}}))
                .unwrap(),
        );
        c.spec.service_account_name = Some("garage-discovery".into());
        let pod = render(&c).spec.unwrap().template.spec.unwrap();
        assert_eq!(
            pod.service_account_name.as_deref(),
            Some("garage-discovery")
        );
        pod.automount_service_account_token
    };
    assert_eq!(token(None), Some(false));
    assert_eq!(token(Some(false)), Some(false));
    assert_eq!(token(Some(true)), Some(true), "Garage calls the API itself");
}

#[test]
fn garage_runs_unprivileged_on_its_claims_unless_the_template_says_otherwise() {
    use crate::desired::pod_security::{ALLOW_GROUP_READABLE_SECRETS_ENV, GARAGE_GID, GARAGE_UID};
    let sts = render(&cluster(3));
    let pod = sts.spec.unwrap().template.spec.unwrap();
    let ctx = pod.security_context.clone().unwrap();
    assert_eq!(ctx.run_as_non_root, Some(true));
    assert_eq!(ctx.run_as_user, Some(GARAGE_UID));
    assert_eq!(ctx.fs_group, Some(GARAGE_GID));
    assert_eq!(pod.automount_service_account_token, Some(false));
    let c = &pod.containers[0];
    let cc = c.security_context.clone().unwrap();
    assert_eq!(cc.allow_privilege_escalation, Some(false));
    assert_eq!(cc.read_only_root_filesystem, Some(true));
    let env = c.env.as_ref().unwrap();
    assert_eq!(env[1].name, ALLOW_GROUP_READABLE_SECRETS_ENV);
    assert_eq!(env[1].value.as_deref(), Some("true"));

    // A Go-operator manifest that runs Garage as root keeps doing so, and Garage is not told
    // to accept group bits nobody asked for.
    let mut root = cluster(3);
    root.spec.storage.as_mut().unwrap().security_context =
        Some(k8s_openapi::api::core::v1::PodSecurityContext {
            run_as_user: Some(0),
            ..Default::default()
        });
    let pod = render(&root).spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.security_context.unwrap().run_as_user, Some(0));
    let env = pod.containers[0].env.clone().unwrap();
    assert!(
        env.iter()
            .all(|e| e.name != ALLOW_GROUP_READABLE_SECRETS_ENV)
    );
}
