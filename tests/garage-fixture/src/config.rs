//! garage.toml for one fixture node.

use std::net::Ipv4Addr;
use std::path::Path;

/// Port of the RPC listener (the same on every node: addresses differ).
pub const RPC_PORT: u16 = 3901;
/// Port of the S3 API.
pub const S3_PORT: u16 = 3900;
/// Port of the S3 website endpoint.
pub const WEB_PORT: u16 = 3902;
/// Port of the Admin API.
pub const ADMIN_PORT: u16 = 3903;

/// Region the S3 API answers for.
pub const S3_REGION: &str = "garage";

pub(crate) struct NodeConfig<'a> {
    pub(crate) dir: &'a Path,
    pub(crate) ip: Ipv4Addr,
    pub(crate) replication_factor: usize,
    pub(crate) rpc_secret: &'a str,
    pub(crate) admin_token: &'a str,
    pub(crate) extra_top_level: &'a str,
}

impl NodeConfig<'_> {
    pub(crate) fn render(&self) -> String {
        let dir = self.dir.display();
        let ip = self.ip;
        format!(
            r#"metadata_dir = "{dir}/meta"
data_dir = "{dir}/data"
db_engine = "lmdb"
replication_factor = {rf}
rpc_bind_addr = "{ip}:{RPC_PORT}"
rpc_public_addr = "{ip}:{RPC_PORT}"
rpc_bind_outgoing = true
rpc_secret = "{secret}"
{extra}

[s3_api]
api_bind_addr = "{ip}:{S3_PORT}"
s3_region = "{S3_REGION}"
root_domain = ".s3.garage.localhost"

[s3_web]
bind_addr = "{ip}:{WEB_PORT}"
root_domain = ".web.garage.localhost"

[admin]
api_bind_addr = "{ip}:{ADMIN_PORT}"
admin_token = "{token}"
"#,
            rf = self.replication_factor,
            secret = self.rpc_secret,
            extra = self.extra_top_level,
            token = self.admin_token,
        )
    }
}
