//! Cron schedules: the classic five fields `minute hour day-of-month month day-of-week`,
//! evaluated in UTC. Each field takes `*`, `N`, `A-B`, `*/S`, `A-B/S`, `N/S` and comma
//! lists; months and weekdays also take three-letter names (`jan`, `mon`); weekday 0 and
//! 7 are Sunday. As in Vixie cron, when both day fields are restricted a day matching
//! either one fires. `@hourly`, `@daily` (`@midnight`), `@weekly`, `@monthly`, `@yearly`
//! (`@annually`) are accepted.
//!
//! A small parser of our own rather than a crate: the `cron` crate wants a seconds field,
//! and this is all the job declarations need.

use std::fmt;

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Timelike, Utc};

/// A parsed cron expression.
#[derive(Clone, PartialEq, Eq)]
pub struct Cron {
    text: String,
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    days_restricted: bool,
    weekdays_restricted: bool,
}

impl fmt::Debug for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cron({:?})", self.text)
    }
}

impl fmt::Display for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

impl Cron {
    /// Parses a five-field expression or an `@` macro; the error says which field is bad.
    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        let expanded = match trimmed {
            "@hourly" => "0 * * * *",
            "@daily" | "@midnight" => "0 0 * * *",
            "@weekly" => "0 0 * * 0",
            "@monthly" => "0 0 1 * *",
            "@yearly" | "@annually" => "0 0 1 1 *",
            other if other.starts_with('@') => return Err(format!("unknown cron macro '{other}'")),
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "cron '{trimmed}': expected 5 fields (minute hour day-of-month month day-of-week), found {}",
                fields.len()
            ));
        }
        let minutes = field(fields[0], "minute", 0, 59, &[], 0)?;
        let hours = field(fields[1], "hour", 0, 23, &[], 0)?;
        let days = field(fields[2], "day-of-month", 1, 31, &[], 0)?;
        let months = field(fields[3], "month", 1, 12, &MONTHS, 1)?;
        let mut weekdays = field(fields[4], "day-of-week", 0, 7, &WEEKDAYS, 0)?;
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays | 1) & 0x7f;
        }
        Ok(Cron {
            text: trimmed.to_string(),
            minutes,
            hours: hours as u32,
            days: days as u32,
            months: months as u16,
            weekdays: weekdays as u8,
            days_restricted: !fields[2].starts_with('*'),
            weekdays_restricted: !fields[4].starts_with('*'),
        })
    }

    /// The expression as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    fn day_matches(&self, d: NaiveDate) -> bool {
        let dom = self.days & (1 << d.day()) != 0;
        let dow = self.weekdays & (1 << d.weekday().num_days_from_sunday()) != 0;
        match (self.days_restricted, self.weekdays_restricted) {
            (true, true) => dom || dow,
            (true, false) => dom,
            (false, true) => dow,
            (false, false) => true,
        }
    }

    /// True when the schedule fires in the minute containing `t`.
    pub fn matches(&self, t: DateTime<Utc>) -> bool {
        self.months & (1 << t.month()) != 0
            && self.day_matches(t.date_naive())
            && self.hours & (1 << t.hour()) != 0
            && self.minutes & (1 << t.minute()) != 0
    }

    /// The first firing minute strictly after `t`, searching up to five years ahead
    /// (`None` for expressions that never fire, like `0 0 31 2 *`).
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let start = t.with_second(0)?.with_nanosecond(0)? + Duration::minutes(1);
        let limit = start + Duration::days(5 * 366);
        let mut c = start;
        while c < limit {
            if self.months & (1 << c.month()) == 0 {
                // First minute of the next month.
                let (y, m) = if c.month() == 12 { (c.year() + 1, 1) } else { (c.year(), c.month() + 1) };
                c = Utc.with_ymd_and_hms(y, m, 1, 0, 0, 0).single()?;
                continue;
            }
            if !self.day_matches(c.date_naive()) {
                c = Utc.from_utc_datetime(&c.date_naive().succ_opt()?.and_hms_opt(0, 0, 0)?);
                continue;
            }
            if self.hours & (1 << c.hour()) == 0 {
                c = c.with_minute(0)? + Duration::hours(1);
                continue;
            }
            if self.minutes & (1 << c.minute()) == 0 {
                c += Duration::minutes(1);
                continue;
            }
            return Some(c);
        }
        None
    }
}

/// Parses one field into a bit set of allowed values; `names[i]` stands for `name_base + i`.
fn field(text: &str, name: &str, lo: u32, hi: u32, names: &[&str], name_base: u32) -> Result<u64, String> {
    let bad = |why: String| format!("cron {name} field '{text}': {why}");
    let value = |s: &str| -> Result<u32, String> {
        let lower = s.to_ascii_lowercase();
        if let Some(i) = names.iter().position(|n| *n == lower) {
            return Ok(name_base + i as u32);
        }
        let v: u32 = s.parse().map_err(|_| bad(format!("'{s}' is not a number")))?;
        if v < lo || v > hi {
            return Err(bad(format!("{v} is outside {lo}-{hi}")));
        }
        Ok(v)
    };
    let mut set = 0u64;
    for part in text.split(',') {
        if part.is_empty() {
            return Err(bad("empty list item".into()));
        }
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s.parse().map_err(|_| bad(format!("step '{s}' is not a number")))?;
                if step == 0 {
                    return Err(bad("step 0".into()));
                }
                (r, step)
            }
            None => (part, 1),
        };
        let (a, b) = if range == "*" {
            (lo, hi)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?)
        } else {
            let a = value(range)?;
            // `N/S` means from N to the end, stepping S.
            (a, if part.contains('/') { hi } else { a })
        };
        if a > b {
            return Err(bad(format!("range {a}-{b} is backwards")));
        }
        let mut v = a;
        while v <= b {
            set |= 1 << v;
            v += step;
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        crate::time::parse_utc(s).unwrap()
    }

    #[test]
    fn hourly_and_steps() {
        let c = Cron::parse("0 */1 * * *").unwrap();
        assert_eq!(c.next_after(t("2026-03-08T10:00:00Z")), Some(t("2026-03-08T11:00:00Z")));
        assert_eq!(c.next_after(t("2026-03-08T10:59:59Z")), Some(t("2026-03-08T11:00:00Z")));
        let c = Cron::parse("20 * * * *").unwrap();
        assert_eq!(c.next_after(t("2026-03-08T10:19:00Z")), Some(t("2026-03-08T10:20:00Z")));
        assert_eq!(c.next_after(t("2026-03-08T10:20:00Z")), Some(t("2026-03-08T11:20:00Z")));
        let c = Cron::parse("*/15 6-8 * * *").unwrap();
        assert_eq!(c.next_after(t("2026-03-08T08:50:00Z")), Some(t("2026-03-09T06:00:00Z")));
        assert!(c.matches(t("2026-03-08T07:45:10Z")));
        assert!(!c.matches(t("2026-03-08T09:00:00Z")));
        let c = Cron::parse("5/20 * * * *").unwrap();
        assert!(c.matches(t("2026-03-08T07:45:00Z")));
        assert!(!c.matches(t("2026-03-08T07:06:00Z")));
    }

    #[test]
    fn days_months_names_and_macros() {
        // 2026-03-09 is a Monday.
        let c = Cron::parse("30 2 * * mon-fri").unwrap();
        assert_eq!(c.next_after(t("2026-03-07T00:00:00Z")), Some(t("2026-03-09T02:30:00Z")));
        let c = Cron::parse("0 0 1 feb *").unwrap();
        assert_eq!(c.next_after(t("2026-03-01T00:00:00Z")), Some(t("2027-02-01T00:00:00Z")));
        // Both day fields restricted: either matches (the 13th, or any Friday).
        let c = Cron::parse("0 12 13 * 5").unwrap();
        assert_eq!(c.next_after(t("2026-03-01T00:00:00Z")), Some(t("2026-03-06T12:00:00Z")));
        assert_eq!(
            Cron::parse("0 0 * * 7").unwrap(),
            Cron { text: "0 0 * * 7".into(), ..Cron::parse("0 0 * * 0").unwrap() }
        );
        assert_eq!(
            Cron::parse("@daily").unwrap().next_after(t("2026-03-08T10:00:00Z")),
            Some(t("2026-03-09T00:00:00Z"))
        );
        assert_eq!(Cron::parse("0 0 31 2 *").unwrap().next_after(t("2026-03-08T10:00:00Z")), None);
    }

    #[test]
    fn errors_name_the_field() {
        for (expr, needle) in [
            ("* * * *", "expected 5 fields"),
            ("61 * * * *", "minute"),
            ("* 24 * * *", "hour"),
            ("* * 0 * *", "day-of-month"),
            ("* * * 13 *", "month"),
            ("* * * * 8", "day-of-week"),
            ("*/0 * * * *", "step 0"),
            ("5-1 * * * *", "backwards"),
            ("@often", "macro"),
        ] {
            let e = Cron::parse(expr).unwrap_err();
            assert!(e.contains(needle), "{expr}: {e}");
        }
    }
}
