//! [`HttpModel`]: the one model client over HTTP, for every [`WireFormat`].
//!
//! A wire format (OpenAI's Chat Completions in `openai.rs`, Anthropic's Messages in
//! `anthropic.rs`) says where requests go, which headers carry the key, how a request body is
//! shaped and how an answer is read: pure functions of the config and the conversation. The
//! request plumbing — the budget check before a call, retries with back-off, key hygiene, the
//! cost recorded after — is written once, here and in `client.rs` (the HTTP client itself).

mod client;

use std::fmt;

use serde_json::Value;

use client::{ApiClient, Endpoint};
pub use client::{ApiKey, MAX_RESPONSE_BYTES, RetryPolicy};

use super::{Model, ModelConfig, ModelError, ModelResponse, ModelStats, QueryRequest};

/// One provider's API: its endpoint and headers, and its request and response shapes.
pub trait WireFormat: fmt::Debug + Send + Sync + Sized {
    /// The provider part of a model spec, e.g. `openai` in `openai/gpt-4o`.
    const PROVIDER: &'static str;
    /// The environment variable holding the provider's key.
    const KEY_VAR: &'static str;
    /// The header that carries the key, and the text before the key in it (e.g.
    /// `("authorization", "Bearer ")`).
    const KEY_HEADER: (&'static str, &'static str);
    /// Headers sent with every request besides the key and `content-type`.
    const HEADERS: &'static [(&'static str, &'static str)];

    /// The URL requests go to: under `api_base` when set, the provider's own otherwise.
    fn url(api_base: Option<&str>) -> String;

    /// The request settings that come from the config (temperature, token limit, …).
    fn from_config(config: &ModelConfig) -> Self;

    /// The JSON body of one request for `model`.
    fn request_body(&self, model: &str, request: QueryRequest<'_>) -> Value;

    /// Reads the answer from a 2xx JSON body. An `Err` is a malformed answer, which is
    /// retried like a transient failure.
    fn parse_response(value: Value) -> Result<ModelResponse, String>;
}

/// A model behind an HTTP API that speaks `W`.
#[derive(Debug)]
pub struct HttpModel<W: WireFormat> {
    api: ApiClient,
    model: String,
    wire: W,
}

impl<W: WireFormat> HttpModel<W> {
    /// A client for model `model` (the part after `<provider>/`). `api_key` is sent in
    /// [`WireFormat::KEY_HEADER`] when given; [`HttpModel::from_env`] reads it from
    /// [`WireFormat::KEY_VAR`].
    pub fn new(
        model: &str,
        config: &ModelConfig,
        api_key: Option<ApiKey>,
    ) -> Result<Self, ModelError> {
        let url = W::url(config.api_base.as_deref());
        let mut endpoint = Endpoint::new(url, config, W::KEY_VAR)?;
        for (name, value) in W::HEADERS {
            endpoint = endpoint.with_header(name, value)?;
        }
        let (key_header, key_prefix) = W::KEY_HEADER;
        let endpoint = endpoint.with_key(key_header, key_prefix, api_key)?;
        Ok(HttpModel {
            api: ApiClient::new(W::PROVIDER, model, endpoint, config),
            model: model.to_owned(),
            wire: W::from_config(config),
        })
    }

    /// A client whose key comes from [`WireFormat::KEY_VAR`]: required for the provider's own
    /// endpoint, optional with `config.api_base` (see [`ApiKey::from_env`]).
    pub fn from_env(model: &str, config: &ModelConfig) -> Result<Self, ModelError> {
        let key = ApiKey::from_env(W::KEY_VAR, config.api_base.as_deref())?;
        Self::new(model, config, key)
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        self.api.url()
    }

    /// The request settings the config gave.
    pub fn wire(&self) -> &W {
        &self.wire
    }
}

impl<W: WireFormat> Model for HttpModel<W> {
    fn name(&self) -> &str {
        self.api.spec()
    }

    async fn query(&mut self, request: QueryRequest<'_>) -> Result<ModelResponse, ModelError> {
        let body = self.wire.request_body(&self.model, request);
        self.api.call(&body, W::parse_response).await
    }

    fn stats(&self) -> &ModelStats {
        self.api.stats()
    }
}
