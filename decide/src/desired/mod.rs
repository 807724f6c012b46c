//! Desired state: pure builders from a v1beta2 GarageCluster (and its generated GarageNodes)
//! to the Kubernetes objects the reconciler owns. Nothing here does I/O; the controllers read,
//! call these and write the difference.
//!
//! Scope: the default storage group (Auto, one data volume or `data.paths`), user-written
//! GarageNodes (Manual or beside an Auto group) and node-local pools. Gateways, federation and
//! Consul are refused by [`Settings::from_cluster`] as unsupported, naming the field, rather
//! than rendered half-way.

pub mod config;
pub mod credentials;
pub mod data_dirs;
pub mod disk_layout;
pub mod edge;
pub mod hostpath_claim;
pub mod labels;
pub mod network_policy;
pub mod node_config;
pub mod nodes;
pub mod pdb;
pub mod pod_security;
pub mod pool;
pub mod public_endpoint;
pub mod quantity;
pub mod rpc_address;
pub mod secrets;
pub mod service_monitor;
pub mod services;
pub mod statefulset;
pub mod tier_defaults;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use std::collections::BTreeMap;
use std::time::Duration;

use kube::{Resource, ResourceExt};
use shared_types::garage_cluster::common::{ConsistencyMode, LayoutPolicy};
use shared_types::garage_cluster::v1beta2::{GarageCluster, GarageClusterSpec, NodeLocalPoolSpec};

/// Garage image used when the cluster names none.
pub const DEFAULT_GARAGE_IMAGE: &str = "dxflrs/garage:v2.5.0";
/// Tag appended to `spec.imageRepository`.
pub const DEFAULT_GARAGE_TAG: &str = "v2.5.0";
/// Default size of a storage volume when `size` is unset.
pub const DEFAULT_VOLUME_SIZE: &str = "10Gi";

/// The tag of `repo[:port]/name:tag` (none for a digest or an untagged reference).
fn image_tag(image: &str) -> Option<&str> {
    if image.contains('@') {
        return None;
    }
    let name_start = image.rfind('/').map_or(0, |i| i + 1);
    image[name_start..].rsplit_once(':').map(|(_, tag)| tag)
}

/// Why desired state cannot be rendered. Each message names the field and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DesiredError {
    /// The object lacks metadata the API server always sets (name, namespace, UID).
    #[error("the object has no {0}; it was not read from the API server")]
    MissingMetadata(&'static str),
    /// A field holds a value that cannot be used.
    #[error("{field}: {message}")]
    Invalid {
        /// Field path.
        field: &'static str,
        /// What is wrong and what to do.
        message: String,
    },
    /// The spec asks for something this reconciler does not implement yet.
    #[error(
        "{0} is not supported by this operator version yet; nothing was created or changed for it"
    )]
    Unsupported(&'static str),
    /// The spec asks for a change this reconciler cannot carry out safely yet; nothing is
    /// changed until the field is set back.
    #[error("{field}: {message}")]
    UnsupportedChange {
        /// Field path.
        field: &'static str,
        /// What was asked, why it is not done, and how to undo it.
        message: String,
    },
}

impl DesiredError {
    /// The condition reason, the phase and the metric label this error is reported under,
    /// in one place for every controller: a shape not built yet waits (`Unsupported`,
    /// Pending); anything else is the user's to fix (`ValidationFailed`, Failed).
    pub fn reported_as(
        &self,
    ) -> (
        &'static str,
        shared_types::common::ClusterPhase,
        &'static str,
    ) {
        use shared_types::common::ClusterPhase;
        use shared_types::conditions::reason;
        match self {
            Self::Unsupported(_) | Self::UnsupportedChange { .. } => (
                reason::REASON_UNSUPPORTED,
                ClusterPhase::Pending,
                "unsupported",
            ),
            Self::Invalid { .. } | Self::MissingMetadata(_) => (
                reason::REASON_VALIDATION_FAILED,
                ClusterPhase::Failed,
                "invalid_spec",
            ),
        }
    }
}

/// The effective values of a GarageCluster that every builder needs, with CRD defaults applied
/// explicitly (the API server applies them too, but an object may predate a default).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Cluster name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// Cluster UID (owner references, layout tags).
    pub uid: String,
    /// Desired members of the default storage group (0 under the Manual storage policy).
    pub replicas: u32,
    /// True when the storage tier's layout policy is Manual: no generated GarageNodes.
    pub manual: bool,
    /// The cluster declares a gateway tier (`spec.gateway`): its gateway Service and budget
    /// exist even when every gateway is a GarageNode the user wrote.
    pub gateway_tier: bool,
    /// Generated gateway members (`spec.gateway.replicas`; 0 without a gateway tier or under
    /// the cluster's Manual layout policy, where gateways are the user's GarageNodes).
    pub gateway_replicas: u32,
    /// Garage `replication_factor`.
    pub replication_factor: u32,
    /// The layout's zone redundancy (`spec.replication.zoneRedundancyMode`); `None` leaves
    /// Garage's parameter as it is.
    pub zone_redundancy: Option<garage_api_types::ZoneRedundancy>,
    /// Garage `consistency_mode`.
    pub consistency_mode: &'static str,
    /// RPC port.
    pub rpc_port: u16,
    /// S3 API port.
    pub s3_port: u16,
    /// Admin API port.
    pub admin_port: u16,
    /// Web port, when the web endpoint is enabled.
    pub web_port: Option<u16>,
    /// K2V port, when `spec.k2vApi` turns the K2V API on.
    pub k2v_port: Option<u16>,
    /// Layout zone of Auto members.
    pub zone: String,
    /// `spec.zoneFrom.nodeLabel`: the Node label Auto and pool members take their zone from.
    pub zone_from: Option<String>,
    /// `spec.network.rpcPublicAddr`: the address every member advertises through the shared
    /// garage.toml, when set.
    pub rpc_public_addr: Option<String>,
    /// `spec.publicEndpoint`, as declared ([`public_endpoint`]).
    pub public_endpoint: Option<shared_types::common::PublicEndpointConfig>,
    /// The address each of the cluster's `LoadBalancer` Services was assigned (Service name to
    /// IP or host name), as the reconciler observed them; empty until it fills it in. Members
    /// advertise these addresses, so a garage.toml depends on them.
    pub ingress: BTreeMap<String, String>,
    /// Garage container image.
    pub image: String,
    /// Layout capacity of each Auto member, in bytes.
    pub capacity: u64,
    /// The data directories of `spec.storage.data.paths` that the shared garage.toml lists;
    /// `None` for the single `/data/data`.
    pub data_dirs: Option<Vec<data_dirs::DataDir>>,
    /// Garage's RPC timeout (`network.rpcTimeout`; Garage's own default when unset). Garage
    /// checks a block it was told about only after twice this, so the drain proof's quiet
    /// window must cover that.
    pub rpc_timeout: Duration,
    /// Garage's RPC ping timeout (`network.rpcPingTimeout`), rendered only when set.
    pub rpc_ping_timeout: Option<Duration>,
    /// Node-local pools (`spec.storage.nodeLocalPools`), as declared.
    pub pools: Vec<NodeLocalPoolSpec>,
    /// `spec.network.rpcPublicAddrSubnet`: a pool member whose Pod IP lies in it publishes
    /// that IP in its `rpc-address:` tag (when its pool has no address template).
    pub rpc_public_addr_subnet: Option<rpc_address::Subnet>,
}

/// Garage's RPC timeout when the cluster sets none.
pub const GARAGE_DEFAULT_RPC_TIMEOUT: Duration = Duration::from_secs(300);

impl Settings {
    /// Applies the install-wide default Garage image (the chart's `defaultGarageImage`) to a
    /// cluster that names no image: it replaces the built-in default, and with
    /// `spec.imageRepository` only its tag is used, as with the built-in default.
    pub fn use_default_image(&mut self, c: &GarageCluster, default_image: Option<&str>) {
        let Some(default_image) = default_image.map(str::trim).filter(|i| !i.is_empty()) else {
            return;
        };
        match (&c.spec.image, &c.spec.image_repository) {
            (Some(_), _) => {}
            (None, Some(repo)) => {
                let tag = image_tag(default_image).unwrap_or(DEFAULT_GARAGE_TAG);
                self.image = format!("{repo}:{tag}");
            }
            (None, None) => self.image = default_image.to_owned(),
        }
    }

    /// Effective settings, or why this cluster cannot be reconciled by this version.
    pub fn from_cluster(c: &GarageCluster) -> Result<Self, DesiredError> {
        let name = c
            .metadata
            .name
            .clone()
            .ok_or(DesiredError::MissingMetadata("name"))?;
        let namespace = c
            .metadata
            .namespace
            .clone()
            .ok_or(DesiredError::MissingMetadata("namespace"))?;
        let uid = c
            .metadata
            .uid
            .clone()
            .ok_or(DesiredError::MissingMetadata("uid"))?;
        let spec = &c.spec;
        refuse_unbuilt_shapes(spec)?;
        let storage = spec
            .storage
            .as_ref()
            .ok_or(DesiredError::Unsupported("a cluster without spec.storage"))?;
        Self::build(c, name, namespace, uid, Some(storage))
    }

    /// Effective settings of an edge gateway (`spec.gateway` and `spec.connectTo`, no
    /// storage): no storage member, no pool, no capacity; the gateway tier of its own.
    pub fn from_edge(c: &GarageCluster) -> Result<Self, DesiredError> {
        if c.spec.storage.is_some() || c.spec.gateway.is_none() || c.spec.connect_to.is_none() {
            return Err(DesiredError::Invalid {
                field: "spec",
                message: "an edge gateway has spec.gateway and spec.connectTo, and no spec.storage"
                    .into(),
            });
        }
        let meta =
            |v: &Option<String>, field| v.clone().ok_or(DesiredError::MissingMetadata(field));
        let (name, namespace, uid) = (
            meta(&c.metadata.name, "name")?,
            meta(&c.metadata.namespace, "namespace")?,
            meta(&c.metadata.uid, "uid")?,
        );
        // Its members share one garage.toml, so there is no per-member address to publish,
        // and a Service nobody advertises would be an open port for nothing.
        if c.spec.public_endpoint.is_some() {
            return Err(DesiredError::Unsupported(
                "spec.publicEndpoint on an edge gateway (its members share one garage.toml: give the address peers dial in spec.gateway.rpcPublicAddr, one edge per address)",
            ));
        }
        let mut s = Self::build(c, name, namespace, uid, None)?;
        // An edge has no generated gateway GarageNodes for a Manual policy to hand over: its
        // StatefulSet runs the replicas asked for whatever the policy.
        s.gateway_replicas = c
            .spec
            .gateway
            .as_ref()
            .and_then(|g| g.replicas)
            .map_or(Ok(2), u32::try_from)
            .map_err(|_| DesiredError::Invalid {
                field: "spec.gateway.replicas",
                message: "must not be negative".into(),
            })?;
        Ok(s)
    }

    /// The settings of `c`, whose storage tier is `storage` (none for an edge gateway).
    fn build(
        c: &GarageCluster,
        name: String,
        namespace: String,
        uid: String,
        storage: Option<&shared_types::garage_cluster::v1beta2::StorageSpec>,
    ) -> Result<Self, DesiredError> {
        let spec = &c.spec;
        let pools = storage
            .and_then(|s| s.node_local_pools.clone())
            .unwrap_or_default();
        check_pools(&pools)?;
        let manual = storage
            .is_some_and(|s| s.layout_policy.or(spec.layout_policy) == Some(LayoutPolicy::Manual));
        let data_dirs = match storage {
            Some(storage) => data_dirs::cluster_data_dirs(storage)?,
            None => None,
        };
        // Pool members with one data HostPath mount the cluster's garage.toml, at /data/data:
        // a list of other directories would send their blocks nowhere durable.
        if data_dirs.is_some() && !pools.is_empty() {
            return Err(DesiredError::Unsupported(
                "spec.storage.data.paths beside spec.storage.nodeLocalPools",
            ));
        }
        let replicas = match storage {
            Some(storage) => {
                u32::try_from(storage.replicas.unwrap_or(3)).map_err(|_| DesiredError::Invalid {
                    field: "spec.storage.replicas",
                    message: "must not be negative".into(),
                })?
            }
            None => 0,
        };
        // Under the Manual policy every storage identity is a GarageNode the user wrote.
        let replicas = if manual { 0 } else { replicas };
        let gateway_replicas = gateway_replicas(spec)?;
        let (replication_factor, consistency_mode) = replication(spec)?;
        let zone_redundancy = zone_redundancy(spec, replication_factor)?;
        let rpc_public_addr_subnet = rpc_public_addr_subnet(spec)?;
        let Ports {
            rpc_port,
            s3_port,
            admin_port,
            web_port,
            k2v_port,
        } = Ports::from_spec(spec)?;
        let zone = spec
            .zone
            .clone()
            .filter(|z| !z.is_empty())
            .unwrap_or_else(|| "default".into());
        let image = match (&spec.image, &spec.image_repository) {
            (Some(image), _) => image.clone(),
            (None, Some(repo)) => format!("{repo}:{DEFAULT_GARAGE_TAG}"),
            (None, None) => DEFAULT_GARAGE_IMAGE.to_owned(),
        };
        let capacity = match storage {
            Some(storage) => auto_capacity(storage, data_dirs.as_deref())?,
            None => 0,
        };
        let rpc_timeout = rpc_timeout(spec)?;
        let rpc_ping_timeout = spec
            .network
            .as_ref()
            .and_then(|n| n.rpc_ping_timeout.as_deref())
            .map(|text| duration("spec.network.rpcPingTimeout", text))
            .transpose()?;
        Ok(Self {
            name,
            namespace,
            uid,
            replicas,
            manual,
            gateway_tier: spec.gateway.is_some(),
            gateway_replicas,
            replication_factor,
            zone_redundancy,
            consistency_mode,
            rpc_port,
            s3_port,
            admin_port,
            web_port,
            k2v_port,
            zone,
            zone_from: spec
                .zone_from
                .as_ref()
                .map(|z| z.node_label.clone())
                .filter(|k| !k.is_empty()),
            rpc_public_addr: spec
                .network
                .as_ref()
                .and_then(|n| n.rpc_public_addr.as_deref())
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(str::to_owned),
            public_endpoint: spec.public_endpoint.clone(),
            ingress: BTreeMap::new(),
            image,
            capacity,
            data_dirs,
            rpc_timeout,
            rpc_ping_timeout,
            pools,
            rpc_public_addr_subnet,
        })
    }
}

/// Shapes this version does not build yet, refused by name rather than ignored.
fn refuse_unbuilt_shapes(spec: &GarageClusterSpec) -> Result<(), DesiredError> {
    // A handle runs no Garage process: nothing here renders for it, and the cluster pass
    // reaches it through `crate::cluster::handle` before asking for settings.
    if spec.connect_to.is_some() && spec.storage.is_none() && spec.gateway.is_none() {
        return Err(DesiredError::Unsupported(
            "a GarageNode or GarageAdminToken on a management handle (a GarageCluster with only spec.connectTo)",
        ));
    }
    if spec.connect_to.is_some() {
        return Err(DesiredError::Unsupported("spec.connectTo"));
    }
    if spec.remote_clusters.as_ref().is_some_and(|r| !r.is_empty()) {
        return Err(DesiredError::Unsupported("spec.remoteClusters"));
    }
    // A discovery switched off (or never switched on) asks for nothing: Garage finds its
    // peers through the operator either way. Kubernetes discovery is rendered
    // (`config::discovery_section`).
    let discovery = spec.discovery.as_ref();
    if discovery
        .and_then(|d| d.consul.as_ref())
        .is_some_and(|c| c.enabled == Some(true))
    {
        return Err(DesiredError::Unsupported("spec.discovery.consul"));
    }
    Ok(())
}

/// The number of generated gateways: `spec.gateway.replicas` (default 2), none without a
/// gateway tier or under the cluster's Manual layout policy.
fn gateway_replicas(spec: &GarageClusterSpec) -> Result<u32, DesiredError> {
    let Some(gateway) = &spec.gateway else {
        return Ok(0);
    };
    if spec.layout_policy == Some(LayoutPolicy::Manual) {
        return Ok(0);
    }
    u32::try_from(gateway.replicas.unwrap_or(2)).map_err(|_| DesiredError::Invalid {
        field: "spec.gateway.replicas",
        message: "must not be negative".into(),
    })
}

/// What each node-local pool must hold before it can be rendered.
fn check_pools(pools: &[NodeLocalPoolSpec]) -> Result<(), DesiredError> {
    for pool in pools {
        if let Some(template) = pool
            .network
            .as_ref()
            .and_then(|n| n.rpc_public_addr_template.as_deref())
            && !template.contains(shared_types::garage_cluster::v1beta2::RPC_TEMPLATE_NODE_NAME)
        {
            return Err(DesiredError::Invalid {
                field: "spec.storage.nodeLocalPools[].network.rpcPublicAddrTemplate",
                message: format!(
                    "pool {}: {template:?} must contain {} so that each Node gets its own address",
                    pool.name,
                    shared_types::garage_cluster::v1beta2::RPC_TEMPLATE_NODE_NAME
                ),
            });
        }
        // Exactly one of the single data HostPath and the list of data paths.
        if pool.data.is_some() == data_dirs::pool_data_dirs(pool)?.is_some() {
            return Err(DesiredError::Invalid {
                field: "spec.storage.nodeLocalPools[].data",
                message: format!("pool {} needs exactly one of data and dataPaths", pool.name),
            });
        }
    }
    Ok(())
}

/// The replication factor (default 3, at least 1) and consistency mode.
fn replication(spec: &GarageClusterSpec) -> Result<(u32, &'static str), DesiredError> {
    let replication = spec.replication.as_ref();
    let replication_factor = replication
        .and_then(|r| r.factor)
        .map_or(Ok(3), u32::try_from)
        .ok()
        .filter(|f| *f >= 1)
        .ok_or_else(|| DesiredError::Invalid {
            field: "spec.replication.factor",
            message: "must be at least 1".into(),
        })?;
    let consistency_mode = match replication.and_then(|r| r.consistency_mode) {
        None | Some(ConsistencyMode::Consistent) => "consistent",
        Some(ConsistencyMode::Degraded) => "degraded",
        Some(ConsistencyMode::Dangerous) => "dangerous",
    };
    Ok((replication_factor, consistency_mode))
}

/// The zone redundancy the layout is computed with: `AtLeast` needs `zoneRedundancyMinZones`
/// between 1 and the factor; `Maximum` takes none.
fn zone_redundancy(
    spec: &GarageClusterSpec,
    factor: u32,
) -> Result<Option<garage_api_types::ZoneRedundancy>, DesiredError> {
    use garage_api_types::ZoneRedundancy;
    use shared_types::garage_cluster::common::ZoneRedundancyMode;
    let replication = spec.replication.as_ref();
    let min = replication.and_then(|r| r.zone_redundancy_min_zones);
    let invalid = |message: String| DesiredError::Invalid {
        field: "spec.replication.zoneRedundancyMinZones",
        message,
    };
    match (replication.and_then(|r| r.zone_redundancy_mode), min) {
        (None, None) => Ok(None),
        (None | Some(ZoneRedundancyMode::Maximum), Some(_)) => Err(invalid(
            "is only valid with zoneRedundancyMode AtLeast; remove it or set the mode".into(),
        )),
        (Some(ZoneRedundancyMode::Maximum), None) => Ok(Some(ZoneRedundancy::Maximum)),
        (Some(ZoneRedundancyMode::AtLeast), None) => Err(invalid(
            "is required with zoneRedundancyMode AtLeast: the number of zones each partition spans"
                .into(),
        )),
        (Some(ZoneRedundancyMode::AtLeast), Some(n)) => match u32::try_from(n) {
            Ok(n) if (1..=factor).contains(&n) => Ok(Some(ZoneRedundancy::AtLeast(u64::from(n)))),
            _ => Err(invalid(format!(
                "{n} is not between 1 and the replication factor {factor}"
            ))),
        },
    }
}

/// The subnet Garage picks its advertised RPC address from, when one is set.
fn rpc_public_addr_subnet(
    spec: &GarageClusterSpec,
) -> Result<Option<rpc_address::Subnet>, DesiredError> {
    let network = spec.network.as_ref();
    let rpc_public_addr_subnet = match network
        .and_then(|n| n.rpc_public_addr_subnet.as_deref())
        .filter(|t| !t.trim().is_empty())
    {
        None => None,
        Some(text) => {
            Some(
                rpc_address::Subnet::parse(text).ok_or_else(|| DesiredError::Invalid {
                    field: "spec.network.rpcPublicAddrSubnet",
                    message: format!("{text:?} is not a CIDR block such as 10.42.0.0/16"),
                })?,
            )
        }
    };
    Ok(rpc_public_addr_subnet)
}

/// Garage's RPC timeout: the spec's, or Garage's default.
fn rpc_timeout(spec: &GarageClusterSpec) -> Result<Duration, DesiredError> {
    match spec.network.as_ref().and_then(|n| n.rpc_timeout.as_deref()) {
        None => Ok(GARAGE_DEFAULT_RPC_TIMEOUT),
        Some(text) => duration("spec.network.rpcTimeout", text),
    }
}

/// A duration field of at least a millisecond (Garage takes milliseconds).
fn duration(field: &'static str, text: &str) -> Result<Duration, DesiredError> {
    shared_types::duration::go_duration(text)
        .filter(|d| *d >= Duration::from_millis(1))
        .ok_or_else(|| DesiredError::Invalid {
            field,
            message: format!("{text:?} is not a duration of at least 1ms such as '30s'"),
        })
}

/// The ports Garage listens on; no web port when the web endpoint is off.
struct Ports {
    rpc_port: u16,
    s3_port: u16,
    admin_port: u16,
    web_port: Option<u16>,
    k2v_port: Option<u16>,
}

impl Ports {
    fn from_spec(spec: &GarageClusterSpec) -> Result<Self, DesiredError> {
        let network = spec.network.as_ref();
        let rpc_port = port(
            "spec.network.rpcBindPort",
            network.and_then(|n| n.rpc_bind_address.as_deref()),
            network.and_then(|n| n.rpc_bind_port),
            3901,
        )?;
        let s3 = spec.s3_api.as_ref();
        let s3_port = port(
            "spec.s3Api.bindPort",
            s3.and_then(|s| s.bind_address.as_deref()),
            s3.and_then(|s| s.bind_port),
            3900,
        )?;
        let admin = spec.admin.as_ref();
        let admin_port = port(
            "spec.admin.bindPort",
            admin.and_then(|a| a.bind_address.as_deref()),
            admin.and_then(|a| a.bind_port),
            3903,
        )?;
        let web = spec.web_api.as_ref();
        let web_port = if web.and_then(|w| w.enabled) == Some(false) {
            None
        } else {
            Some(port(
                "spec.webApi.bindPort",
                web.and_then(|w| w.bind_address.as_deref()),
                web.and_then(|w| w.bind_port),
                3902,
            )?)
        };
        Ok(Self {
            rpc_port,
            s3_port,
            admin_port,
            web_port,
            k2v_port: network_policy::k2v_port_of(spec)?,
        })
    }
}

/// Layout capacity of an Auto member: the data volume size (default 10Gi), or with
/// `data.paths` the capacity of its writable directories together, less
/// `capacityReservePercent`. With paths the top-level size is not what Garage
/// gets to fill, so it is not used even when set.
fn auto_capacity(
    storage: &shared_types::garage_cluster::v1beta2::StorageSpec,
    dirs: Option<&[data_dirs::DataDir]>,
) -> Result<u64, DesiredError> {
    let (bytes, field) = match dirs {
        Some(dirs) => (data_dirs::writable_bytes(dirs), "spec.storage.data.paths"),
        None => {
            let size = storage
                .data
                .as_ref()
                .and_then(|d| d.size.as_ref())
                .map_or(DEFAULT_VOLUME_SIZE, |q| q.0.as_str());
            let bytes = quantity::to_bytes(size).ok_or_else(|| DesiredError::Invalid {
                field: "spec.storage.data.size",
                message: format!("{size:?} is not a quantity"),
            })?;
            (bytes, "spec.storage.data.size")
        }
    };
    let reserve = storage.capacity_reserve_percent.unwrap_or(0);
    if !(0..=50).contains(&reserve) {
        return Err(DesiredError::Invalid {
            field: "spec.storage.capacityReservePercent",
            message: "must be between 0 and 50".into(),
        });
    }
    // u128 keeps the product exact; the result is at most `bytes`.
    let kept = u128::from(bytes) * u128::from(100 - reserve.unsigned_abs()) / 100;
    let capacity = u64::try_from(kept).unwrap_or(bytes);
    if capacity < 1024 {
        return Err(DesiredError::Invalid {
            field,
            message: "the advertised capacity must be at least 1Ki".into(),
        });
    }
    Ok(capacity)
}

/// The port of a listener: an explicit bind address's port wins over the port field.
fn port(
    field: &'static str,
    address: Option<&str>,
    value: Option<i32>,
    default: u16,
) -> Result<u16, DesiredError> {
    if let Some(address) = address {
        let port = address.rsplit_once(':').map(|(_, p)| p);
        return port
            .and_then(|p| p.parse::<u16>().ok())
            .filter(|p| *p != 0)
            .ok_or_else(|| DesiredError::Invalid {
                field,
                message: format!("bind address {address:?} has no port"),
            });
    }
    match value {
        None => Ok(default),
        Some(v) => u16::try_from(v)
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| DesiredError::Invalid {
                field,
                message: format!("{v} is not a TCP port"),
            }),
    }
}

/// The controller owner reference pointing at `owner`. GC deletes the child with its owner;
/// `blockOwnerDeletion` keeps a foreground deletion of the owner waiting for it.
pub fn controller_ref<K>(owner: &K) -> Result<OwnerReference, DesiredError>
where
    K: Resource<DynamicType = ()>,
{
    Ok(OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: owner
            .meta()
            .name
            .clone()
            .ok_or(DesiredError::MissingMetadata("name"))?,
        uid: owner
            .meta()
            .uid
            .clone()
            .ok_or(DesiredError::MissingMetadata("uid"))?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// True when `child` is controlled by exactly the object with `uid`.
pub fn is_controlled_by<K: Resource>(child: &K, uid: &str) -> bool {
    child
        .owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// The metadata of a cluster-wide child `name` whose rendered `spec` is recorded by hash:
/// the cluster's labels, the hash annotation and the cluster as controller.
pub(crate) fn hashed_child_meta<T: serde::Serialize>(
    c: &GarageCluster,
    s: &Settings,
    name: String,
    spec: &T,
) -> Result<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, DesiredError> {
    Ok(k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        name: Some(name),
        namespace: Some(s.namespace.clone()),
        labels: Some(labels::cluster_labels(&s.name)),
        annotations: Some(std::collections::BTreeMap::from([(
            shared_types::keys::annotation::ANNOTATION_RENDERED_HASH.to_owned(),
            rendered_hash(spec),
        )])),
        owner_references: Some(vec![controller_ref(c)?]),
        ..Default::default()
    })
}

/// Digest of a rendered object, for the rendered-hash annotation.
pub fn rendered_hash<T: serde::Serialize>(value: &T) -> String {
    let json = serde_json::to_vec(value).unwrap_or_default();
    names_hash(&json)
}

fn names_hash(bytes: &[u8]) -> String {
    crate::names::sha256_hex(bytes)[..16].to_owned()
}

#[cfg(any(test, feature = "test-support"))]
pub mod test_support;

#[cfg(test)]
mod tests;
