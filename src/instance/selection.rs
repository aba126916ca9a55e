//! The pure selection steps behind `--shuffle`/`--seed`, `--filter`, `--slice` and `--shard`,
//! which pick the same instances in the same order as SWE-agent and mini-swe-agent.

use std::str::FromStr;

use regex::Regex;

use super::{Instance, PythonRandom};
use crate::hint::{Hint, with_hint};

/// Default seed of `--shuffle` when `--seed` is not given (the same as SWE-agent and mini-swe-agent).
pub const DEFAULT_SEED: u64 = 42;

/// A bad `--filter`, `--slice` or `--shard` value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectionError {
    /// `--filter` is not a valid regular expression.
    #[error("invalid --filter {input:?}: {reason}")]
    Filter {
        /// What the user wrote.
        input: String,
        /// The regex error.
        reason: String,
    },
    /// `--slice` is not `A:B` or `A:B:STEP`.
    #[error("invalid --slice {input:?}: {reason}")]
    Slice {
        /// What the user wrote.
        input: String,
        /// What is wrong.
        reason: String,
    },
    /// `--shard` is not `I/N` with `1 <= I <= N`.
    #[error("invalid --shard {input:?}: {reason}")]
    Shard {
        /// What the user wrote.
        input: String,
        /// What is wrong.
        reason: String,
    },
}

impl Hint for SelectionError {
    fn hint(&self) -> Option<String> {
        let hint = match self {
            SelectionError::Filter { .. } => return None,
            SelectionError::Slice { .. } => "use Python slice syntax, e.g. 0:10, -5:, ::2",
            SelectionError::Shard { .. } => "write I/N with shards numbered 1..=N, e.g. 1/4",
        };
        Some(hint.to_owned())
    }
}

/// Parses `--slice A:B[:STEP]` on the command line, where the parser's error is one text: the
/// message with its hint on the next line.
pub fn parse_slice_arg(input: &str) -> Result<SliceSpec, String> {
    input.parse().map_err(|error| with_hint(&error))
}

/// Parses `--shard I/N` on the command line, as [`parse_slice_arg`] does `--slice`.
pub fn parse_shard_arg(input: &str) -> Result<ShardSpec, String> {
    input.parse().map_err(|error| with_hint(&error))
}

/// Parses `--filter RE`. The regex must match at the start of the instance id, as Python's
/// `re.match` does in SWE-agent and mini-swe-agent (`django` selects `django__django-11099`,
/// `11099` selects nothing; write `.*11099` to match anywhere, and end with `$` to match the
/// whole id).
pub fn parse_filter(input: &str) -> Result<Regex, SelectionError> {
    let invalid = |error: regex::Error| SelectionError::Filter {
        input: input.to_owned(),
        reason: error.to_string(),
    };
    // Checked alone first, so an error quotes what the user wrote.
    Regex::new(input).map_err(invalid)?;
    Regex::new(&format!(r"\A(?:{input})")).map_err(invalid)
}

/// `--slice A:B[:STEP]` with Python slice semantics: negative indices count from the end, omitted
/// ends default by the step's sign, out-of-range ends are clamped, and a negative step walks
/// backwards. A step of 0 is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceSpec {
    /// First index (`A`), or `None` when omitted.
    pub start: Option<i64>,
    /// End index, exclusive (`B`), or `None` when omitted.
    pub stop: Option<i64>,
    /// Step, never 0; 1 when omitted.
    pub step: i64,
}

impl FromStr for SliceSpec {
    type Err = SelectionError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let fail = |reason: &str| SelectionError::Slice {
            input: input.to_owned(),
            reason: reason.to_owned(),
        };
        let parts: Vec<&str> = input.split(':').map(str::trim).collect();
        if parts.len() < 2 {
            return Err(fail("expected a colon, as in A:B"));
        }
        if parts.len() > 3 {
            return Err(fail("expected at most two colons, as in A:B:STEP"));
        }
        let number = |part: &str| -> Result<Option<i64>, SelectionError> {
            if part.is_empty() {
                return Ok(None);
            }
            part.parse::<i64>()
                .map(Some)
                .map_err(|_| fail(&format!("{part:?} is not an integer")))
        };
        let step = match parts.get(2) {
            Some(part) => number(part)?.unwrap_or(1),
            None => 1,
        };
        if step == 0 {
            return Err(fail("the step must not be zero"));
        }
        Ok(Self {
            start: number(parts[0])?,
            stop: number(parts[1])?,
            step,
        })
    }
}

impl SliceSpec {
    /// The indices this slice selects from a sequence of `len` items, in order
    /// (CPython's `PySlice_AdjustIndices`).
    pub fn indices(&self, len: usize) -> Vec<usize> {
        let len = i64::try_from(len).unwrap_or(i64::MAX);
        let clamp = |value: i64, low: i64, high: i64| {
            let value = if value < 0 {
                value.saturating_add(len)
            } else {
                value
            };
            value.clamp(low, high)
        };
        let mut indices = Vec::new();
        if self.step > 0 {
            let start = self.start.map_or(0, |s| clamp(s, 0, len));
            let stop = self.stop.map_or(len, |s| clamp(s, 0, len));
            let mut index = start;
            while index < stop {
                indices.push(index);
                let Some(next) = index.checked_add(self.step) else {
                    break;
                };
                index = next;
            }
        } else {
            let start = self.start.map_or(len - 1, |s| clamp(s, -1, len - 1));
            let stop = self.stop.map_or(-1, |s| clamp(s, -1, len - 1));
            let mut index = start;
            while index > stop {
                indices.push(index);
                let Some(next) = index.checked_add(self.step) else {
                    break;
                };
                index = next;
            }
        }
        indices
            .into_iter()
            .filter_map(|index| usize::try_from(index).ok())
            .collect()
    }
}

/// `--shard I/N`: shards are numbered from 1 to N, and shard I takes the I-th of N contiguous,
/// near-equal chunks (the first `len % N` chunks hold one extra item). Contiguous chunks keep
/// instances of one repository together, so a shard reuses its images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    /// 1-based shard number.
    pub index: usize,
    /// Number of shards, at least 1.
    pub count: usize,
}

impl FromStr for ShardSpec {
    type Err = SelectionError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let fail = |reason: String| SelectionError::Shard {
            input: input.to_owned(),
            reason,
        };
        let Some((index, count)) = input.split_once('/') else {
            return Err(fail("expected a slash, as in 1/4".to_owned()));
        };
        let parse = |part: &str| {
            part.trim()
                .parse::<usize>()
                .map_err(|_| fail(format!("{:?} is not a non-negative integer", part.trim())))
        };
        let (index, count) = (parse(index)?, parse(count)?);
        if count == 0 {
            return Err(fail("the shard count must be at least 1".to_owned()));
        }
        if index == 0 || index > count {
            return Err(fail(format!(
                "shard {index} is out of range: shards are numbered 1 to {count}"
            )));
        }
        Ok(Self { index, count })
    }
}

impl ShardSpec {
    /// The index range of this shard in a sequence of `len` items.
    pub fn range(&self, len: usize) -> std::ops::Range<usize> {
        let (base, extra) = (len / self.count, len % self.count);
        let chunk = |shard: usize| shard * base + shard.min(extra);
        chunk(self.index - 1)..chunk(self.index)
    }
}

/// The selection options of `aci batch`, applied in the order shuffle → filter → slice → shard
/// (SWE-agent's and mini-swe-agent's order for the first three; they have no shards).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// `--shuffle --seed N`: when set, sort by id and shuffle with Python's `random` seeded
    /// with this number.
    pub shuffle_seed: Option<u64>,
    /// `--filter RE`, matched at the start of the id ([`parse_filter`]).
    pub filter: Option<Regex>,
    /// `--slice A:B[:STEP]`.
    pub slice: Option<SliceSpec>,
    /// `--shard I/N`.
    pub shard: Option<ShardSpec>,
}

/// Applies a [`Selection`]: shuffle (if asked) → filter → slice → shard. Without `--shuffle` the
/// file order is kept.
pub fn select(mut instances: Vec<Instance>, selection: &Selection) -> Vec<Instance> {
    if let Some(seed) = selection.shuffle_seed {
        instances.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
        shuffle(&mut instances, seed);
    }
    if let Some(filter) = &selection.filter {
        instances.retain(|instance| filter.is_match(&instance.instance_id));
    }
    if let Some(slice) = &selection.slice {
        let mut slots: Vec<Option<Instance>> = instances.into_iter().map(Some).collect();
        instances = slice
            .indices(slots.len())
            .into_iter()
            .filter_map(|index| slots.get_mut(index).and_then(Option::take))
            .collect();
    }
    if let Some(shard) = &selection.shard {
        let range = shard.range(instances.len());
        instances = instances
            .into_iter()
            .skip(range.start)
            .take(range.len())
            .collect();
    }
    instances
}

/// Shuffles `items` in place as Python's `random.seed(seed); random.shuffle(items)` does, the
/// way SWE-agent (`sweagent/run/batch_instances.py`) and mini-swe-agent
/// (`run/benchmarks/swebench.py`) shuffle the instances they sorted by id.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    PythonRandom::new(seed).shuffle(items);
}
