//! Accounting and limits: tokens and dollars per call, per-instance totals, and the cost and
//! call limits every back end shares.

use std::collections::BTreeSet;
use std::sync::Mutex;

use super::{ModelConfig, ModelError, ModelStats, Price, Usage};

/// The dollar cost of `usage` at `price` (prices are per million tokens; unset cache prices
/// fall back to the input price).
pub fn cost_of(usage: &Usage, price: &Price) -> f64 {
    let cache_read = price.cache_read_per_mtok.unwrap_or(price.input_per_mtok);
    let cache_write = price.cache_write_per_mtok.unwrap_or(price.input_per_mtok);
    let micro_dollars = usage.input_tokens as f64 * price.input_per_mtok
        + usage.output_tokens as f64 * price.output_per_mtok
        + usage.cache_read_tokens as f64 * cache_read
        + usage.cache_write_tokens as f64 * cache_write;
    micro_dollars / 1_000_000.0
}

/// How a model's calls are priced.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pricing {
    /// Replay and human: nothing to pay, nothing to warn about.
    Free,
    /// A price from `model.prices`.
    Known(Price),
    /// An API model without a price: cost 0, and one warning per model name per process.
    Unknown,
}

/// One instance's running totals and limits.
#[derive(Debug, Clone)]
pub struct Ledger {
    model: String,
    pricing: Pricing,
    cost_limit: f64,
    call_limit: u64,
    stats: ModelStats,
}

impl Ledger {
    /// A ledger for an API model; `price` is `None` when the config has none for it.
    pub fn new(model: &str, price: Option<Price>, config: &ModelConfig) -> Self {
        let pricing = price.map_or(Pricing::Unknown, Pricing::Known);
        Self::with_pricing(model, pricing, config)
    }

    /// A ledger for a model that costs nothing (replay, human); only the call limit applies.
    pub fn free(model: &str, config: &ModelConfig) -> Self {
        Self::with_pricing(model, Pricing::Free, config)
    }

    fn with_pricing(model: &str, pricing: Pricing, config: &ModelConfig) -> Self {
        Ledger {
            model: model.to_owned(),
            pricing,
            cost_limit: config.per_instance_cost_limit,
            call_limit: config.per_instance_call_limit,
            stats: ModelStats::default(),
        }
    }

    /// The totals so far.
    pub fn stats(&self) -> &ModelStats {
        &self.stats
    }

    /// Fails when the next call may not be made: the call limit is reached, or the cost limit
    /// already is (0 turns either off).
    pub fn check_before_call(&self) -> Result<(), ModelError> {
        if self.call_limit > 0 && self.stats.api_calls >= self.call_limit {
            return Err(ModelError::CallLimit {
                calls: self.stats.api_calls,
                limit: self.call_limit,
            });
        }
        if self.cost_limit > 0.0 && self.stats.instance_cost >= self.cost_limit {
            return Err(ModelError::CostLimit {
                cost: self.stats.instance_cost,
                limit: self.cost_limit,
            });
        }
        Ok(())
    }

    /// Adds one successful call and returns its cost, or [`ModelError::CostLimit`] when the
    /// call took the instance over its limit. The call is counted either way.
    pub fn record(&mut self, usage: &Usage) -> Result<f64, ModelError> {
        let cost = match self.pricing {
            Pricing::Known(price) => cost_of(usage, &price),
            Pricing::Free => 0.0,
            Pricing::Unknown => {
                warn_unknown_price_once(&self.model);
                0.0
            }
        };
        let stats = &mut self.stats;
        stats.api_calls += 1;
        stats.instance_cost += cost;
        stats.tokens_sent += usage.prompt_tokens();
        stats.tokens_received += usage.output_tokens;
        stats.cache_read_tokens += usage.cache_read_tokens;
        stats.cache_write_tokens += usage.cache_write_tokens;
        if self.cost_limit > 0.0 && stats.instance_cost > self.cost_limit {
            return Err(ModelError::CostLimit {
                cost: stats.instance_cost,
                limit: self.cost_limit,
            });
        }
        Ok(cost)
    }
}

/// Model names already warned about, so a batch of 300 instances warns once, not 300 times.
static WARNED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Prints the unknown-price warning for `model` unless it was printed before; returns whether
/// it printed.
fn warn_unknown_price_once(model: &str) -> bool {
    let mut warned = WARNED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if !warned.insert(model.to_owned()) {
        return false;
    }
    eprintln!(
        "warning: no price for model `{model}`, counting its cost as $0 (the cost limit will not trigger)\nhint: add it under model.prices (dollars per million tokens)"
    );
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price() -> Price {
        Price {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
            cache_read_per_mtok: Some(0.3),
            cache_write_per_mtok: Some(3.75),
        }
    }

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }

    #[test]
    fn cost_prices_each_kind_of_token_apart() {
        let cost = cost_of(&usage(1_000_000, 100_000, 2_000_000, 400_000), &price());
        // 3 + 1.5 + 0.6 + 1.5
        assert!((cost - 6.6).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn unset_cache_prices_fall_back_to_the_input_price() {
        let price = Price {
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
            ..price()
        };
        let cost = cost_of(&usage(0, 0, 500_000, 500_000), &price);
        assert!((cost - 3.0).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn record_adds_tokens_with_cache_parts_broken_out() {
        let mut ledger = Ledger::new("anthropic/m", Some(price()), &ModelConfig::default());
        // 10 × $3 + 5 × $15 + 100 × $0.30 + 20 × $3.75 per million: $210 per million.
        let first = ledger.record(&usage(10, 5, 100, 20)).unwrap();
        assert!((first - 210e-6).abs() < 1e-15, "{first}");
        // 1 × $3 + 1 × $15 per million.
        let second = ledger.record(&usage(1, 1, 0, 0)).unwrap();
        assert!((second - 18e-6).abs() < 1e-15, "{second}");
        let stats = ledger.stats();
        assert_eq!(stats.api_calls, 2);
        assert_eq!(stats.tokens_sent, 131);
        assert_eq!(stats.tokens_received, 6);
        assert_eq!(stats.cache_read_tokens, 100);
        assert_eq!(stats.cache_write_tokens, 20);
        assert!(
            (stats.instance_cost - 228e-6).abs() < 1e-15,
            "{}",
            stats.instance_cost
        );
    }

    #[test]
    fn the_call_that_goes_over_the_cost_limit_is_recorded_then_refused() {
        let config = ModelConfig {
            per_instance_cost_limit: 1.0,
            ..ModelConfig::default()
        };
        let mut ledger = Ledger::new("m", Some(price()), &config);
        // $0.75 each.
        let call = usage(250_000, 0, 0, 0);
        ledger.check_before_call().unwrap();
        ledger.record(&call).unwrap();
        ledger.check_before_call().unwrap();
        let error = ledger.record(&call).unwrap_err();
        assert_eq!(error.exit_status().as_str(), "exit_cost");
        assert_eq!(ledger.stats().api_calls, 2);
        assert!((ledger.stats().instance_cost - 1.5).abs() < 1e-9);
        assert!(matches!(
            ledger.check_before_call(),
            Err(ModelError::CostLimit { .. })
        ));
    }

    #[test]
    fn the_call_limit_refuses_the_call_after_the_last_allowed_one() {
        let config = ModelConfig {
            per_instance_call_limit: 2,
            ..ModelConfig::default()
        };
        let mut ledger = Ledger::free("replay", &config);
        for _ in 0..2 {
            ledger.check_before_call().unwrap();
            ledger.record(&Usage::default()).unwrap();
        }
        let error = ledger.check_before_call().unwrap_err();
        assert!(matches!(
            error,
            ModelError::CallLimit { calls: 2, limit: 2 }
        ));
        assert_eq!(error.exit_status().as_str(), "exit_cost");
    }

    #[test]
    fn zero_limits_are_off() {
        let config = ModelConfig {
            per_instance_cost_limit: 0.0,
            per_instance_call_limit: 0,
            ..ModelConfig::default()
        };
        let mut ledger = Ledger::new("m", Some(price()), &config);
        for _ in 0..5 {
            ledger.check_before_call().unwrap();
            ledger.record(&usage(10_000_000, 0, 0, 0)).unwrap();
        }
    }

    #[test]
    fn an_unknown_price_costs_nothing_and_warns_once_per_model() {
        let mut ledger = Ledger::new("cost-test/unpriced", None, &ModelConfig::default());
        assert_eq!(
            ledger.record(&usage(1_000_000, 1_000_000, 0, 0)).unwrap(),
            0.0
        );
        assert_eq!(ledger.stats().tokens_sent, 1_000_000);
        assert!(!warn_unknown_price_once("cost-test/unpriced"));
        assert!(warn_unknown_price_once("cost-test/other"));
        assert!(!warn_unknown_price_once("cost-test/other"));
    }
}
