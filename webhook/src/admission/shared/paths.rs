//! Path rules of node-local pools: host paths (SH-HP), container paths
//! (SH-CP) and the overlap relation used within a pool, across pools and
//! across GarageClusters.

use super::Problem;

/// Lexical clean of a slash-separated path, as Go's `path.Clean`: collapses
/// repeated and trailing slashes, `.` and `..` elements.
pub fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_string();
    }
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    let joined = out.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// Whether two cleaned absolute paths are equal or one contains the other.
pub fn overlaps(a: &str, b: &str) -> bool {
    let (a, b) = (clean(a), clean(b));
    if a == b || a == "/" || b == "/" {
        return true;
    }
    a.starts_with(&format!("{b}/")) || b.starts_with(&format!("{a}/"))
}

/// SH-HP: a host path must be present, absolute, not the host root and
/// already normalised.
pub fn check_host_path(field: &str, p: &str) -> Option<Problem> {
    if p.is_empty() {
        return Some(Problem::new(
            field,
            "required: set an absolute HostPath directory",
        ));
    }
    if !p.starts_with('/') {
        return Some(Problem::new(
            field,
            format!("{p:?} must be an absolute path (start it with '/')"),
        ));
    }
    let cleaned = clean(p);
    if cleaned == "/" {
        return Some(Problem::new(
            field,
            "mounting the host root is not allowed; use a dedicated directory on the Node's disk",
        ));
    }
    if cleaned != p {
        return Some(Problem::new(
            field,
            format!("{p:?} must be a normalized path; write {cleaned:?} instead"),
        ));
    }
    None
}

/// Container mounts the operator owns; a data path must not overlap them.
pub const OPERATOR_MOUNTS: &[&str] = &[
    "/data/metadata",
    "/etc/garage",
    "/secrets",
    "/var/run/garage-volume-markers",
];

/// SH-CP: a data path's container path must be absolute, free of quoting
/// characters, normalised, not `/` and clear of operator mounts.
pub fn check_container_path(field: &str, p: &str) -> Option<Problem> {
    if p.is_empty() || !p.starts_with('/') {
        return Some(Problem::new(
            field,
            format!("{p:?} must be a non-empty absolute container path such as /data/disk-1"),
        ));
    }
    if p.contains(['"', '\\', '\n', '\r', '\t']) {
        return Some(Problem::new(
            field,
            format!(
                "{p:?} must not contain quotes, backslashes, newlines or tabs because it is written into garage.toml"
            ),
        ));
    }
    let cleaned = clean(p);
    if cleaned == "/" {
        return Some(Problem::new(
            field,
            "the container root cannot be a data path",
        ));
    }
    if let Some(m) = OPERATOR_MOUNTS.iter().find(|m| overlaps(&cleaned, m)) {
        return Some(Problem::new(
            field,
            format!(
                "{p:?} conflicts with operator-managed mount {m}; choose a path such as /data/disk-1"
            ),
        ));
    }
    if cleaned != p {
        return Some(Problem::new(
            field,
            format!("{p:?} must be a normalized path; write {cleaned:?} instead"),
        ));
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn clean_matches_go_semantics() {
        for (input, want) in [
            ("/a//b/", "/a/b"),
            ("/a/./b/../c", "/a/c"),
            ("/..", "/"),
            ("/", "/"),
            ("a/../..", ".."),
            ("", "."),
        ] {
            assert_eq!(clean(input), want, "{input}");
        }
    }

    #[test]
    fn overlap_is_equality_or_ancestry_on_whole_components() {
        assert!(overlaps("/var/lib/garage", "/var/lib/garage/data"));
        assert!(overlaps("/x/", "/x"));
        assert!(!overlaps("/var/lib/garage", "/var/lib/garage2"));
        assert!(!overlaps("/mnt/a", "/mnt/b"));
    }

    #[test]
    fn host_and_container_path_rules() {
        assert!(check_host_path("f", "/var/lib/garage").is_none());
        assert!(check_host_path("f", "").is_some());
        assert!(check_host_path("f", "var/lib").is_some_and(|p| p.message.contains("absolute")));
        assert!(check_host_path("f", "/").is_some_and(|p| p.message.contains("host root")));
        assert!(check_host_path("f", "/a/../").is_some_and(|p| p.message.contains("host root")));
        assert!(check_host_path("f", "/a//b").is_some_and(|p| p.message.contains("normalized")));
        assert!(check_container_path("f", "/data/data").is_none());
        for bad in [
            "/data",
            "/data/metadata/nested",
            "/secrets/metrics",
            "/secrets/consul/client-key/nested",
            "/var/run/garage-volume-markers/data-0",
        ] {
            let p = check_container_path("f", bad);
            assert!(
                p.is_some_and(|p| p.message.contains("operator-managed")),
                "{bad}"
            );
        }
        assert!(check_container_path("f", "/data/a\"b").is_some());
        assert!(check_container_path("f", "/").is_some());
        assert!(check_container_path("f", "relative").is_some());
    }
}
