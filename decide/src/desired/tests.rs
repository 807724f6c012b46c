//! Table tests of the effective settings.
use super::test_support::{self, cluster};
use super::*;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

#[test]
fn defaults_are_applied_explicitly() {
    let s = Settings::from_cluster(&cluster(3)).unwrap();
    assert_eq!(s.replicas, 3);
    assert_eq!(s.replication_factor, 3);
    assert_eq!(s.consistency_mode, "consistent");
    assert_eq!((s.rpc_port, s.s3_port, s.admin_port), (3901, 3900, 3903));
    assert_eq!(s.web_port, Some(3902));
    assert_eq!(s.zone, "default");
    assert_eq!(s.image, DEFAULT_GARAGE_IMAGE);
    assert_eq!(s.capacity, 1 << 30);
}

#[test]
fn only_a_consul_discovery_switched_on_is_refused() {
    let with = |d: serde_json::Value| {
        let mut c = cluster(3);
        c.spec.discovery = Some(serde_json::from_value(d).unwrap());
        Settings::from_cluster(&c).err().map(|e| e.to_string())
    };
    assert_eq!(with(serde_json::json!({})), None);
    assert_eq!(
        with(serde_json::json!({"kubernetes": {"enabled": false}})),
        None
    );
    assert_eq!(
        with(serde_json::json!({"consul": {"enabled": false, "httpAddr": "http://c:8500"}})),
        None
    );
    // Kubernetes discovery is rendered into garage.toml (`config`).
    assert_eq!(
        with(serde_json::json!({"kubernetes": {"enabled": true}})),
        None
    );
    let refused = with(serde_json::json!({"consul": {"enabled": true}})).unwrap();
    assert!(refused.contains("spec.discovery.consul"), "{refused}");
}

#[test]
fn capacity_reserve_and_ports_are_honoured() {
    let mut c = cluster(3);
    c.spec.storage.as_mut().unwrap().capacity_reserve_percent = Some(10);
    c.spec.s3_api = Some(shared_types::garage_cluster::common::S3ApiConfig {
        bind_address: Some("[::]:9000".into()),
        ..Default::default()
    });
    let s = Settings::from_cluster(&c).unwrap();
    assert_eq!(s.capacity, (1u64 << 30) * 9 / 10);
    assert_eq!(s.s3_port, 9000);
}

#[test]
fn paths_capacity_is_the_writable_sum_less_the_reserve() {
    let mut c = test_support::paths_cluster(1);
    let s = Settings::from_cluster(&c).unwrap();
    // 600Mi declared on /data/fast, the 2Gi volume of /data/slow; /data/old takes no
    // new blocks.
    let sum = (600u64 << 20) + (2 << 30);
    assert_eq!(s.capacity, sum);
    assert_eq!(s.data_dirs.as_ref().map(Vec::len), Some(3));
    let storage = c.spec.storage.as_mut().unwrap();
    storage.capacity_reserve_percent = Some(10);
    // A top-level size beside paths is not what Garage fills.
    storage.data.as_mut().unwrap().size = Some(Quantity("100Gi".into()));
    assert_eq!(Settings::from_cluster(&c).unwrap().capacity, sum * 9 / 10);
}

#[test]
fn paths_are_refused_beside_pools_and_bad_paths_are_invalid() {
    let mut c = test_support::paths_cluster(1);
    c.spec.storage.as_mut().unwrap().node_local_pools = Some(vec![NodeLocalPoolSpec {
        name: "p".into(),
        data: Some(Default::default()),
        ..Default::default()
    }]);
    assert_eq!(
        Settings::from_cluster(&c),
        Err(DesiredError::Unsupported(
            "spec.storage.data.paths beside spec.storage.nodeLocalPools"
        ))
    );
    let mut c = test_support::paths_cluster(1);
    let data = c.spec.storage.as_mut().unwrap().data.as_mut().unwrap();
    data.paths.as_mut().unwrap()[1].path = "/data/fast/inner".into();
    assert!(matches!(
        Settings::from_cluster(&c),
        Err(DesiredError::Invalid {
            field: "spec.storage.data.paths",
            ..
        })
    ));
}

#[test]
fn unsupported_shapes_are_refused_not_half_rendered() {
    let mut c = cluster(3);
    c.spec.gateway = Some(Default::default());
    let unified = Settings::from_cluster(&c).unwrap();
    assert!(unified.gateway_tier);
    assert_eq!(unified.gateway_replicas, 2, "two gateways by default");
    c.spec.layout_policy = Some(LayoutPolicy::Manual);
    assert_eq!(
        Settings::from_cluster(&c).unwrap().gateway_replicas,
        0,
        "under Manual the gateways are the user's"
    );
    c.spec.layout_policy = None;
    c.spec.gateway.as_mut().unwrap().replicas = Some(-1);
    assert!(matches!(
        Settings::from_cluster(&c),
        Err(DesiredError::Invalid {
            field: "spec.gateway.replicas",
            ..
        })
    ));
    let mut c = cluster(3);
    c.spec.gateway = Some(Default::default());
    c.spec.storage = None;
    assert!(
        Settings::from_cluster(&c).is_err(),
        "an edge gateway is not built"
    );
    let mut c = cluster(3);
    c.spec.storage.as_mut().unwrap().layout_policy = Some(LayoutPolicy::Manual);
    let manual = Settings::from_cluster(&c).unwrap();
    assert!(manual.manual);
    assert_eq!(manual.replicas, 0, "Manual generates no GarageNodes");
    let mut c = cluster(3);
    c.metadata.uid = None;
    assert_eq!(
        Settings::from_cluster(&c),
        Err(DesiredError::MissingMetadata("uid"))
    );
}

#[test]
fn install_default_image_replaces_only_the_built_in_default() {
    let plain = cluster(3);
    let mut s = Settings::from_cluster(&plain).unwrap();
    s.use_default_image(&plain, Some("registry.example:5000/garage:v2.6.1"));
    assert_eq!(s.image, "registry.example:5000/garage:v2.6.1");

    let mut repo = cluster(3);
    repo.spec.image_repository = Some("mirror.example/garage".into());
    let mut s = Settings::from_cluster(&repo).unwrap();
    s.use_default_image(&repo, Some("registry.example:5000/garage:v2.6.1"));
    assert_eq!(s.image, "mirror.example/garage:v2.6.1");

    let mut pinned = cluster(3);
    pinned.spec.image = Some("dxflrs/garage:v2.4.0".into());
    let mut s = Settings::from_cluster(&pinned).unwrap();
    s.use_default_image(&pinned, Some("registry.example/garage:v2.6.1"));
    assert_eq!(s.image, "dxflrs/garage:v2.4.0");

    let mut s = Settings::from_cluster(&plain).unwrap();
    s.use_default_image(&plain, Some("  "));
    assert_eq!(s.image, DEFAULT_GARAGE_IMAGE);
    assert_eq!(image_tag("registry.example:5000/garage"), None);
    assert_eq!(image_tag("garage@sha256:00"), None);
}
