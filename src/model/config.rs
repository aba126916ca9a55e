//! The `model:` section of the config: which model, sampling, retries, limits, prices and
//! prompt caching. Every field has a default; unknown keys are errors.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ModelError;

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

/// Anthropic's limit on `cache_control` marks per request, minus the system prompt's.
const MAX_USER_TURN_MARKS: usize = 3;

impl ModelConfig {
    /// Checks values serde cannot: ranges and the relations between fields.
    pub fn validate(&self) -> Result<(), ModelError> {
        let non_negative = [
            ("temperature", self.temperature),
            ("retry_min_wait_s", self.retry_min_wait_s),
            ("retry_max_wait_s", self.retry_max_wait_s),
            ("per_instance_cost_limit", self.per_instance_cost_limit),
        ];
        for (field, value) in non_negative {
            if !value.is_finite() || value < 0.0 {
                return Err(invalid(field, &value.to_string(), "a number >= 0"));
            }
        }
        if !self.request_timeout_s.is_finite() || self.request_timeout_s <= 0.0 {
            return Err(invalid(
                "request_timeout_s",
                &self.request_timeout_s.to_string(),
                "a number of seconds > 0",
            ));
        }
        if self.retry_min_wait_s > self.retry_max_wait_s {
            return Err(invalid(
                "retry_min_wait_s",
                &self.retry_min_wait_s.to_string(),
                "at most retry_max_wait_s",
            ));
        }
        if let Some(top_p) = self.top_p
            && !(top_p > 0.0 && top_p <= 1.0)
        {
            return Err(invalid("top_p", &top_p.to_string(), "in (0, 1]"));
        }
        if self.cache_control.last_n_user_turns > MAX_USER_TURN_MARKS {
            return Err(invalid(
                "cache_control.last_n_user_turns",
                &self.cache_control.last_n_user_turns.to_string(),
                "at most 3 (Anthropic allows 4 cache marks per request)",
            ));
        }
        Ok(())
    }

    /// The price for `model` (bare name, e.g. `gpt-4o`) under `provider`, looked up by full
    /// spec first, then by bare name.
    pub fn price_for(&self, provider: &str, model: &str) -> Option<Price> {
        self.prices
            .get(&format!("{provider}/{model}"))
            .or_else(|| self.prices.get(model))
            .copied()
    }
}

/// Merges `model.extra_body` into a request: `null` removes a field, anything else sets it.
pub(crate) fn merge_extra(
    body: &mut serde_json::Map<String, serde_json::Value>,
    extra: &serde_json::Map<String, serde_json::Value>,
) {
    for (key, value) in extra {
        if value.is_null() {
            body.remove(key);
        } else {
            body.insert(key.clone(), value.clone());
        }
    }
}

fn invalid(field: &str, value: &str, expected: &str) -> ModelError {
    ModelError::config(format!(
        "invalid model.{field} = {value}: expected {expected}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_section_gives_the_documented_defaults() {
        let config: ModelConfig = serde_yaml::from_str("{}").unwrap();
        assert_eq!(config, ModelConfig::default());
        assert_eq!(config.retries, 6);
        assert_eq!(config.max_output_tokens, 4096);
        assert_eq!(config.per_instance_cost_limit, 3.0);
        assert_eq!(config.per_instance_call_limit, 0);
        assert!(config.cache_control.enabled);
        assert_eq!(config.cache_control.last_n_user_turns, 2);
        assert_eq!(config.top_p, None);
        config.validate().unwrap();
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_name() {
        let error = serde_yaml::from_str::<ModelConfig>("temprature: 0.2").unwrap_err();
        assert!(error.to_string().contains("temprature"), "{error}");
        let error = serde_yaml::from_str::<ModelConfig>(
            "prices: {gpt-4o: {input_per_mtok: 1, output_per_mtok: 2, cached: 3}}",
        )
        .unwrap_err();
        assert!(error.to_string().contains("cached"), "{error}");
    }

    #[test]
    fn a_full_section_parses() {
        let yaml = "
name: anthropic/claude-sonnet-4-5
api_base: http://localhost:4000
top_p: 0.95
retries: 2
prices:
  claude-sonnet-4-5: {input_per_mtok: 3, output_per_mtok: 15, cache_read_per_mtok: 0.3, cache_write_per_mtok: 3.75}
cache_control: {enabled: false}
extra_body: {temperature: null, metadata: {user_id: x}}
";
        let config: ModelConfig = serde_yaml::from_str(yaml).unwrap();
        config.validate().unwrap();
        assert_eq!(config.top_p, Some(0.95));
        assert!(!config.cache_control.enabled);
        assert_eq!(config.cache_control.last_n_user_turns, 2);
        assert_eq!(
            config.price_for("anthropic", "claude-sonnet-4-5"),
            Some(Price {
                input_per_mtok: 3.0,
                output_per_mtok: 15.0,
                cache_read_per_mtok: Some(0.3),
                cache_write_per_mtok: Some(3.75),
            })
        );
        assert_eq!(config.extra_body["temperature"], serde_json::Value::Null);
    }

    #[test]
    fn prices_are_found_by_full_spec_before_bare_name() {
        let price = |input| Price {
            input_per_mtok: input,
            output_per_mtok: 0.0,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        };
        let mut config = ModelConfig::default();
        config.prices.insert("m".into(), price(1.0));
        config.prices.insert("openai/m".into(), price(2.0));
        assert_eq!(config.price_for("openai", "m"), Some(price(2.0)));
        assert_eq!(config.price_for("anthropic", "m"), Some(price(1.0)));
        assert_eq!(config.price_for("openai", "other"), None);
    }

    #[test]
    fn out_of_range_values_are_config_errors_naming_the_field() {
        type Mutation = fn(&mut ModelConfig);
        let cases: [(Mutation, &str); 5] = [
            (|c| c.retry_min_wait_s = 90.0, "retry_min_wait_s"),
            (|c| c.request_timeout_s = 0.0, "request_timeout_s"),
            (|c| c.top_p = Some(1.5), "top_p"),
            (|c| c.temperature = -1.0, "temperature"),
            (
                |c| c.cache_control.last_n_user_turns = 4,
                "cache_control.last_n_user_turns",
            ),
        ];
        for (mutate, field) in cases {
            let mut config = ModelConfig::default();
            mutate(&mut config);
            let error = config.validate().unwrap_err();
            assert!(matches!(error, ModelError::Config { .. }));
            assert!(error.to_string().contains(field), "{error}");
        }
    }
}
