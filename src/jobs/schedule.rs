//! Cron schedules: the classic five fields `minute hour day-of-month month day-of-week`,
//! evaluated in UTC (so there is no DST: a schedule fires at the same UTC minutes all
//! year). Parsing and matching are the `croner` crate's, which takes five fields (without
//! seconds) and follows Vixie cron: `*`, `N`, `A-B`, `*/S`, `A-B/S` and comma lists;
//! months and weekdays also by three-letter names (`jan`, `mon`); weekday 0 and 7 are
//! Sunday; when both day fields are restricted, a day matching either one fires. Beyond
//! croner's defaults: `N/S` (from N to the end, stepping S), `@midnight` next to
//! `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly` (`@annually`), and errors that
//! name the field at fault.

use std::fmt;

use chrono::{DateTime, Duration, Timelike, Utc};
use croner::parser::{CronParser, Seconds, Year};

/// A parsed cron expression.
#[derive(Clone)]
pub struct Cron {
    text: String,
    schedule: croner::Cron,
}

/// Two schedules are equal when they fire at the same minutes, however written.
impl PartialEq for Cron {
    fn eq(&self, other: &Self) -> bool {
        self.schedule == other.schedule
    }
}

impl Eq for Cron {}

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

/// The fields in order, as errors name them.
const FIELDS: [&str; 5] = ["minute", "hour", "day-of-month", "month", "day-of-week"];

/// How far [`Cron::next_after`] looks ahead.
const HORIZON_DAYS: i64 = 5 * 366;

fn parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        // `N/S`, which Vixie cron accepts, is "sloppy" to croner.
        .sloppy_ranges(true)
        .build()
}

impl Cron {
    /// Parses a five-field expression or an `@` macro; the error says which field is bad.
    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        let expanded = match trimmed.to_ascii_lowercase().as_str() {
            "@hourly" => "0 * * * *",
            "@daily" | "@midnight" => "0 0 * * *",
            "@weekly" => "0 0 * * 0",
            "@monthly" => "0 0 1 * *",
            "@yearly" | "@annually" => "0 0 1 1 *",
            other if other.starts_with('@') => return Err(format!("unknown cron macro '{trimmed}'")),
            _ => trimmed,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != FIELDS.len() {
            return Err(format!(
                "cron '{trimmed}': expected 5 fields (minute hour day-of-month month day-of-week), found {}",
                fields.len()
            ));
        }
        let parser = parser();
        // croner's errors do not say which field they are about: try each field alone
        // (the others `*`) to name the first bad one.
        for (i, (field, name)) in fields.iter().zip(FIELDS).enumerate() {
            let mut alone = ["*"; 5];
            alone[i] = field;
            if let Err(e) = parser.parse(&alone.join(" ")) {
                return Err(format!("cron {name} field '{field}': {e}"));
            }
        }
        let schedule = parser.parse(expanded).map_err(|e| format!("cron '{trimmed}': {e}"))?;
        Ok(Cron { text: trimmed.to_string(), schedule })
    }

    /// The expression as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when the schedule fires in the minute containing `t`.
    pub fn matches(&self, t: DateTime<Utc>) -> bool {
        let minute = t.with_second(0).and_then(|m| m.with_nanosecond(0)).unwrap_or(t);
        self.schedule.is_time_matching(&minute).unwrap_or(false)
    }

    /// The first firing minute strictly after `t`, searching up to five years ahead
    /// (`None` for expressions that never fire, like `0 0 31 2 *`).
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let next = self.schedule.find_next_occurrence(&t, false).ok()?;
        (next <= t + Duration::days(HORIZON_DAYS)).then_some(next)
    }
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

    /// Schedules are UTC: across the US (2026-03-08) and EU (2026-03-29) DST changes a
    /// daily schedule fires at the same UTC minute, 24 hours apart.
    #[test]
    fn dst_changes_do_not_move_a_schedule() {
        let c = Cron::parse("30 2 * * *").unwrap();
        for (before, fires, next) in [
            ("2026-03-07T03:00:00Z", "2026-03-08T02:30:00Z", "2026-03-09T02:30:00Z"),
            ("2026-03-28T03:00:00Z", "2026-03-29T02:30:00Z", "2026-03-30T02:30:00Z"),
        ] {
            assert_eq!(c.next_after(t(before)), Some(t(fires)));
            assert_eq!(c.next_after(t(fires)), Some(t(next)));
            assert!(c.matches(t(fires)));
        }
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
            ("*/0 * * * *", "minute field '*/0': Component error: Step cannot be zero"),
            ("5-1 * * * *", "minute field '5-1'"),
            ("* * * * 1 *", "expected 5 fields"),
            ("@often", "macro"),
        ] {
            let e = Cron::parse(expr).unwrap_err();
            assert!(e.contains(needle), "{expr}: {e}");
        }
    }
}
