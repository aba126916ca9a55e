//! Config values with a range: [`Seconds`] for durations and [`Positive`] for resource limits.
//! Both are checked when the config is read, so a bad value is a config error naming its key,
//! never a panic (or a silently removed limit) where the value is used.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A duration in seconds: finite, above 0 and at most [`Seconds::MAX`] (365 days). Written
/// as a plain number, as before.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize)]
#[serde(into = "f64")]
pub struct Seconds(f64);

/// Why a number is not a valid config value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RangeError {
    /// A duration outside (0, [`Seconds::MAX`]].
    #[error("expected a number of seconds above 0 and at most {max} (365 days), got {value}")]
    Seconds {
        /// The value given.
        value: String,
        /// [`Seconds::MAX`].
        max: f64,
    },
    /// A limit that is not a finite number above 0.
    #[error("expected a number above 0, got {value}")]
    NotPositive {
        /// The value given.
        value: String,
    },
    /// Text that is not a number.
    #[error("expected a number of seconds, got `{0}`")]
    NotANumber(String),
    /// A count below 0 (or too large to count).
    #[error("expected a count, 0 or more, got {value}")]
    NotACount {
        /// The value given.
        value: String,
    },
}

impl Seconds {
    /// The longest duration accepted: 365 days.
    pub const MAX: f64 = 365.0 * 24.0 * 3600.0;

    /// `seconds`, when it is finite, above 0 and at most [`Seconds::MAX`].
    ///
    /// # Errors
    ///
    /// [`RangeError::Seconds`] otherwise.
    pub fn new(seconds: f64) -> Result<Self, RangeError> {
        if seconds.is_finite() && seconds > 0.0 && seconds <= Self::MAX {
            Ok(Seconds(seconds))
        } else {
            Err(RangeError::Seconds {
                value: number_text(seconds),
                max: Self::MAX,
            })
        }
    }

    /// A whole number of seconds known to be in range, for defaults.
    ///
    /// # Panics
    ///
    /// When `seconds` is 0 or above [`Seconds::MAX`]: the caller's literal is wrong.
    pub const fn whole(seconds: u32) -> Self {
        assert!(
            seconds > 0 && seconds as f64 <= Self::MAX,
            "seconds out of range"
        );
        Seconds(seconds as f64)
    }

    /// The number of seconds.
    pub fn get(self) -> f64 {
        self.0
    }

    /// The duration: never panics, the value being in range.
    pub fn duration(self) -> Duration {
        Duration::from_secs_f64(self.0)
    }
}

/// A duration read from outside input (an HTTP header such as `Retry-After`): `seconds`,
/// capped at `max`; `None` when it is no number of seconds at all (NaN or negative). An
/// infinite or huge value is `max`, where [`Duration::from_secs_f64`] would panic.
pub fn capped_seconds(seconds: f64, max: Duration) -> Option<Duration> {
    if seconds.is_nan() || seconds < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(seconds).map_or(max, |duration| duration.min(max)))
}

impl TryFrom<f64> for Seconds {
    type Error = RangeError;

    fn try_from(seconds: f64) -> Result<Self, RangeError> {
        Seconds::new(seconds)
    }
}

impl From<Seconds> for f64 {
    fn from(seconds: Seconds) -> Self {
        seconds.0
    }
}

impl FromStr for Seconds {
    type Err = RangeError;

    fn from_str(text: &str) -> Result<Self, RangeError> {
        let seconds: f64 = text
            .trim()
            .parse()
            .map_err(|_| RangeError::NotANumber(text.to_owned()))?;
        Seconds::new(seconds)
    }
}

impl fmt::Display for Seconds {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(formatter)
    }
}

/// A number above 0 (and finite): a resource limit, which has no "unlimited" value. Written
/// as the plain number.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize)]
#[serde(into = "T")]
#[serde(bound(serialize = "T: Serialize, Positive<T>: Into<T>"))]
pub struct Positive<T: PositiveNumber>(
    /// Set directly only by the defaults of [`super::EnvConfig`].
    pub(super) T,
);

/// The numbers [`Positive`] holds.
pub trait PositiveNumber: Copy + fmt::Display {
    /// Whether the value is finite and above 0.
    fn is_positive(self) -> bool;

    /// The value as an error message shows it.
    fn text(self) -> String {
        self.to_string()
    }
}

impl PositiveNumber for u64 {
    fn is_positive(self) -> bool {
        self > 0
    }
}

impl PositiveNumber for i64 {
    fn is_positive(self) -> bool {
        self > 0
    }
}

impl PositiveNumber for f64 {
    fn is_positive(self) -> bool {
        self.is_finite() && self > 0.0
    }

    fn text(self) -> String {
        number_text(self)
    }
}

/// `value` as written in a message: exponent notation for very large or small magnitudes, so
/// `1e300` is not three hundred digits.
fn number_text(value: f64) -> String {
    let magnitude = value.abs();
    if value.is_finite() && magnitude != 0.0 && !(1e-6..1e15).contains(&magnitude) {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

impl<T: PositiveNumber> Positive<T> {
    /// `value`, when it is finite and above 0.
    ///
    /// # Errors
    ///
    /// [`RangeError::NotPositive`] otherwise.
    pub fn new(value: T) -> Result<Self, RangeError> {
        if value.is_positive() {
            Ok(Positive(value))
        } else {
            Err(RangeError::NotPositive {
                value: value.text(),
            })
        }
    }

    /// The number.
    pub fn get(self) -> T {
        self.0
    }
}

/// serde's `try_from` and `into`, per number type (generic impls would overlap the blanket
/// `TryFrom` or break the orphan rule).
macro_rules! plain_number {
    ($($t:ty),*) => {$(
        impl TryFrom<$t> for Positive<$t> {
            type Error = RangeError;

            fn try_from(value: $t) -> Result<Self, RangeError> {
                Positive::new(value)
            }
        }

        impl From<Positive<$t>> for $t {
            fn from(value: Positive<$t>) -> Self {
                value.0
            }
        }
    )*};
}
plain_number!(u64, i64, f64);

/// A number as YAML gave it, before its range is checked.
enum Raw {
    Integer(i128),
    Float(f64),
}

/// Reads a number and checks it with `check`, inside the deserializer, so that the error is
/// reported at the key (`env.command_timeout: …`) and not at its section. A value of another
/// type gets serde's usual message (`invalid type: string "x", expected f64`).
struct CheckedNumber<T> {
    /// The plain type the value is read as, for "expected …".
    expecting: &'static str,
    check: fn(Raw) -> Result<T, RangeError>,
}

impl<T> serde::de::Visitor<'_> for CheckedNumber<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.expecting)
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<T, E> {
        (self.check)(Raw::Integer(i128::from(value))).map_err(E::custom)
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<T, E> {
        (self.check)(Raw::Integer(i128::from(value))).map_err(E::custom)
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<T, E> {
        if self.expecting != "f64" {
            return Err(E::invalid_type(serde::de::Unexpected::Float(value), &self));
        }
        (self.check)(Raw::Float(value)).map_err(E::custom)
    }
}

/// An integer of type `T`; one that does not fit (a negative count) is out of range the same
/// way as 0. (Floats reach only the `f64` checks.)
fn integer<T: TryFrom<i128>>(raw: Raw) -> Result<T, RangeError> {
    match raw {
        Raw::Integer(value) => T::try_from(value).map_err(|_| RangeError::NotPositive {
            value: value.to_string(),
        }),
        Raw::Float(value) => Err(RangeError::NotPositive {
            value: number_text(value),
        }),
    }
}

fn float(raw: Raw) -> f64 {
    match raw {
        #[expect(
            clippy::cast_precision_loss,
            reason = "any integer is a valid f64 to check"
        )]
        Raw::Integer(value) => value as f64,
        Raw::Float(value) => value,
    }
}

/// Reads a count (0 or more) such as `env.max_starting`, as a field's `deserialize_with`: a
/// negative one is a config error naming the key (`expected a count, 0 or more, got -1`).
///
/// # Errors
/// The value is not a whole number of 0 or more.
pub fn count<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    // Read as signed, so that a negative count reaches the check (and its message).
    deserializer.deserialize_i64(CheckedNumber {
        expecting: "a count, 0 or more",
        check: |raw| match raw {
            Raw::Integer(value) => usize::try_from(value).map_err(|_| RangeError::NotACount {
                value: value.to_string(),
            }),
            Raw::Float(value) => Err(RangeError::NotACount {
                value: number_text(value),
            }),
        },
    })
}

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_f64(CheckedNumber {
            expecting: "f64",
            check: |raw| Seconds::new(float(raw)),
        })
    }
}

impl<'de> Deserialize<'de> for Positive<f64> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_f64(CheckedNumber {
            expecting: "f64",
            check: |raw| Positive::new(float(raw)),
        })
    }
}

impl<'de> Deserialize<'de> for Positive<u64> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_u64(CheckedNumber {
            expecting: "u64",
            check: |raw| Positive::new(integer(raw)?),
        })
    }
}

impl<'de> Deserialize<'de> for Positive<i64> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_i64(CheckedNumber {
            expecting: "i64",
            check: |raw| Positive::new(integer(raw)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_accept_positive_finite_values_up_to_a_year() {
        let accepted: Vec<bool> = [
            0.001,
            25.0,
            Seconds::MAX,
            0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            1e300,
            Seconds::MAX * 1.000_001,
        ]
        .into_iter()
        .map(|value| Seconds::new(value).is_ok())
        .collect();
        assert_eq!(
            accepted,
            [true, true, true, false, false, false, false, false, false]
        );
    }

    #[test]
    fn positive_limits_refuse_zero_negative_and_non_finite_values() {
        assert_eq!(
            (
                Positive::new(1_u64).map(Positive::get),
                Positive::new(0_u64).is_err(),
                Positive::new(-1_i64).is_err(),
                Positive::new(0.5_f64).map(Positive::get),
                Positive::new(f64::NAN).is_err(),
                Positive::new(f64::INFINITY).is_err(),
            ),
            (Ok(1), true, true, Ok(0.5), true, true)
        );
    }

    #[test]
    fn seconds_parse_from_a_flag_and_name_a_bad_value() {
        assert_eq!(
            (
                "1800".parse::<Seconds>().map(Seconds::get),
                "-1".parse::<Seconds>().map_err(|e| e.to_string()),
                "soon".parse::<Seconds>().map_err(|e| e.to_string()),
            ),
            (
                Ok(1800.0),
                Err(
                    "expected a number of seconds above 0 and at most 31536000 (365 days), got -1"
                        .to_owned()
                ),
                Err("expected a number of seconds, got `soon`".to_owned()),
            )
        );
    }
}
