//! Checks of the `model:` section ([`ModelConfig`], defined in [`crate::config::model`]) that
//! serde cannot make, and the merge of `model.extra_body` into a request.

use super::ModelError;
use crate::config::Seconds;
pub use crate::config::model::{CacheControlConfig, ModelConfig, Price};

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
        // A wait or timeout becomes a `Duration`, which holds no more than ~584 billion years
        // (and tokio's timers far less): a longer one is refused here, not a panic later.
        let durations = [
            ("retry_min_wait_s", self.retry_min_wait_s),
            ("retry_max_wait_s", self.retry_max_wait_s),
            ("request_timeout_s", self.request_timeout_s),
        ];
        for (field, value) in durations {
            if value > Seconds::MAX {
                return Err(invalid(
                    field,
                    &value.to_string(),
                    "at most 31536000 seconds (365 days)",
                ));
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
        let cases: [(Mutation, &str); 9] = [
            (|c| c.retry_min_wait_s = 90.0, "retry_min_wait_s"),
            (|c| c.request_timeout_s = 0.0, "request_timeout_s"),
            (|c| c.request_timeout_s = 1e300, "request_timeout_s"),
            (
                |c| {
                    c.retry_min_wait_s = 1e300;
                    c.retry_max_wait_s = 1e300;
                },
                "retry_min_wait_s",
            ),
            (|c| c.retry_max_wait_s = 1e300, "retry_max_wait_s"),
            (|c| c.retry_max_wait_s = f64::INFINITY, "retry_max_wait_s"),
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
