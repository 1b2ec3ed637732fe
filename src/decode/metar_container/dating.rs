//! Report dating: a METAR stamps only `DDHHMMZ`, so the year and month come from a
//! reference (a time column, a bulletin header, `--month` or the clock).

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, TimeZone, Utc};

use super::report::is_prefix;

/// Dating context shared by collectives and bare lines.
#[derive(Clone, Copy)]
pub(super) struct Dating {
    pub(super) month_hint: Option<(i32, u32)>,
    pub(super) now: DateTime<Utc>,
}

/// Reference time for a report that has no container time: its own DD HH:MM placed in
/// the hinted month, or the latest such day not after now. When the report has no
/// readable time group, the hint's mid-month or now, and the parser reports the group.
pub(super) fn report_reference(text: &str, dating: Dating) -> Result<DateTime<Utc>, String> {
    let mut toks = text.split_whitespace().skip_while(|t| is_prefix(t));
    let group = toks.nth(1).and_then(time_group);
    match (group, dating.month_hint) {
        (Some((d, h, m)), Some(hint)) => hint_reference(hint, d, h, m),
        (Some((d, h, m)), None) => Ok(recent_reference(d, h, m, dating.now).unwrap_or(dating.now)),
        (None, Some(hint)) => hint_reference(hint, 15, 12, 0),
        (None, None) => Ok(dating.now),
    }
}

/// Day `day` of the hinted month at HH:MM (2400 is the next midnight; a time that is
/// no time gives midnight, and the parser then names the bad group).
pub(super) fn hint_reference(
    (year, month): (i32, u32),
    day: u32,
    hour: u32,
    minute: u32,
) -> Result<DateTime<Utc>, String> {
    let date = NaiveDate::from_ymd_opt(year, month, day)
        .ok_or_else(|| format!("day {day} does not exist in {year}-{month:02}"))?;
    Ok(at_minutes(date, hour, minute))
}

/// Latest DD HH:MM not later than one hour after `now` (reports are never from the
/// future; the hour allows for clock skew), within the last few months.
pub(super) fn recent_reference(day: u32, hour: u32, minute: u32, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let limit = now + Duration::hours(1);
    let (mut year, mut month) = (now.year(), now.month());
    for _ in 0..4 {
        let t = NaiveDate::from_ymd_opt(year, month, day).map(|d| at_minutes(d, hour, minute));
        if let Some(t) = t.filter(|t| *t <= limit) {
            return Some(t);
        }
        (year, month) = if month == 1 { (year - 1, 12) } else { (year, month - 1) };
    }
    None
}

/// `date` at HH:MM counted in minutes, so METAR's 2400Z works; midnight when out of range.
pub(super) fn at_minutes(date: NaiveDate, hour: u32, minute: u32) -> DateTime<Utc> {
    let minutes = if hour <= 24 && minute <= 59 { i64::from(hour * 60 + minute) } else { 0 };
    Utc.from_utc_datetime(&date.and_time(NaiveTime::MIN)) + Duration::minutes(minutes)
}

/// `DDHHMMZ` (the parser also takes it without `Z`) → (day, hour, minute), digits only
/// (ranges are the parser's business).
pub(super) fn time_group(tok: &str) -> Option<(u32, u32, u32)> {
    ddhhmm(tok.strip_suffix('Z').unwrap_or(tok))
}

/// `DDHHMM` → (day, hour, minute).
pub(super) fn ddhhmm(s: &str) -> Option<(u32, u32, u32)> {
    let b = s.as_bytes();
    if b.len() != 6 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let two = |i: usize| Some(u32::from(b.get(i)? - b'0') * 10 + u32::from(b.get(i + 1)? - b'0'));
    Some((two(0)?, two(2)?, two(4)?))
}
