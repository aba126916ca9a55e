//! The `model:` section of the config: which model, sampling, retries, limits, prices and
//! prompt caching. Every field has a default; unknown keys are errors. The checks serde cannot
//! make are `ModelConfig::validate`, in the model layer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The `model:` section of the config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// The model to run: `replay`, `human`, `openai/<name>` or `anthropic/<name>`.
    /// `--model` overrides it.
    pub name: String,
    /// Base URL of the API. For `openai/…` it replaces `https://api.openai.com/v1` (point it at
    /// vLLM, Ollama, llama.cpp or a LiteLLM proxy, e.g. `http://localhost:8000/v1`); for
    /// `anthropic/…` it replaces `https://api.anthropic.com`. When it is set, the API key
    /// variable is optional. `--api-base` overrides it.
    pub api_base: Option<String>,
    /// Sampling temperature.
    pub temperature: f64,
    /// Nucleus sampling; not sent when unset (some models refuse it together with temperature).
    pub top_p: Option<f64>,
    /// Most tokens the model may write per answer (`max_completion_tokens` for OpenAI itself,
    /// `max_tokens` for other OpenAI-compatible servers and for Anthropic).
    pub max_output_tokens: u32,
    /// How many times a failed request is retried (429, 5xx, timeouts, connection errors and
    /// unreadable bodies). 0 means one attempt only.
    pub retries: u32,
    /// Shortest wait before a retry, in seconds. Waits grow exponentially from here, with full
    /// jitter.
    pub retry_min_wait_s: f64,
    /// Longest wait before a retry, in seconds; also caps a server's `Retry-After`.
    pub retry_max_wait_s: f64,
    /// Timeout of one HTTP request, in seconds; a timed-out request is retried.
    pub request_timeout_s: f64,
    /// Dollars one instance may spend; the call that goes over ends the instance with
    /// `exit_cost`. 0 turns the limit off.
    pub per_instance_cost_limit: f64,
    /// Model calls one instance may make; the next call ends the instance with `exit_cost`.
    /// 0 turns the limit off.
    pub per_instance_call_limit: u64,
    /// With the replay model: a directory of per-instance replays (`<id>.yaml|.json|.traj`),
    /// used by `aci batch` when `--replay-dir` is not given (and by `aci ablate` variants that
    /// replay their own actions). Relative to the working directory.
    pub replay_dir: Option<std::path::PathBuf>,
    /// Prices per million tokens, keyed by model name (`gpt-4o`) or full spec
    /// (`openai/gpt-4o`). A model without a price costs 0, with one warning, and the cost limit
    /// then never triggers.
    pub prices: BTreeMap<String, Price>,
    /// Anthropic prompt caching.
    pub cache_control: CacheControlConfig,
    /// Extra top-level fields merged into every request body, e.g.
    /// `{chat_template_kwargs: {enable_thinking: false}}` for vLLM. A `null` value removes a
    /// field the harness would send (e.g. `{temperature: null}` for models that reject it).
    pub extra_body: serde_json::Map<String, serde_json::Value>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            name: String::new(),
            api_base: None,
            temperature: 0.0,
            top_p: None,
            max_output_tokens: 4096,
            retries: 6,
            retry_min_wait_s: 1.0,
            retry_max_wait_s: 60.0,
            request_timeout_s: 600.0,
            per_instance_cost_limit: 3.0,
            per_instance_call_limit: 0,
            replay_dir: None,
            prices: BTreeMap::new(),
            cache_control: CacheControlConfig::default(),
            extra_body: serde_json::Map::new(),
        }
    }
}

/// A model's price, in dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Uncached prompt tokens.
    pub input_per_mtok: f64,
    /// Completion tokens.
    pub output_per_mtok: f64,
    /// Prompt tokens read from the cache; unset means the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_per_mtok: Option<f64>,
    /// Prompt tokens written to the cache (Anthropic); unset means the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_mtok: Option<f64>,
}

/// Anthropic prompt caching: `cache_control` marks on the system prompt and the last user
/// turns, so each request re-reads the prefix the previous one wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheControlConfig {
    /// Put the marks on requests at all.
    pub enabled: bool,
    /// How many of the last user turns get a mark (0–3: Anthropic allows four marks per
    /// request and the system prompt takes one).
    pub last_n_user_turns: usize,
}

impl Default for CacheControlConfig {
    fn default() -> Self {
        CacheControlConfig {
            enabled: true,
            last_n_user_turns: 2,
        }
    }
}

impl ModelConfig {
    /// The price for `model` (bare name, e.g. `gpt-4o`) under `provider`, looked up by full
    /// spec first, then by bare name.
    pub fn price_for(&self, provider: &str, model: &str) -> Option<Price> {
        self.prices
            .get(&format!("{provider}/{model}"))
            .or_else(|| self.prices.get(model))
            .copied()
    }
}
