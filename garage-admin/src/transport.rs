//! HTTP transport: base URL, bearer token, timeouts, read retries and body limits.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use url::Url;

use super::error::GarageError;
use garage_api_types::AdminToken;

/// How long an idle connection to a Garage pod is kept for the next call.
const POOL_IDLE: Duration = Duration::from_secs(10);
/// Garage's answers are small; anything past this is not an Admin API answer.
const MAX_BODY: usize = 10 * 1024 * 1024;

/// Timeouts and retry policy.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Deadline of one HTTP attempt, from connect to the last body byte.
    pub timeout: Duration,
    /// Deadline of the TCP connect alone.
    pub connect_timeout: Duration,
    /// Extra attempts for read-only calls after a retryable failure (503, timeout, connection
    /// error). Writes are never retried: a write that timed out may have been applied, and
    /// the caller must re-read before deciding again.
    pub read_retries: u32,
    /// Delay before the first retry; doubled for each further one.
    pub backoff: Duration,
    /// Upper bound of one retry delay.
    pub max_backoff: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            read_retries: 3,
            backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(2),
        }
    }
}

/// Whether a call changes state; only read-only calls are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
}

/// A client of one Garage Admin API endpoint (`http://host:3903`).
#[derive(Clone)]
pub struct AdminClient {
    http: reqwest::Client,
    base: Url,
    auth: HeaderValue,
    config: ClientConfig,
}

impl fmt::Debug for AdminClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdminClient")
            .field("base", &self.base.as_str())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AdminClient {
    /// A client with the default [`ClientConfig`].
    pub fn new(base_url: &str, token: &AdminToken) -> Result<Self, GarageError> {
        Self::with_config(base_url, token, ClientConfig::default())
    }

    /// A client with explicit timeouts and retry policy.
    pub fn with_config(
        base_url: &str,
        token: &AdminToken,
        config: ClientConfig,
    ) -> Result<Self, GarageError> {
        // The URL may come from a user's spec: an error never repeats it whole, since a URL
        // can carry a password, and a URL that does is refused (the token is the credential;
        // reqwest's own errors would print the user info).
        let base = Url::parse(base_url.trim_end_matches('/')).map_err(|e| {
            GarageError::InvalidArgument(format!("the base URL does not parse: {e}"))
        })?;
        if !base.username().is_empty() || base.password().is_some() {
            return Err(GarageError::InvalidArgument(
                "the base URL carries user info (user:password@); remove it, the admin token \
                 is sent as a bearer header"
                    .into(),
            ));
        }
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(GarageError::InvalidArgument(format!(
                "base URL {:?} is not an http(s) URL",
                base.as_str()
            )));
        }
        let mut auth =
            HeaderValue::from_str(&format!("Bearer {}", token.expose())).map_err(|_| {
                GarageError::InvalidArgument("the admin token is not header-safe".into())
            })?;
        // Keeps the value out of hyper's and reqwest's debug output.
        auth.set_sensitive(true);
        let http = shared_http(config.connect_timeout, config.timeout)
            .map_err(|e| GarageError::InvalidArgument(format!("building the HTTP client: {e}")))?;
        Ok(Self {
            http,
            base,
            auth,
            config,
        })
    }

    /// The base URL this client talks to.
    pub fn base_url(&self) -> &Url {
        &self.base
    }

    /// The timeouts and retry policy in force.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// `GET /v2/<endpoint>` and decode the JSON answer.
    pub(crate) async fn get<T: DeserializeOwned>(
        &self,
        endpoint: &'static str,
        query: &[(&str, &str)],
    ) -> Result<T, GarageError> {
        let (_, body) = self
            .send(Method::GET, endpoint, query, None, Kind::Read)
            .await?;
        decode(endpoint, &body)
    }

    /// `POST /v2/<endpoint>` with an optional JSON body and decode the JSON answer.
    pub(crate) async fn post<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        endpoint: &'static str,
        query: &[(&str, &str)],
        body: Option<&B>,
        kind: Kind,
    ) -> Result<T, GarageError> {
        let body = encode(endpoint, body)?;
        let (_, answer) = self.send(Method::POST, endpoint, query, body, kind).await?;
        decode(endpoint, &answer)
    }

    /// `POST /v2/<endpoint>` for endpoints that answer with an empty body.
    pub(crate) async fn post_no_content<B: Serialize + ?Sized>(
        &self,
        endpoint: &'static str,
        query: &[(&str, &str)],
        body: Option<&B>,
    ) -> Result<(), GarageError> {
        let body = encode(endpoint, body)?;
        self.send(Method::POST, endpoint, query, body, Kind::Write)
            .await
            .map(|_| ())
    }

    /// A GET on a special (non-`/v2/`) path; returns the status and body whatever the status.
    pub(crate) async fn get_special(
        &self,
        path: &'static str,
    ) -> Result<(StatusCode, Vec<u8>), GarageError> {
        let url = self.url(path, &[]);
        let mut attempt = 0;
        loop {
            let result = self.attempt(Method::GET, path, url.clone(), None).await;
            match result {
                Err(e) if e.is_retryable() && attempt < self.config.read_retries => {
                    self.pause(path, attempt, &e).await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    async fn send(
        &self,
        method: Method,
        endpoint: &'static str,
        query: &[(&str, &str)],
        body: Option<Vec<u8>>,
        kind: Kind,
    ) -> Result<(StatusCode, Vec<u8>), GarageError> {
        let url = self.url(&format!("/v2/{endpoint}"), query);
        let mut attempt = 0;
        loop {
            let result = self
                .attempt(method.clone(), endpoint, url.clone(), body.clone())
                .await
                .and_then(|(status, bytes)| {
                    if status.is_success() {
                        Ok((status, bytes))
                    } else {
                        Err(GarageError::from_status(endpoint, status.as_u16(), &bytes))
                    }
                });
            match result {
                Err(e)
                    if kind == Kind::Read
                        && e.is_retryable()
                        && attempt < self.config.read_retries =>
                {
                    self.pause(endpoint, attempt, &e).await;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    async fn pause(&self, endpoint: &str, attempt: u32, error: &GarageError) {
        let delay = self
            .config
            .backoff
            .saturating_mul(2u32.saturating_pow(attempt))
            .min(self.config.max_backoff);
        tracing::debug!(endpoint, attempt, ?delay, %error, "retrying a read-only Admin API call");
        tokio::time::sleep(delay).await;
    }

    async fn attempt(
        &self,
        method: Method,
        endpoint: &'static str,
        url: Url,
        body: Option<Vec<u8>>,
    ) -> Result<(StatusCode, Vec<u8>), GarageError> {
        let mut request = self
            .http
            .request(method, url)
            .header(AUTHORIZATION, self.auth.clone());
        if let Some(body) = body {
            request = request
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .body(body);
        }
        let transport = |source: reqwest::Error| {
            if source.is_timeout() {
                GarageError::Timeout {
                    endpoint,
                    after: self.config.timeout,
                }
            } else {
                GarageError::Transport {
                    endpoint,
                    // The URL holds ids and aliases only; the token travels in a header.
                    source,
                }
            }
        };
        let mut response = request.send().await.map_err(transport)?;
        let status = response.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if bytes.len() + chunk.len() > MAX_BODY {
                return Err(GarageError::TooLarge {
                    endpoint,
                    limit: MAX_BODY,
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok((status, bytes))
    }

    fn url(&self, path: &str, query: &[(&str, &str)]) -> Url {
        let mut url = self.base.clone();
        let prefix = url.path().trim_end_matches('/').to_string();
        url.set_path(&format!("{prefix}{path}"));
        if query.is_empty() {
            url.set_query(None);
        } else {
            url.query_pairs_mut().clear().extend_pairs(query);
        }
        url
    }
}

/// reqwest is built without a default crypto provider so that only `ring` is compiled in;
/// it then needs a process default before a client is built. A provider installed earlier by
/// the binary wins.
/// The HTTP client of every [`AdminClient`] with these timeouts. Building one loads and parses
/// the platform's root certificates, which the reconciler would otherwise do for every pod it
/// reaches in every pass; a shared client also keeps its connections to a pod open between
/// passes. Kept briefly: an idle connection to a pod that was replaced is dropped soon.
fn shared_http(
    connect_timeout: Duration,
    timeout: Duration,
) -> Result<reqwest::Client, reqwest::Error> {
    /// Distinct timeout pairs come from configuration, so a handful at most; past this many
    /// a client is built for each caller rather than kept.
    const KEPT: usize = 16;
    static CLIENTS: OnceLock<Mutex<HashMap<(Duration, Duration), reqwest::Client>>> =
        OnceLock::new();
    let key = (connect_timeout, timeout);
    let clients = CLIENTS.get_or_init(Mutex::default);
    if let Some(client) = lock(clients).get(&key) {
        return Ok(client.clone());
    }
    install_crypto_provider();
    let client = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .timeout(timeout)
        .pool_idle_timeout(POOL_IDLE)
        // Garage's Admin API never redirects: an answer that does is not Garage's (a
        // management handle's URL is the user's), and is reported by its status rather than
        // followed to another address.
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let mut kept = lock(clients);
    if kept.len() < KEPT {
        kept.entry(key).or_insert_with(|| client.clone());
    }
    Ok(client)
}

/// The map stays usable after a panic elsewhere: it only ever holds complete clients.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn encode<B: Serialize + ?Sized>(
    endpoint: &'static str,
    body: Option<&B>,
) -> Result<Option<Vec<u8>>, GarageError> {
    body.map(|b| {
        serde_json::to_vec(b).map_err(|e| {
            GarageError::InvalidArgument(format!("{endpoint}: request body does not encode: {e}"))
        })
    })
    .transpose()
}

/// Reads a success answer's body as every call of the client does: an empty (or blank) body
/// is JSON `null`, anything else must be JSON of `T`; a body that is not names `endpoint` and
/// keeps an excerpt, with secret-looking values redacted ([`GarageError::Decode`]). Public so
/// that a recorded answer can be replayed through exactly this path (the fuzz targets do).
pub fn decode<T: DeserializeOwned>(endpoint: &'static str, body: &[u8]) -> Result<T, GarageError> {
    // Some endpoints answer an empty body where the schema says `null`.
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"null"
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|e| GarageError::decode(endpoint, e, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_redacted() {
        let token = AdminToken::new("s3cr3t-token");
        assert!(!format!("{token:?}").contains("s3cr3t"));
        let client = AdminClient::new("http://127.0.0.1:3903/", &token).unwrap();
        assert!(!format!("{client:?}").contains("s3cr3t"));
    }

    #[test]
    fn unparseable_bodies_name_their_endpoint() {
        let err = decode::<super::super::ClusterStatus>("GetClusterStatus", b"<html>oops</html>")
            .unwrap_err();
        assert!(matches!(err, GarageError::Decode { .. }));
        let text = err.to_string();
        assert!(
            text.starts_with("GetClusterStatus:") && text.contains("<html>"),
            "{text}"
        );
    }

    /// A server that accepts connections and never answers: a hung Garage, as far as the
    /// client can tell. Counts the connections it accepted.
    fn silent_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let count = std::sync::Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().flatten() {
                seen.fetch_add(1, Ordering::SeqCst);
                held.push(stream);
            }
        });
        (format!("http://{addr}"), count)
    }

    #[tokio::test]
    async fn every_call_times_out_and_only_reads_are_retried() {
        use std::sync::atomic::Ordering;
        let config = ClientConfig {
            timeout: Duration::from_millis(300),
            read_retries: 2,
            backoff: Duration::from_millis(10),
            ..ClientConfig::default()
        };
        let token = AdminToken::new("hidden-token-value");

        let (url, count) = silent_server();
        let client = AdminClient::with_config(&url, &token, config.clone()).unwrap();
        let err = client.cluster_status().await.unwrap_err();
        assert!(matches!(err, GarageError::Timeout { .. }), "{err:?}");
        assert!(err.is_retryable() && !err.is_not_found());
        assert!(!format!("{err} {err:?}").contains("hidden-token-value"));
        assert_eq!(
            count.load(Ordering::SeqCst),
            3,
            "one attempt and two retries"
        );

        let (url, count) = silent_server();
        let client = AdminClient::with_config(&url, &token, config).unwrap();
        let err = client.delete_bucket("b").await.unwrap_err();
        assert!(matches!(err, GarageError::Timeout { .. }), "{err:?}");
        assert_eq!(count.load(Ordering::SeqCst), 1, "a write is never retried");
    }

    /// A server that answers every request with a redirect to `location`.
    fn redirecting_server(location: String) -> String {
        use std::io::{Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let answer = format!(
                    "HTTP/1.1 302 Found\r\nlocation: {location}/v2/GetClusterHealth\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        format!("http://{addr}")
    }

    #[tokio::test]
    async fn a_redirect_is_reported_never_followed() {
        use std::sync::atomic::Ordering;
        let (elsewhere, reached) = silent_server();
        let url = redirecting_server(elsewhere);
        let config = ClientConfig {
            timeout: Duration::from_millis(500),
            read_retries: 0,
            ..ClientConfig::default()
        };
        let client = AdminClient::with_config(&url, &AdminToken::new("t"), config).unwrap();
        let err = client.cluster_health().await.unwrap_err();
        assert!(
            matches!(err, GarageError::Http { status: 302, .. }),
            "{err:?}"
        );
        assert_eq!(
            reached.load(Ordering::SeqCst),
            0,
            "the bearer went to the address the redirect named"
        );
    }

    /// A server that answers every request on a connection with `200 {}` and keeps the
    /// connection open. Counts the connections it accepted.
    fn answering_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::io::{Read as _, Write as _};
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let count = std::sync::Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                seen.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 1024];
                    while let Ok(n @ 1..) = stream.read(&mut buf) {
                        request.extend_from_slice(&buf[..n]);
                        // Bodiless GETs: a request ends with its blank line.
                        while let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                            request.drain(..end + 4);
                            let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                            if stream.write_all(answer.as_bytes()).is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        (format!("http://{addr}"), count)
    }

    #[tokio::test]
    async fn clients_with_the_same_timeouts_share_their_connections() {
        use std::sync::atomic::Ordering;
        let (url, count) = answering_server();
        let token = AdminToken::new("t");
        for _ in 0..3 {
            // A new client per call, as the reconciler makes one per pod and pass.
            let client = AdminClient::new(&url, &token).unwrap();
            let answered = client
                .get::<serde_json::Value>("GetClusterHealth", &[])
                .await;
            assert!(answered.is_ok(), "{answered:?}");
        }
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "three clients, one kept connection"
        );
    }

    #[test]
    fn urls_keep_a_base_path_and_encode_queries() {
        let token = AdminToken::new("t");
        let client = AdminClient::new("http://garage.example:3903/admin/", &token).unwrap();
        let url = client.url("/v2/GetBucketInfo", &[("globalAlias", "a b&c")]);
        assert_eq!(
            url.as_str(),
            "http://garage.example:3903/admin/v2/GetBucketInfo?globalAlias=a+b%26c"
        );
        assert!(AdminClient::new("ftp://x", &token).is_err());
    }

    #[test]
    fn a_base_url_with_credentials_is_refused_without_repeating_them() {
        let token = AdminToken::new("t");
        for url in [
            "http://admin:pa55word@garage.example:3903",
            "http://pa55word@garage.example:3903",
            "http://admin:pa55word@[::1:3903",
        ] {
            let err = AdminClient::new(url, &token).unwrap_err();
            let text = format!("{err} {err:?}");
            assert!(!text.contains("pa55word"), "{url}: {text}");
        }
    }
}
