//! garage.toml and its content-addressed, immutable ConfigMap
//! revisions.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use shared_types::garage_cluster::common::DatabaseEngine;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation;

use super::{DesiredError, Settings, controller_ref, labels, quantity};
use crate::names;

/// Key of the config file in a revision.
pub const CONFIG_KEY: &str = "garage.toml";
/// Directory the revision is mounted at; Garage reads `GARAGE_CONFIG_FILE` from it.
pub const CONFIG_DIR: &str = "/etc/garage";
/// Metadata directory (holds `node_key`, the node's identity).
pub const METADATA_DIR: &str = "/data/metadata";
/// Data directory of a single-disk node.
pub const DATA_DIR: &str = "/data/data";
/// Directory of the RPC secret file.
pub const RPC_SECRET_DIR: &str = "/secrets/rpc";
/// File name of the RPC secret (also the key in its Secret).
pub const RPC_SECRET_KEY: &str = "rpc-secret";
/// Directory of the admin token file.
pub const ADMIN_TOKEN_DIR: &str = "/secrets/admin";
/// File name of the admin token (also the key in its Secret).
pub const ADMIN_TOKEN_KEY: &str = "admin-token";
/// Directory of the metrics token file.
pub const METRICS_TOKEN_DIR: &str = "/secrets/metrics";
/// File name of the metrics token (also its key in the credentials copy).
pub const METRICS_TOKEN_KEY: &str = "metrics-token";

/// The rendered garage.toml of the cluster's shared config.
pub fn render(c: &GarageCluster, s: &Settings) -> Result<String, DesiredError> {
    let mut t = String::new();
    storage_section(&mut t, c, s)?;
    blocks_and_security(&mut t, c)?;
    rpc_section(&mut t, c, s);
    api_sections(&mut t, c, s);
    discovery_section(&mut t, c, s);
    Ok(t)
}

/// True when the cluster turns on Garage's own Kubernetes peer discovery; its pods then
/// need a ServiceAccount token to call the API.
pub fn kubernetes_discovery(c: &GarageCluster) -> bool {
    c.spec
        .discovery
        .as_ref()
        .and_then(|d| d.kubernetes.as_ref())
        .is_some_and(|k| k.enabled == Some(true))
}

/// `[kubernetes_discovery]`, when turned on: Garage publishes its own address as a resource
/// in `namespace` labelled with `service_name` (the cluster's namespace and name unless
/// named) and connects to the peers it finds there, besides the operator's own reconnects.
fn discovery_section(t: &mut String, c: &GarageCluster, s: &Settings) {
    if !kubernetes_discovery(c) {
        return;
    }
    let k = c
        .spec
        .discovery
        .as_ref()
        .and_then(|d| d.kubernetes.as_ref());
    let given = |v: Option<&String>| v.filter(|v| !v.is_empty()).cloned();
    t.push_str("\n[kubernetes_discovery]\n");
    line(
        t,
        "namespace",
        &quote(&given(k.and_then(|k| k.namespace.as_ref())).unwrap_or_else(|| s.namespace.clone())),
    );
    line(
        t,
        "service_name",
        &quote(&given(k.and_then(|k| k.service_name.as_ref())).unwrap_or_else(|| s.name.clone())),
    );
    let skip = k.and_then(|k| k.skip_crd) == Some(true);
    line(t, "skip_crd", if skip { "true" } else { "false" });
}

/// Where and how Garage keeps its metadata and data.
fn storage_section(t: &mut String, c: &GarageCluster, s: &Settings) -> Result<(), DesiredError> {
    let spec = &c.spec;
    let storage = spec.storage.as_ref();
    line(t, "metadata_dir", &quote(METADATA_DIR));
    line(t, "data_dir", &data_dir(s.data_dirs.as_deref()));
    let db = spec.database.as_ref();
    let engine = match db.and_then(|d| d.engine) {
        None | Some(DatabaseEngine::Lmdb) => "lmdb",
        Some(DatabaseEngine::Sqlite) => "sqlite",
        Some(DatabaseEngine::Fjall) => "fjall",
    };
    line(t, "db_engine", &quote(engine));
    if let Some(q) = db.and_then(|d| d.lmdb_map_size.as_ref()) {
        line(
            t,
            "lmdb_map_size",
            &bytes("spec.database.lmdbMapSize", &q.0)?,
        );
    }
    if let Some(q) = db.and_then(|d| d.fjall_block_cache_size.as_ref()) {
        line(
            t,
            "fjall_block_cache_size",
            &bytes("spec.database.fjallBlockCacheSize", &q.0)?,
        );
    }
    line(t, "replication_factor", &s.replication_factor.to_string());
    line(t, "consistency_mode", &quote(s.consistency_mode));
    if storage.and_then(|st| st.metadata_fsync) == Some(true) {
        line(t, "metadata_fsync", "true");
    }
    if storage.and_then(|st| st.data_fsync) == Some(true) {
        line(t, "data_fsync", "true");
    }
    if let Some(dir) = storage.and_then(|st| st.metadata_snapshots_dir.as_deref()) {
        line(t, "metadata_snapshots_dir", &quote(dir));
    }
    if let Some(i) = storage.and_then(|st| st.metadata_auto_snapshot_interval.as_deref()) {
        line(t, "metadata_auto_snapshot_interval", &quote(i));
    }
    Ok(())
}

/// Block handling and the security switches.
fn blocks_and_security(t: &mut String, c: &GarageCluster) -> Result<(), DesiredError> {
    let spec = &c.spec;
    if let Some(b) = spec.blocks.as_ref() {
        if let Some(q) = &b.size {
            line(t, "block_size", &bytes("spec.blocks.size", &q.0)?);
        }
        if let Some(q) = &b.ram_buffer_max {
            line(
                t,
                "block_ram_buffer_max",
                &bytes("spec.blocks.ramBufferMax", &q.0)?,
            );
        }
        if let Some(n) = b.max_concurrent_reads {
            line(t, "block_max_concurrent_reads", &n.to_string());
        }
        if let Some(n) = b.max_concurrent_writes_per_request {
            line(t, "block_max_concurrent_writes_per_request", &n.to_string());
        }
        if let Some(level) = b.compression_level.as_deref() {
            let v = if level.parse::<i64>().is_ok() {
                level.to_owned()
            } else {
                quote(level)
            };
            line(t, "compression_level", &v);
        }
        if b.disable_scrub == Some(true) {
            line(t, "disable_scrub", "true");
        }
        if b.use_local_tz == Some(true) {
            line(t, "use_local_tz", "true");
        }
    }
    if let Some(sec) = spec.security.as_ref() {
        if sec.allow_insecure_secret_permissions == Some(true) {
            line(t, "allow_world_readable_secrets", "true");
        }
        if sec.allow_punycode == Some(true) {
            line(t, "allow_punycode", "true");
        }
    }
    Ok(())
}

/// The RPC listener, its secret and the peers to join.
fn rpc_section(t: &mut String, c: &GarageCluster, s: &Settings) {
    let spec = &c.spec;
    let network = spec.network.as_ref();
    let rpc_bind = network
        .and_then(|n| n.rpc_bind_address.clone())
        .unwrap_or_else(|| format!("[::]:{}", s.rpc_port));
    line(t, "rpc_bind_addr", &quote(&rpc_bind));
    line(
        t,
        "rpc_secret_file",
        &quote(&format!("{RPC_SECRET_DIR}/{RPC_SECRET_KEY}")),
    );
    // An edge gateway's members share one config: its gateway tier's address comes first.
    let edge_address = spec
        .gateway
        .as_ref()
        .filter(|_| super::edge::is_edge(c))
        .and_then(|g| g.rpc_public_addr.clone())
        .filter(|a| !a.is_empty());
    let public = edge_address
        .or_else(|| network.and_then(|n| n.rpc_public_addr.clone()))
        .or_else(|| super::public_endpoint::shared_address(s));
    if let Some(addr) = public {
        line(t, "rpc_public_addr", &quote(&addr));
    }
    if let Some(subnet) = network.and_then(|n| n.rpc_public_addr_subnet.as_deref()) {
        line(t, "rpc_public_addr_subnet", &quote(subnet));
    }
    if network.and_then(|n| n.rpc_timeout.as_deref()).is_some() {
        line(
            t,
            "rpc_timeout_msec",
            &s.rpc_timeout.as_millis().to_string(),
        );
    }
    if let Some(ping) = s.rpc_ping_timeout {
        line(t, "rpc_ping_timeout_msec", &ping.as_millis().to_string());
    }
    if network.and_then(|n| n.rpc_bind_outgoing) == Some(true) {
        line(t, "rpc_bind_outgoing", "true");
    }
    // An edge gateway's peers of its storage cluster (`spec.connectTo.bootstrapPeers`) are
    // peers to contact first as much as its own are.
    let connect = c
        .spec
        .connect_to
        .as_ref()
        .filter(|_| super::edge::is_edge(c))
        .and_then(|t| t.bootstrap_peers.clone());
    let peers: Vec<String> = network
        .and_then(|n| n.bootstrap_peers.clone())
        .into_iter()
        .chain(connect)
        .flatten()
        .map(|p| quote(&p))
        .collect();
    line(t, "bootstrap_peers", &format!("[{}]", peers.join(", ")));
}

/// The S3, K2V, web and admin endpoints.
fn api_sections(t: &mut String, c: &GarageCluster, s: &Settings) {
    let spec = &c.spec;
    let s3 = spec.s3_api.as_ref();
    t.push_str("\n[s3_api]\n");
    let s3_bind = s3
        .and_then(|a| a.bind_address.clone())
        .unwrap_or_else(|| format!("[::]:{}", s.s3_port));
    line(t, "api_bind_addr", &quote(&s3_bind));
    line(
        t,
        "s3_region",
        &quote(s3.and_then(|a| a.region.as_deref()).unwrap_or("garage")),
    );
    if let Some(root) = s3.and_then(|a| a.root_domain.as_deref()) {
        line(t, "root_domain", &quote(root));
    }
    if let Some(k2v_port) = s.k2v_port {
        t.push_str("\n[k2v_api]\n");
        let bind = spec
            .k2v_api
            .as_ref()
            .and_then(|k| k.bind_address.clone())
            .unwrap_or_else(|| format!("[::]:{k2v_port}"));
        line(t, "api_bind_addr", &quote(&bind));
    }
    if let Some(web_port) = s.web_port {
        let web = spec.web_api.as_ref();
        t.push_str("\n[s3_web]\n");
        let bind = web
            .and_then(|w| w.bind_address.clone())
            .unwrap_or_else(|| format!("[::]:{web_port}"));
        line(t, "bind_addr", &quote(&bind));
        let root = web
            .and_then(|w| w.root_domain.clone())
            .unwrap_or_else(|| format!(".{}.{}.svc", s.name, s.namespace));
        line(t, "root_domain", &quote(&root));
        if web.and_then(|w| w.add_host_to_metrics) == Some(true) {
            line(t, "add_host_to_metrics", "true");
        }
    }
    let admin = spec.admin.as_ref();
    t.push_str("\n[admin]\n");
    let admin_bind = admin
        .and_then(|a| a.bind_address.clone())
        .unwrap_or_else(|| format!("[::]:{}", s.admin_port));
    line(t, "api_bind_addr", &quote(&admin_bind));
    line(
        t,
        "admin_token_file",
        &quote(&format!("{ADMIN_TOKEN_DIR}/{ADMIN_TOKEN_KEY}")),
    );
    if admin
        .and_then(|a| a.metrics_token_secret_ref.as_ref())
        .is_some()
    {
        line(
            t,
            "metrics_token_file",
            &quote(&format!("{METRICS_TOKEN_DIR}/{METRICS_TOKEN_KEY}")),
        );
    }
    if admin.and_then(|a| a.metrics_require_token) == Some(true) {
        line(t, "metrics_require_token", "true");
    }
    if let Some(sink) = admin.and_then(|a| a.trace_sink.as_deref()) {
        line(t, "trace_sink", &quote(sink));
    }
}

/// A config revision: the ConfigMap named after the digest of its body.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigRevision {
    /// `C-config-<12 hex>`.
    pub name: String,
    /// Full sha256 of the body.
    pub revision: String,
    /// The immutable ConfigMap.
    pub config_map: ConfigMap,
}

/// The shared config revision of the cluster.
pub fn revision(c: &GarageCluster, s: &Settings) -> Result<ConfigRevision, DesiredError> {
    let body = render(c, s)?;
    let revision = names::sha256_hex(body.as_bytes());
    let base = names::config_base(&s.name);
    revision_of(
        c,
        s,
        &base,
        revision,
        body,
        labels::cluster_labels(&s.name),
        BTreeMap::new(),
    )
}

/// The immutable ConfigMap `<base>-<12 hex of revision>` holding `body` as garage.toml,
/// controlled by the cluster, with `labels` and, beside the base-name annotation, `extra`.
pub fn revision_of(
    c: &GarageCluster,
    s: &Settings,
    base: &str,
    revision: String,
    body: String,
    labels: BTreeMap<String, String>,
    mut extra: BTreeMap<String, String>,
) -> Result<ConfigRevision, DesiredError> {
    let name = names::config_revision(base, &revision);
    extra.insert(
        annotation::ANNOTATION_GARAGE_CONFIG_BASE_NAME.to_owned(),
        base.to_owned(),
    );
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(s.namespace.clone()),
            labels: Some(labels),
            annotations: Some(extra),
            owner_references: Some(vec![controller_ref(c)?]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(CONFIG_KEY.to_owned(), body)])),
        immutable: Some(true),
        ..Default::default()
    };
    Ok(ConfigRevision {
        name,
        revision,
        config_map,
    })
}

/// The `data_dir` value: the single data directory, or one inline table per directory of
/// `spec.storage.data.paths` in their order, a writable one with its capacity as a string of
/// integral bytes (a Kubernetes `m` suffix would read as mega to Garage) and a read-only one
/// with none.
fn data_dir(dirs: Option<&[super::data_dirs::DataDir]>) -> String {
    let Some(dirs) = dirs else {
        return quote(DATA_DIR);
    };
    let mut v = String::from("[\n");
    for d in dirs {
        let _ = match d.capacity {
            Some(bytes) => writeln!(
                v,
                "  {{ path = {}, capacity = {} }},",
                quote(&d.path),
                quote(&bytes.to_string())
            ),
            None => writeln!(v, "  {{ path = {}, read_only = true }},", quote(&d.path)),
        };
    }
    v.push(']');
    v
}

fn line(t: &mut String, key: &str, value: &str) {
    // Writing into a String cannot fail.
    let _ = writeln!(t, "{key} = {value}");
}

fn bytes(field: &'static str, q: &str) -> Result<String, DesiredError> {
    quantity::to_bytes(q)
        .map(|b| b.to_string())
        .ok_or_else(|| DesiredError::Invalid {
            field,
            message: format!("{q:?} is not a quantity"),
        })
}

/// A TOML basic string with TOML's own escapes (never Go- or Rust-style `\x`).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::test_support::cluster;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use serde_json::json;

    fn rendered(c: &GarageCluster) -> String {
        render(c, &Settings::from_cluster(c).unwrap()).unwrap()
    }

    #[test]
    fn kubernetes_discovery_is_rendered_only_when_turned_on() {
        let with = |d: serde_json::Value| {
            let mut c = cluster(3);
            c.spec.discovery = Some(serde_json::from_value(d).unwrap());
            rendered(&c)
        };
        let off = [
            json!({}),
            json!({"kubernetes": {"enabled": false, "namespace": "x"}}),
            json!({"kubernetes": {"serviceName": "x"}}),
        ];
        for d in off {
            let t = with(d.clone());
            assert!(!t.contains("kubernetes_discovery"), "{d}: {t}");
        }
        let t = with(json!({"kubernetes": {"enabled": true}}));
        assert!(
            t.ends_with(
                "\n[kubernetes_discovery]\nnamespace = \"ns\"\nservice_name = \"garage\"\nskip_crd = false\n"
            ),
            "the cluster's own namespace and name by default, after every top-level key:\n{t}"
        );
        let t = with(json!({"kubernetes": {"enabled": true, "namespace": "disco",
            "serviceName": "store", "skipCRD": true}}));
        assert!(
            t.contains("[kubernetes_discovery]\nnamespace = \"disco\"\nservice_name = \"store\"\nskip_crd = true\n"),
            "{t}"
        );
    }

    #[test]
    fn renders_the_keys_garage_needs() {
        let t = rendered(&cluster(3));
        for want in [
            "metadata_dir = \"/data/metadata\"\n",
            "data_dir = \"/data/data\"\n",
            "db_engine = \"lmdb\"\n",
            "replication_factor = 3\n",
            "consistency_mode = \"consistent\"\n",
            "rpc_bind_addr = \"[::]:3901\"\n",
            "rpc_secret_file = \"/secrets/rpc/rpc-secret\"\n",
            "bootstrap_peers = []\n",
            "[s3_api]\napi_bind_addr = \"[::]:3900\"\ns3_region = \"garage\"\n",
            "[s3_web]\nbind_addr = \"[::]:3902\"\nroot_domain = \".garage.ns.svc\"\n",
            "[admin]\napi_bind_addr = \"[::]:3903\"\nadmin_token_file = \"/secrets/admin/admin-token\"\n",
        ] {
            assert!(t.contains(want), "missing {want:?} in\n{t}");
        }
        assert!(
            !t.contains("rpc_secret ="),
            "the secret itself is never in the config"
        );
        assert!(!t.contains("rpc_public_addr"));
        assert!(
            !t.contains("rpc_timeout_msec"),
            "Garage's default unless set"
        );
    }

    #[test]
    fn the_rpc_timeout_is_rendered_in_milliseconds() {
        let mut c = cluster(3);
        c.spec
            .network
            .get_or_insert_with(Default::default)
            .rpc_timeout = Some("1m30s".into());
        assert!(rendered(&c).contains("rpc_timeout_msec = 90000\n"));
        c.spec
            .network
            .get_or_insert_with(Default::default)
            .rpc_timeout = Some("soon".into());
        let e = Settings::from_cluster(&c).unwrap_err();
        assert!(e.to_string().contains("spec.network.rpcTimeout"), "{e}");
    }

    #[test]
    fn the_zone_redundancy_is_read_with_its_bounds() {
        use garage_api_types::ZoneRedundancy;
        use shared_types::garage_cluster::common::ZoneRedundancyMode::{AtLeast, Maximum};
        let cases = [
            (None, None, Ok(None)),
            (Some(Maximum), None, Ok(Some(ZoneRedundancy::Maximum))),
            (Some(AtLeast), Some(2), Ok(Some(ZoneRedundancy::AtLeast(2)))),
            (Some(AtLeast), Some(3), Ok(Some(ZoneRedundancy::AtLeast(3)))),
            (
                Some(AtLeast),
                Some(4),
                Err("between 1 and the replication factor 3"),
            ),
            (Some(AtLeast), Some(0), Err("between 1")),
            (Some(AtLeast), None, Err("is required")),
            (Some(Maximum), Some(2), Err("only valid")),
            (None, Some(2), Err("only valid")),
        ];
        for (mode, min, want) in cases {
            let mut c = cluster(3);
            let r = c.spec.replication.get_or_insert_with(Default::default);
            r.zone_redundancy_mode = mode;
            r.zone_redundancy_min_zones = min;
            match (Settings::from_cluster(&c), want) {
                (Ok(s), Ok(z)) => assert_eq!(s.zone_redundancy, z, "{mode:?} {min:?}"),
                (Err(e), Err(text)) => {
                    let e = e.to_string();
                    assert!(e.contains("spec.replication.zoneRedundancyMinZones"), "{e}");
                    assert!(e.contains(text), "{e}");
                }
                (got, want) => panic!("{mode:?} {min:?}: {got:?} vs {want:?}"),
            }
        }
    }

    #[test]
    fn the_rpc_ping_timeout_is_rendered_in_milliseconds_only_when_set() {
        let mut c = cluster(3);
        assert!(!rendered(&c).contains("rpc_ping_timeout_msec"));
        c.spec
            .network
            .get_or_insert_with(Default::default)
            .rpc_ping_timeout = Some("2500ms".into());
        assert!(rendered(&c).contains("rpc_ping_timeout_msec = 2500\n"));
        c.spec
            .network
            .get_or_insert_with(Default::default)
            .rpc_ping_timeout = Some("0s".into());
        let e = Settings::from_cluster(&c).unwrap_err();
        assert!(e.to_string().contains("spec.network.rpcPingTimeout"), "{e}");
    }

    #[test]
    fn sizes_are_integral_bytes_and_strings_are_escaped() {
        let mut c = cluster(3);
        c.spec.blocks = Some(shared_types::garage_cluster::common::BlockConfig {
            size: Some(Quantity("1Mi".into())),
            compression_level: Some("none".into()),
            ..Default::default()
        });
        c.spec.s3_api = Some(shared_types::garage_cluster::common::S3ApiConfig {
            region: Some("eu\"west\\1".into()),
            ..Default::default()
        });
        let t = rendered(&c);
        assert!(t.contains("block_size = 1048576\n"), "{t}");
        assert!(t.contains("compression_level = \"none\"\n"));
        assert!(t.contains(r#"s3_region = "eu\"west\\1""#), "{t}");
        assert_eq!(quote("a\u{1}b"), "\"a\\u0001b\"");
    }

    #[test]
    fn data_paths_render_a_data_dir_array_of_integral_bytes() {
        let c = crate::desired::test_support::paths_cluster(1);
        let t = rendered(&c);
        let want = concat!(
            "data_dir = [\n",
            "  { path = \"/data/fast\", capacity = \"629145600\" },\n",
            "  { path = \"/data/slow\", capacity = \"2147483648\" },\n",
            "  { path = \"/data/old\", read_only = true },\n",
            "]\n",
        );
        assert!(t.contains(want), "{t}");
        assert!(t.starts_with("metadata_dir = \"/data/metadata\"\ndata_dir = [\n"));
        assert!(!t.contains("Mi"), "never a unit suffix: {t}");
        // The single directory is unchanged for every other cluster.
        assert!(rendered(&cluster(3)).contains("data_dir = \"/data/data\"\n"));
    }

    #[test]
    fn web_can_be_disabled() {
        let mut c = cluster(3);
        c.spec.web_api = Some(shared_types::garage_cluster::common::WebApiConfig {
            enabled: Some(false),
            ..Default::default()
        });
        assert!(!rendered(&c).contains("[s3_web]"));
    }

    #[test]
    fn k2v_is_served_only_when_spec_k2v_api_is_set() {
        use shared_types::garage_cluster::common::K2vApiConfig;
        let mut c = cluster(3);
        assert!(!rendered(&c).contains("k2v"));
        for (k2v, want) in [
            (K2vApiConfig::default(), "[::]:3904"),
            (
                K2vApiConfig {
                    bind_port: Some(3910),
                    ..Default::default()
                },
                "[::]:3910",
            ),
            (
                K2vApiConfig {
                    bind_address: Some("0.0.0.0:3911".into()),
                    bind_port: Some(3910),
                },
                "0.0.0.0:3911",
            ),
        ] {
            c.spec.k2v_api = Some(k2v);
            let t = rendered(&c);
            let section = format!("[k2v_api]\napi_bind_addr = \"{want}\"\n");
            assert!(t.contains(&section), "missing {section:?} in\n{t}");
        }
    }

    #[test]
    fn revisions_are_content_addressed_and_immutable() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        let a = revision(&c, &s).unwrap();
        let b = revision(&c, &s).unwrap();
        assert_eq!(a, b, "rendering is deterministic");
        assert!(
            a.name.starts_with("garage-config-") && a.name.len() == "garage-config-".len() + 12
        );
        assert_eq!(a.config_map.immutable, Some(true));
        let owner = &a.config_map.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("GarageCluster", "uid-1")
        );
        assert_eq!(owner.controller, Some(true));
        let mut c2 = cluster(3);
        c2.spec.replication = Some(shared_types::garage_cluster::common::ReplicationConfig {
            factor: Some(2),
            ..Default::default()
        });
        let s2 = Settings::from_cluster(&c2).unwrap();
        assert_ne!(revision(&c2, &s2).unwrap().name, a.name);
        // Replica count is not part of the config: scaling never rolls the config.
        let c4 = cluster(4);
        assert_eq!(
            revision(&c4, &Settings::from_cluster(&c4).unwrap())
                .unwrap()
                .name,
            a.name
        );
    }
}
