//! `env.resolve_as_of`: the date as of which pip resolves an environment's packages, and the
//! instants it is read as (whole seconds since the Unix epoch, UTC).

use std::fmt;

use serde::{Deserialize, Serialize};

/// `env.resolve_as_of`: as of when pip may resolve the packages of an environment it builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ResolveAsOf {
    /// The record's dates: the environment layer as of the `environment_setup_commit`'s
    /// committer date (else the record's `created_at`), the instance's layer as of its
    /// `created_at`.
    CreatedAt,
    /// No filter: what PyPI has now (the default for now: the date rule, which lists a spec's
    /// exact pins whatever their date, changes every spec environment already built).
    #[default]
    Today,
    /// This instant for every layer of every instance.
    At(Cutoff),
}

impl TryFrom<String> for ResolveAsOf {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        match text.trim() {
            "created_at" => Ok(Self::CreatedAt),
            "today" => Ok(Self::Today),
            other => Cutoff::parse(other).map(Self::At).map_err(|reason| {
                format!(
                    "{reason}; resolve_as_of is created_at, today, a date (2019-06-30) or an \
                     RFC 3339 time (2019-06-30T12:00:00Z)"
                )
            }),
        }
    }
}

impl From<ResolveAsOf> for String {
    fn from(value: ResolveAsOf) -> String {
        match value {
            ResolveAsOf::CreatedAt => "created_at".to_owned(),
            ResolveAsOf::Today => "today".to_owned(),
            ResolveAsOf::At(cutoff) => cutoff.to_string(),
        }
    }
}

/// An instant, in whole seconds since the Unix epoch (UTC). Shown as RFC 3339 in UTC
/// (`2019-06-30T23:59:59Z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cutoff(pub i64);

impl Cutoff {
    /// Reads an ISO date (`2019-06-30`: the end of that day in UTC, its last second) or an
    /// RFC 3339 time (`2019-06-30T12:00:00Z`, `2019-06-30 12:00:00+02:00`, fractions of a
    /// second dropped).
    ///
    /// # Errors
    /// The text is neither; the error says what it is not.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is neither a date nor an RFC 3339 time");
        let text = text.trim();
        let date = text.get(..10).ok_or_else(bad)?;
        let days = parse_date(date).ok_or_else(bad)?;
        let rest = &text[10..];
        if rest.is_empty() {
            return Ok(Self(days * 86_400 + 86_399));
        }
        let rest = rest.strip_prefix(['T', 't', ' ']).ok_or_else(bad)?;
        let clock = rest.get(..8).ok_or_else(bad)?;
        let seconds = parse_clock(clock).ok_or_else(bad)?;
        let mut zone = &rest[8..];
        if let Some(fraction) = zone.strip_prefix('.') {
            let digits = fraction.len()
                - fraction
                    .trim_start_matches(|c: char| c.is_ascii_digit())
                    .len();
            if digits == 0 {
                return Err(bad());
            }
            zone = &fraction[digits..];
        }
        let offset = match zone {
            "Z" | "z" => 0,
            _ => {
                let sign = match zone.chars().next() {
                    Some('+') => 1,
                    Some('-') => -1,
                    _ => return Err(bad()),
                };
                let (hours, minutes) = zone[1..].split_once(':').ok_or_else(bad)?;
                let hours: i64 = two_digits(hours).ok_or_else(bad)?;
                let minutes: i64 = two_digits(minutes).ok_or_else(bad)?;
                if hours > 23 || minutes > 59 {
                    return Err(bad());
                }
                sign * (hours * 3600 + minutes * 60)
            }
        };
        Ok(Self(days * 86_400 + seconds - offset))
    }
}

impl fmt::Display for Cutoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.0.div_euclid(86_400);
        let second = self.0.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
            second / 3600,
            second % 3600 / 60,
            second % 60
        )
    }
}

fn two_digits(text: &str) -> Option<i64> {
    (text.len() == 2 && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// `YYYY-MM-DD` as days since 1970-01-01, when it is a real date.
fn parse_date(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    let year: i64 = text[..4]
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| text[..4].parse().ok())??;
    let month = two_digits(&text[5..7])?;
    let day = two_digits(&text[8..10])?;
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let length = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    (1..=length)
        .contains(&day)
        .then(|| days_from_civil(year, month, day))
}

/// `HH:MM:SS` as seconds of the day.
fn parse_clock(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() != 8 || bytes[2] != b':' || bytes[5] != b':' {
        return None;
    }
    let hours = two_digits(&text[..2])?;
    let minutes = two_digits(&text[3..5])?;
    let seconds = two_digits(&text[6..8])?;
    (hours < 24 && minutes < 60 && seconds < 61).then_some(hours * 3600 + minutes * 60 + seconds)
}

/// Days since 1970-01-01 of a date of the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_times_read_as_utc_seconds_and_show_as_rfc_3339() {
        let at = |text: &str| Cutoff::parse(text).map(|c| (c.0, c.to_string()));
        assert_eq!(
            at("1970-01-01T00:00:00Z"),
            Ok((0, "1970-01-01T00:00:00Z".to_owned()))
        );
        assert_eq!(
            at("2019-05-15T13:51:41Z"),
            Ok((1_557_928_301, "2019-05-15T13:51:41Z".to_owned()))
        );
        assert_eq!(
            at("2019-11-04T15:07:31.862893Z"),
            Ok((1_572_880_051, "2019-11-04T15:07:31Z".to_owned()))
        );
        assert_eq!(
            at("2019-05-15 15:51:41+02:00"),
            Ok((1_557_928_301, "2019-05-15T13:51:41Z".to_owned()))
        );
        assert_eq!(
            at("2020-02-29"),
            Ok((1_583_020_799, "2020-02-29T23:59:59Z".to_owned()))
        );
        assert_eq!(
            at("1969-12-31T23:59:59Z"),
            Ok((-1, "1969-12-31T23:59:59Z".to_owned()))
        );
        for bad in [
            "2019-02-29",
            "2019-13-01",
            "2019-5-1",
            "yesterday",
            "2019-05-15T13:51Z",
            "2019-05-15T13:51:41",
            "2019-05-15T13:51:41+2",
        ] {
            assert_eq!(
                Cutoff::parse(bad),
                Err(format!("{bad:?} is neither a date nor an RFC 3339 time")),
                "{bad}"
            );
        }
    }

    #[test]
    fn resolve_as_of_reads_its_three_forms_and_says_them_when_wrong() {
        let read = |text: &str| ResolveAsOf::try_from(text.to_owned());
        assert_eq!(read("created_at"), Ok(ResolveAsOf::CreatedAt));
        assert_eq!(read("today"), Ok(ResolveAsOf::Today));
        assert_eq!(
            read("2019-06-30"),
            Ok(ResolveAsOf::At(Cutoff(1_561_939_199)))
        );
        assert_eq!(
            String::from(ResolveAsOf::At(Cutoff(1_561_939_199))),
            "2019-06-30T23:59:59Z"
        );
        assert_eq!(
            read("now"),
            Err(
                "\"now\" is neither a date nor an RFC 3339 time; resolve_as_of is created_at, \
                 today, a date (2019-06-30) or an RFC 3339 time (2019-06-30T12:00:00Z)"
                    .to_owned()
            )
        );
    }
}
