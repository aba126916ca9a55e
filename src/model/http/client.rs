//! The HTTP client both API back ends share ([`ApiClient`]): POST a JSON body, classify what
//! comes back (retry, give up, context window), retry with full-jitter back-off, honour
//! `Retry-After`, and keep the API key out of every message.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use crate::config::units::capped_seconds;
use crate::model::{ModelConfig, ModelError};

/// The longest wait and request timeout a config can give: [`crate::config::Seconds::MAX`].
const MAX_WAIT: Duration = Duration::from_secs(365 * 24 * 3600);

/// How many failed requests are retried, and how long to wait between them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub retries: u32,
    /// Shortest wait.
    pub min_wait: Duration,
    /// Longest wait, also the cap on `Retry-After`.
    pub max_wait: Duration,
}

impl RetryPolicy {
    /// The policy `model.retries`, `model.retry_min_wait_s` and `model.retry_max_wait_s` give.
    pub fn from_config(config: &ModelConfig) -> Self {
        // Validated ([`ModelConfig::validate`]) to at most a year; capped here all the same.
        let seconds = |s: f64| capped_seconds(s, MAX_WAIT).unwrap_or(Duration::ZERO);
        RetryPolicy {
            retries: config.retries,
            min_wait: seconds(config.retry_min_wait_s),
            max_wait: seconds(config.retry_max_wait_s),
        }
    }

    /// The wait before retry number `retry` (1 for the first retry). A server's `retry_after`
    /// wins, capped at `max_wait`; otherwise the wait is drawn uniformly ("full jitter") from
    /// `[min_wait, min(max_wait, min_wait * 2^(retry-1))]`, with `unit` in `[0, 1)`.
    pub fn wait_before_retry(
        &self,
        retry: u32,
        retry_after: Option<Duration>,
        unit: f64,
    ) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(self.max_wait);
        }
        let min = self.min_wait.as_secs_f64();
        let doubling = 2f64.powi(retry.saturating_sub(1).min(62) as i32);
        let ceiling = (min * doubling).min(self.max_wait.as_secs_f64());
        let wait = min + unit.clamp(0.0, 1.0) * (ceiling - min).max(0.0);
        Duration::try_from_secs_f64(wait).unwrap_or(self.max_wait)
    }
}

/// A small xorshift64* generator for jitter; seeded from the clock, so retries of parallel
/// instances spread out.
#[derive(Debug, Clone)]
pub(crate) struct Jitter(u64);

/// Distinguishes generators seeded within the same clock tick.
static SEED_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Jitter {
    /// A generator seeded from the clock.
    pub(crate) fn from_clock() -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos() as u64);
        let count = SEED_COUNTER.fetch_add(1, Ordering::Relaxed);
        Self::with_seed(nanos ^ count.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// A generator with a fixed seed (0 is replaced, xorshift needs a non-zero state).
    pub(crate) fn with_seed(seed: u64) -> Self {
        Jitter(if seed == 0 {
            0x2545_F491_4F6C_DD1D
        } else {
            seed
        })
    }

    /// A number uniformly drawn from `[0, 1)`.
    pub(crate) fn next_unit(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        let out = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (out >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// An API key. It prints as `<redacted>` and is scrubbed from every error message (and, once an
/// endpoint sends it, remembered with the process's other credentials, [`crate::secret`]).
#[derive(Clone)]
pub struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl ApiKey {
    /// Wraps a key (surrounding whitespace is dropped).
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into().trim().to_owned())
    }

    /// Reads the key from the environment variable `var`. It is required for the provider's
    /// own endpoint (`api_base` unset) and optional otherwise; an empty variable counts as
    /// unset.
    pub fn from_env(var: &str, api_base: Option<&str>) -> Result<Option<Self>, ModelError> {
        Self::resolve(var, std::env::var(var).ok(), api_base)
    }

    fn resolve(
        var: &str,
        value: Option<String>,
        api_base: Option<&str>,
    ) -> Result<Option<Self>, ModelError> {
        let key = value.map(ApiKey::new).filter(|key| !key.0.is_empty());
        if key.is_none() && api_base.is_none() {
            return Err(ModelError::config_with_hint(
                format!("{var} is not set"),
                format!("export {var}=…, or pass --api-base for a server that needs no key"),
            ));
        }
        Ok(key)
    }

    /// Replaces every occurrence of the key in `text`.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_owned()
        } else {
            text.replace(&self.0, "<redacted>")
        }
    }
}

/// Where an API back end posts its requests, with the headers (key included) to send.
pub(crate) struct Endpoint {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    key: Option<ApiKey>,
    key_var: &'static str,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// What the HTTP model clients share: the endpoint with its retry policy and jitter, and the
/// ledger that checks the budget before each call and records its cost after.
#[derive(Debug)]
pub(crate) struct ApiClient {
    spec: String,
    endpoint: Endpoint,
    policy: RetryPolicy,
    jitter: Jitter,
    ledger: crate::model::cost::Ledger,
}

impl ApiClient {
    /// A client of `provider/model` (the spec it reports) over `endpoint`.
    pub(crate) fn new(
        provider: &str,
        model: &str,
        endpoint: Endpoint,
        config: &ModelConfig,
    ) -> Self {
        let spec = format!("{provider}/{model}");
        Self {
            ledger: crate::model::cost::Ledger::new(
                &spec,
                config.price_for(provider, model),
                config,
            ),
            spec,
            endpoint,
            policy: RetryPolicy::from_config(config),
            jitter: Jitter::from_clock(),
        }
    }

    /// `provider/model`.
    pub(crate) fn spec(&self) -> &str {
        &self.spec
    }

    /// The URL requests go to.
    pub(crate) fn url(&self) -> &str {
        self.endpoint.url()
    }

    /// One call: refused when the budget is spent, retried per the policy, its cost recorded.
    pub(crate) async fn call(
        &mut self,
        body: &serde_json::Value,
        parse: fn(serde_json::Value) -> Result<crate::model::ModelResponse, String>,
    ) -> Result<crate::model::ModelResponse, ModelError> {
        self.ledger.check_before_call()?;
        let mut response = self
            .endpoint
            .post_json(body, &self.policy, &mut self.jitter, parse)
            .await?;
        response.cost = self.ledger.record(&response.usage)?;
        Ok(response)
    }

    /// The calls, tokens and cost so far.
    pub(crate) fn stats(&self) -> &crate::model::ModelStats {
        self.ledger.stats()
    }
}

impl Endpoint {
    /// An endpoint at `url`; `key_var` names the key's variable in hints.
    pub(crate) fn new(
        url: String,
        config: &ModelConfig,
        key_var: &'static str,
    ) -> Result<Self, ModelError> {
        let timeout = capped_seconds(config.request_timeout_s, MAX_WAIT).ok_or_else(|| {
            ModelError::config(format!(
                "invalid request_timeout_s {}",
                config.request_timeout_s
            ))
        })?;
        crate::tls::install_provider();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(30)))
            .build()
            .map_err(|error| {
                ModelError::config(format!("cannot build the HTTP client: {error}"))
            })?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(Endpoint {
            client,
            url,
            headers,
            key: None,
            key_var,
        })
    }

    /// Adds a plain header.
    pub(crate) fn with_header(
        mut self,
        name: &'static str,
        value: &str,
    ) -> Result<Self, ModelError> {
        let value = HeaderValue::from_str(value)
            .map_err(|_| ModelError::config(format!("invalid value for header {name}")))?;
        self.headers.insert(HeaderName::from_static(name), value);
        Ok(self)
    }

    /// Sends `key` (after `prefix`, e.g. `Bearer `) in header `name`, marked sensitive.
    pub(crate) fn with_key(
        mut self,
        name: &'static str,
        prefix: &str,
        key: Option<ApiKey>,
    ) -> Result<Self, ModelError> {
        let Some(key) = key else { return Ok(self) };
        let mut value = HeaderValue::from_str(&format!("{prefix}{}", key.0)).map_err(|_| {
            ModelError::config(format!(
                "{} contains characters that cannot go in an HTTP header",
                self.key_var
            ))
        })?;
        value.set_sensitive(true);
        self.headers.insert(HeaderName::from_static(name), value);
        crate::secret::remember(&key.0);
        self.key = Some(key);
        Ok(self)
    }

    /// The URL requests go to.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// POSTs `body` and returns the parsed answer, retrying per `policy`. `parse` turns a 2xx
    /// JSON body into the answer; its `Err` counts as a malformed (retryable) response.
    pub(crate) async fn post_json<T>(
        &self,
        body: &serde_json::Value,
        policy: &RetryPolicy,
        jitter: &mut Jitter,
        parse: fn(serde_json::Value) -> Result<T, String>,
    ) -> Result<T, ModelError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|error| ModelError::config(format!("cannot encode the request: {error}")))?;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let failure = match self.attempt(&bytes).await {
                Ok(value) => match parse(value) {
                    Ok(answer) => return Ok(answer),
                    Err(message) => Failure::malformed(message),
                },
                Err(failure) => failure,
            };
            match failure {
                Failure::Transient { retry_after, .. } if attempts <= policy.retries => {
                    let wait = policy.wait_before_retry(attempts, retry_after, jitter.next_unit());
                    tokio::time::sleep(wait).await;
                }
                failure => return Err(self.scrub(failure.into_error(attempts))),
            }
        }
    }

    /// One request and the classification of its outcome.
    async fn attempt(&self, body: &[u8]) -> Result<serde_json::Value, Failure> {
        let response = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body.to_vec())
            .send()
            .await
            .map_err(|error| Failure::transport(&error))?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let read = read_body(response)
            .await
            .map_err(|error| Failure::transport(&error))?;
        let Some(text) = read else {
            let message = format!(
                "the response body is larger than {MAX_RESPONSE_BYTES} bytes, aci's limit on a \
                 model API response"
            );
            // Unreadable as an answer (retried); as an error, as its status says.
            return Err(if (200..300).contains(&status) {
                Failure::malformed(message)
            } else {
                self.classify(status, &message, retry_after)
            });
        };
        // Scrubbed before anything cuts or quotes it: a key cut in half is not recognised.
        let text = self.redact(&text);
        if (200..300).contains(&status) {
            return serde_json::from_str(&text).map_err(|error| {
                Failure::malformed(format!(
                    "response body is not JSON ({error}): {}",
                    truncate(&text)
                ))
            });
        }
        Err(self.classify(status, &text, retry_after))
    }

    /// Sorts an error response into retry, give up, or context window.
    fn classify(&self, status: u16, text: &str, retry_after: Option<Duration>) -> Failure {
        let (code, detail) = error_detail(text);
        if matches!(status, 400 | 413) && is_context_window_error(&code, &detail) {
            return Failure::ContextWindow { message: detail };
        }
        let hint = self.hint(status, &code);
        let message = detail;
        let retryable = match status {
            429 => code != "insufficient_quota",
            408 | 409 => true,
            _ => status >= 500,
        };
        if retryable {
            Failure::Transient {
                status: Some(status),
                message,
                retry_after,
                malformed: false,
            }
        } else {
            Failure::Rejected {
                status,
                message,
                hint,
            }
        }
    }

    fn hint(&self, status: u16, code: &str) -> Option<String> {
        let var = self.key_var;
        match status {
            401 => Some(format!(
                "check that {var} holds a valid key for {}",
                self.url
            )),
            403 => Some(format!("the key in {var} may lack access to this model")),
            404 => Some(format!(
                "check the model name and the API base URL ({})",
                self.url
            )),
            429 if code == "insufficient_quota" => {
                Some("the account is out of quota; retrying will not help".to_owned())
            }
            _ => None,
        }
    }

    /// `text` without the key, whatever its length, nor any other credential the process holds
    /// ([`crate::secret::scrub`]).
    fn redact(&self, text: &str) -> String {
        let text = match &self.key {
            Some(key) => key.redact(text),
            None => text.to_owned(),
        };
        crate::secret::scrub(&text)
    }

    /// Removes the key (and every credential held) from an error's message: the server may
    /// echo it back.
    fn scrub(&self, error: ModelError) -> ModelError {
        match error {
            ModelError::Api {
                status,
                message,
                attempts,
                hint,
            } => ModelError::Api {
                status,
                message: self.redact(&message),
                attempts,
                hint: hint.map(|hint| self.redact(&hint)),
            },
            ModelError::Malformed { message, attempts } => ModelError::Malformed {
                message: self.redact(&message),
                attempts,
            },
            ModelError::ContextWindow { message } => ModelError::ContextWindow {
                message: self.redact(&message),
            },
            other => other,
        }
    }
}

/// What went wrong with one attempt.
#[derive(Debug)]
enum Failure {
    /// Worth another attempt: 429, 5xx, timeout, connection error, unreadable body.
    Transient {
        status: Option<u16>,
        message: String,
        retry_after: Option<Duration>,
        malformed: bool,
    },
    /// A 4xx that retrying will not fix.
    Rejected {
        status: u16,
        message: String,
        hint: Option<String>,
    },
    /// The prompt is too long for the model.
    ContextWindow { message: String },
}

impl Failure {
    fn malformed(message: String) -> Self {
        Failure::Transient {
            status: None,
            message,
            retry_after: None,
            malformed: true,
        }
    }

    fn transport(error: &reqwest::Error) -> Self {
        let kind = if error.is_timeout() {
            "request timed out"
        } else if error.is_connect() {
            "cannot connect"
        } else {
            "request failed"
        };
        Failure::Transient {
            status: None,
            message: format!("{kind}: {}", crate::error_chain::error_chain(error)),
            retry_after: None,
            malformed: false,
        }
    }

    fn into_error(self, attempts: u32) -> ModelError {
        match self {
            Failure::Transient {
                malformed: true,
                message,
                ..
            } => ModelError::Malformed { message, attempts },
            Failure::Transient {
                status, message, ..
            } => ModelError::Api {
                status,
                message,
                attempts,
                hint: None,
            },
            Failure::Rejected {
                status,
                message,
                hint,
            } => ModelError::Api {
                status: Some(status),
                message,
                attempts,
                hint,
            },
            Failure::ContextWindow { message } => ModelError::ContextWindow { message },
        }
    }
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds; the HTTP-date form is ignored, and so
/// is a value that is no number of seconds (NaN, negative). An infinite or huge value is
/// [`MAX_RETRY_AFTER`] (the policy's `max_wait` caps it further).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value = headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()?;
        (!value.is_nan() && value >= 0.0).then_some(value)
    };
    number("retry-after-ms")
        .map(|ms| ms / 1000.0)
        .or_else(|| number("retry-after"))
        .and_then(|seconds| capped_seconds(seconds, MAX_RETRY_AFTER))
}

/// The most bytes of a model API response that are read, 16 MiB: hundreds of times a long
/// answer (a 4,096-token answer with its JSON is tens of kilobytes), so only a broken or
/// hostile server reaches it. A body over it is dropped unread past the limit and the attempt
/// fails: an answer as unreadable (retried), an error as its status says.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// The body of `response`, read chunk by chunk (lossily decoded as UTF-8), or `None` when it
/// is over [`MAX_RESPONSE_BYTES`]: declared so, or found so while it streams.
async fn read_body(mut response: reqwest::Response) -> Result<Option<String>, reqwest::Error> {
    let limit = MAX_RESPONSE_BYTES;
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(String::from_utf8_lossy(&body).into_owned()))
}

/// The longest `Retry-After` read from a header: a day, far above any `max_wait`.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// The `error.code` (or `error.type`) and `error.message` of an OpenAI- or Anthropic-style
/// error body, falling back to the body itself.
fn error_detail(text: &str) -> (String, String) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return (String::new(), fallback_detail(text));
    };
    let error = value.get("error").unwrap_or(&value);
    let field = |name: &str| error.get(name).and_then(serde_json::Value::as_str);
    let code = field("code").or_else(|| field("type")).unwrap_or_default();
    let message = match (field("message"), error.as_str()) {
        (Some(message), _) | (None, Some(message)) => truncate(message),
        _ => fallback_detail(text),
    };
    (code.to_owned(), message)
}

fn fallback_detail(text: &str) -> String {
    if text.trim().is_empty() {
        "(empty response body)".to_owned()
    } else {
        truncate(text.trim())
    }
}

/// OpenAI, Anthropic, vLLM, llama.cpp and LiteLLM ways of saying "the prompt is too long".
fn is_context_window_error(code: &str, message: &str) -> bool {
    const PHRASES: [&str; 7] = [
        "context_length_exceeded",
        "prompt is too long",
        "maximum context length",
        "context window",
        "exceed context limit",
        "exceeds the available context size",
        "contextwindowexceeded",
    ];
    let message = message.to_lowercase();
    code == "context_length_exceeded"
        || code == "exceed_context_size_error"
        || PHRASES.iter().any(|phrase| message.contains(phrase))
}

/// At most 1,000 characters of `text`, marked when cut.
fn truncate(text: &str) -> String {
    const LIMIT: usize = 1000;
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}… ({} more bytes)", &text[..cut], text.len() - cut),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            retries: 6,
            min_wait: Duration::from_secs(1),
            max_wait: Duration::from_secs(60),
        }
    }

    #[test]
    fn waits_grow_exponentially_within_full_jitter_bounds() {
        let policy = policy();
        assert_eq!(
            policy.wait_before_retry(1, None, 0.99),
            Duration::from_secs(1)
        );
        assert_eq!(
            policy.wait_before_retry(3, None, 0.0),
            Duration::from_secs(1)
        );
        let top = policy.wait_before_retry(3, None, 1.0);
        assert_eq!(top, Duration::from_secs(4));
        assert_eq!(
            policy.wait_before_retry(30, None, 1.0),
            Duration::from_secs(60)
        );
        assert_eq!(
            policy.wait_before_retry(u32::MAX, None, 1.0),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn retry_after_wins_but_is_capped_at_the_max_wait() {
        let policy = policy();
        assert_eq!(
            policy.wait_before_retry(5, Some(Duration::ZERO), 0.5),
            Duration::ZERO
        );
        assert_eq!(
            policy.wait_before_retry(1, Some(Duration::from_secs(600)), 0.5),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn retry_after_headers_are_read_in_seconds_and_milliseconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&date), None);
        let read = |name: &'static str, value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_static(value));
            retry_after(&headers)
        };
        let day = Some(Duration::from_secs(24 * 3600));
        assert_eq!(
            [
                read("retry-after", "1e300"),
                read("retry-after", "inf"),
                read("retry-after", "99999999999999999999999999"),
                read("retry-after-ms", "1e300"),
                read("retry-after", "-1"),
                read("retry-after", "NaN"),
                read("retry-after-ms", "-inf"),
            ],
            [day, day, day, day, None, None, None]
        );
    }

    #[test]
    fn jitter_stays_in_the_unit_interval_and_varies() {
        let mut jitter = Jitter::with_seed(0);
        let draws: Vec<f64> = (0..1000).map(|_| jitter.next_unit()).collect();
        assert!(draws.iter().all(|x| (0.0..1.0).contains(x)));
        assert!(draws.iter().any(|x| *x < 0.1) && draws.iter().any(|x| *x > 0.9));
        let mut a = Jitter::from_clock();
        let mut b = Jitter::from_clock();
        assert_ne!(a.next_unit(), b.next_unit());
    }

    #[test]
    fn a_key_is_required_only_for_the_default_endpoint() {
        let missing = ApiKey::resolve("OPENAI_API_KEY", None, None).unwrap_err();
        assert!(missing.to_string().contains("OPENAI_API_KEY is not set"));
        let empty = ApiKey::resolve("OPENAI_API_KEY", Some("  ".into()), None);
        assert!(empty.is_err());
        let local = ApiKey::resolve("OPENAI_API_KEY", None, Some("http://localhost:8000/v1"));
        assert!(local.unwrap().is_none());
        let given = ApiKey::resolve("X", Some("sk-1\n".into()), None)
            .unwrap()
            .unwrap();
        assert_eq!(given.0, "sk-1");
    }

    #[test]
    fn keys_never_show_in_debug_output_and_are_redacted_from_text() {
        let key = ApiKey::new("sk-secret-123");
        assert!(!format!("{key:?}").contains("sk-secret-123"));
        assert_eq!(
            key.redact("bad key Bearer sk-secret-123!"),
            "bad key Bearer <redacted>!"
        );
    }

    #[test]
    fn error_details_come_from_both_wire_formats() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        let (code, message) = error_detail(openai);
        assert_eq!(code, "context_length_exceeded");
        assert!(is_context_window_error(&code, &message));
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let (code, message) = error_detail(anthropic);
        assert_eq!(code, "invalid_request_error");
        assert!(is_context_window_error(&code, &message));
        let (_, message) = error_detail("<html>Bad Gateway</html>");
        assert_eq!(message, "<html>Bad Gateway</html>");
        assert!(!is_context_window_error("rate_limit_exceeded", "slow down"));
    }

    #[test]
    fn long_bodies_are_truncated_on_a_char_boundary() {
        let text = "é".repeat(1500);
        let cut = truncate(&text);
        assert!(cut.starts_with(&"é".repeat(1000)));
        assert!(
            cut.ends_with("(1000 more bytes)"),
            "{}",
            &cut[cut.len() - 30..]
        );
    }
}
