//! Running the real `garage` binary for a Garage container.
//!
//! A Garage container's config says where to listen and where its data is,
//! in container terms. kubesim rewrites it for the host: wildcard bind
//! addresses become the pod's address (every pod shares the host's network
//! stack, so binding 0.0.0.0 would collide), and paths inside the container
//! become the host paths its volumes were materialised at. The rewrite works
//! on the TOML text line by line so that everything it does not touch stays
//! as the user wrote it.

use std::net::IpAddr;

/// The config file Garage reads when nothing else is said.
pub(crate) const DEFAULT_CONFIG: &str = "/etc/garage.toml";
/// The environment variable Garage reads its config path from.
pub(crate) const CONFIG_ENV: &str = "GARAGE_CONFIG_FILE";

/// The config path a Garage command line and environment select, and the
/// arguments with any `-c`/`--config` option removed.
pub(crate) fn config_path(args: &[String], env: &[(String, String)]) -> (String, Vec<String>) {
    let mut path = None;
    let mut rest = Vec::with_capacity(args.len());
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "-c" || arg == "--config" {
            path = iter.next().cloned();
        } else if let Some(value) = arg.strip_prefix("--config=") {
            path = Some(value.to_owned());
        } else if let Some(value) = arg
            .strip_prefix("-c")
            .filter(|v| !v.is_empty() && !arg.starts_with("--"))
        {
            path = Some(value.to_owned());
        } else {
            rest.push(arg.clone());
        }
    }
    let path = path
        .or_else(|| {
            env.iter()
                .find(|(k, _)| k == CONFIG_ENV)
                .map(|(_, v)| v.clone())
        })
        .unwrap_or_else(|| DEFAULT_CONFIG.to_owned());
    (path, rest)
}

/// How a path in the config is mapped to the host.
pub(crate) trait PathMapper {
    /// The host path of `path` if it lies under a volume mount.
    fn mounted(&self, path: &str) -> Option<String>;
    /// The host path of `path`: under a mount, else in the container's own
    /// writable layer.
    fn anywhere(&self, path: &str) -> String;
}

/// Rewrites a Garage config for the host (see the module comment).
pub(crate) fn rewrite(config: &str, pod_ip: IpAddr, paths: &dyn PathMapper) -> String {
    let mut out = String::with_capacity(config.len() + 256);
    let mut section = String::new();
    let mut has_public_addr = false;
    let mut rpc_port: Option<String> = None;
    // The key of a value that spans several lines (a multi-line array).
    let mut open_key: Option<String> = None;
    let mut depth: i32 = 0;
    for line in config.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if open_key.is_none() && trimmed.starts_with('[') {
            section = trimmed
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned();
            out.push_str(line);
            continue;
        }
        if section.is_empty()
            && open_key.is_none()
            && let Some((key, at)) = split_key(line)
        {
            if key == "rpc_public_addr" {
                has_public_addr = true;
            }
            if key == "rpc_bind_addr" {
                let value = line[at..].trim().trim_matches('"').trim_matches('\'');
                if rewrite_bind(value, pod_ip).is_some() {
                    rpc_port = value.rsplit_once(':').map(|(_, p)| p.to_owned());
                }
            }
        }
        let (key, value_start) = match &open_key {
            Some(key) => (key.clone(), 0),
            None => match split_key(line) {
                Some((key, at)) => (key, at),
                None => {
                    out.push_str(line);
                    continue;
                }
            },
        };
        out.push_str(&line[..value_start]);
        let (rewritten, delta) = rewrite_value(&line[value_start..], &section, &key, pod_ip, paths);
        out.push_str(&rewritten);
        depth += delta;
        open_key = if depth > 0 { Some(key) } else { None };
        if depth <= 0 {
            depth = 0;
        }
    }
    // In a real pod Garage finds its public address on its own interface;
    // here the host's default address would be found, so say it outright.
    match (has_public_addr, rpc_port) {
        (false, Some(port)) => {
            let addr = match pod_ip {
                IpAddr::V4(ip) => format!("{ip}:{port}"),
                IpAddr::V6(ip) => format!("[{ip}]:{port}"),
            };
            format!("rpc_public_addr = \"{addr}\"\n{out}")
        }
        _ => out,
    }
}

/// `key = ` at the start of a line: the key and the byte offset of its value.
fn split_key(line: &str) -> Option<(String, usize)> {
    let trimmed = line.trim_start();
    if trimmed.starts_with('#') || trimmed.is_empty() {
        return None;
    }
    let eq = line.find('=')?;
    let key = line[..eq]
        .trim()
        .trim_matches('"')
        .trim_matches('\'')
        .to_owned();
    if key.is_empty() || key.contains(char::is_whitespace) {
        return None;
    }
    Some((key, eq + 1))
}

/// Rewrites the string literals of one line of a value; returns the new text
/// and how much the bracket depth changed.
fn rewrite_value(
    text: &str,
    section: &str,
    key: &str,
    pod_ip: IpAddr,
    paths: &dyn PathMapper,
) -> (String, i32) {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        match c {
            '#' => {
                out.push(c);
                out.extend(chars.by_ref().map(|(_, c)| c));
                break;
            }
            '[' | '{' => {
                depth += 1;
                out.push(c);
            }
            ']' | '}' => {
                depth -= 1;
                out.push(c);
            }
            '"' | '\'' => {
                let mut raw = String::new();
                let mut escaped = false;
                let mut closed = false;
                for (_, d) in chars.by_ref() {
                    if c == '"' && escaped {
                        raw.push(match d {
                            'n' => '\n',
                            't' => '\t',
                            other => other,
                        });
                        escaped = false;
                    } else if c == '"' && d == '\\' {
                        escaped = true;
                    } else if d == c {
                        closed = true;
                        break;
                    } else {
                        raw.push(d);
                    }
                }
                match (closed, rewrite_string(section, key, &raw, pod_ip, paths)) {
                    (true, Some(new)) => out.push_str(&quote(&new)),
                    (true, None) => out.push_str(&quote(&raw)),
                    (false, _) => {
                        out.push(c);
                        out.push_str(&raw);
                    }
                }
            }
            _ => out.push(c),
        }
    }
    (out, depth)
}

fn rewrite_string(
    section: &str,
    key: &str,
    value: &str,
    pod_ip: IpAddr,
    paths: &dyn PathMapper,
) -> Option<String> {
    let is_bind = matches!(
        (section, key),
        ("", "rpc_bind_addr")
            | ("s3_api" | "admin" | "k2v_api", "api_bind_addr")
            | ("s3_web", "bind_addr")
    );
    if is_bind && !value.starts_with('/') {
        return rewrite_bind(value, pod_ip);
    }
    if !value.starts_with('/') {
        return None;
    }
    let path_key = key.ends_with("_dir") || key.ends_with("_file") || key == "path" || is_bind;
    if path_key {
        Some(paths.anywhere(value))
    } else {
        paths.mounted(value)
    }
}

/// `0.0.0.0:3900`, `[::]:3900` or `:3900` → `<pod ip>:3900`.
fn rewrite_bind(value: &str, pod_ip: IpAddr) -> Option<String> {
    let (host, port) = value.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if matches!(host, "" | "0.0.0.0" | "::" | "0:0:0:0:0:0:0:0") {
        Some(match pod_ip {
            IpAddr::V4(ip) => format!("{ip}:{port}"),
            IpAddr::V6(ip) => format!("[{ip}]:{port}"),
        })
    } else {
        None
    }
}

fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            other => out.push(other),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Mounts;
    impl PathMapper for Mounts {
        fn mounted(&self, path: &str) -> Option<String> {
            path.strip_prefix("/mnt/")
                .map(|rest| format!("/host/vol/{rest}"))
        }
        fn anywhere(&self, path: &str) -> String {
            self.mounted(path)
                .unwrap_or_else(|| format!("/host/rootfs{path}"))
        }
    }

    #[test]
    fn rewrites_binds_and_paths() {
        let config = r#"metadata_dir = "/mnt/meta"
data_dir = [
  { path = "/mnt/d1", capacity = "1G" }, # first
  { path = '/mnt/d2', capacity = "1G" },
]
replication_factor = 3
rpc_bind_addr = "[::]:3901"
rpc_secret_file = "/etc/secret/rpc"

[s3_api]
api_bind_addr = "0.0.0.0:3900"
root_domain = ".s3"

[s3_web]
bind_addr = "127.0.0.1:3902"

[admin]
api_bind_addr = ":3903"
admin_token_file = "/mnt/token"
"#;
        let ip: IpAddr = "198.18.0.5".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let out = rewrite(config, ip, &Mounts);
        assert!(out.contains(r#"metadata_dir = "/host/vol/meta""#), "{out}");
        assert!(
            out.contains(r#"{ path = "/host/vol/d1", capacity = "1G" }, # first"#),
            "{out}"
        );
        assert!(
            out.contains(r#"{ path = "/host/vol/d2", capacity = "1G" },"#),
            "{out}"
        );
        assert!(
            out.contains(r#"rpc_bind_addr = "198.18.0.5:3901""#),
            "{out}"
        );
        assert!(
            out.contains(r#"rpc_secret_file = "/host/rootfs/etc/secret/rpc""#),
            "{out}"
        );
        assert!(
            out.contains(r#"api_bind_addr = "198.18.0.5:3900""#),
            "{out}"
        );
        assert!(out.contains(r#"bind_addr = "127.0.0.1:3902""#), "{out}");
        assert!(
            out.contains(r#"api_bind_addr = "198.18.0.5:3903""#),
            "{out}"
        );
        assert!(
            out.contains(r#"admin_token_file = "/host/vol/token""#),
            "{out}"
        );
        assert!(out.contains(r#"root_domain = ".s3""#), "{out}");
        assert!(
            out.starts_with("rpc_public_addr = \"198.18.0.5:3901\"\n"),
            "{out}"
        );
    }

    #[test]
    fn finds_the_config_path() {
        let args = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            config_path(&args(&["-c", "/a.toml", "server"]), &[]),
            ("/a.toml".to_owned(), args(&["server"]))
        );
        assert_eq!(
            config_path(&args(&["--config=/b.toml", "server"]), &[]).0,
            "/b.toml"
        );
        let env = vec![(CONFIG_ENV.to_owned(), "/e.toml".to_owned())];
        assert_eq!(config_path(&args(&["server"]), &env).0, "/e.toml");
        assert_eq!(config_path(&args(&["server"]), &[]).0, DEFAULT_CONFIG);
    }
}
