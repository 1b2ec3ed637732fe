//! The one parser for the ISO 8601 timestamps inputs and clients write: forecast exports,
//! METAR/1-minute CSV `valid` columns, NWS and Open-Meteo JSON, Parquet string columns and
//! the API's time parameters. Three hand-written copies of it used to disagree on the
//! edges (`UTC` suffixes, `+HHMM` offsets, bare dates); every reader now goes through here.
//!
//! Accepted: `YYYY-MM-DD[T t space]HH:MM[:SS[(.|,)f…]]`, optionally followed (after optional
//! spaces) by a zone: `Z`/`z`, `UTC`, `GMT`, `±HH`, `±HHMM` or `±HH:MM` (at most 23:59). No
//! zone means UTC. Seconds run 00–59 (no leap second); fractions beyond nanoseconds are
//! read and dropped. Hand-written because it runs once or twice per input row.

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, NaiveTime, Utc};

/// A date and time with its zone applied; `None` for anything else (a bare date too:
/// data rows always carry a time, and a date alone in a time column is a mistake).
pub fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    let (naive, offset) = parse_local(s)?;
    let utc = match offset {
        None | Some(0) => naive,
        Some(secs) => naive.checked_sub_signed(Duration::seconds(i64::from(secs)))?,
    };
    Some(utc.and_utc())
}

/// [`parse_timestamp`], or a bare `YYYY-MM-DD` taken as midnight UTC: the forms API
/// clients send (`start_time=2026-01-10`) and Parquet string columns carry.
pub fn parse_timestamp_or_date(s: &str) -> Option<DateTime<Utc>> {
    parse_timestamp(s).or_else(|| {
        let b = s.trim().as_bytes();
        (b.len() == 10).then(|| date(b)).flatten().map(|d| d.and_time(NaiveTime::MIN).and_utc())
    })
}

/// The written local date-time and its offset (seconds east of UTC) when one was written:
/// Open-Meteo applies its own `utc_offset_seconds` to times that carry none.
pub fn parse_local(s: &str) -> Option<(NaiveDateTime, Option<i32>)> {
    let b = s.trim().as_bytes();
    if b.len() < 16 || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' {
        return None;
    }
    let date = date(&b[..10])?;
    let (hour, minute) = (digits(&b[11..13])?, digits(&b[14..16])?);
    let mut rest = &b[16..];
    let mut second = 0;
    let mut nano = 0;
    if let [b':', s1, s2, tail @ ..] = rest {
        second = digits(&[*s1, *s2])?;
        rest = tail;
        if let [b'.' | b',', tail @ ..] = rest {
            let n = tail.iter().take_while(|c| c.is_ascii_digit()).count();
            if n == 0 {
                return None;
            }
            let (frac, tail) = tail.split_at(n);
            for (i, d) in frac.iter().take(9).enumerate() {
                nano += u32::from(d - b'0') * 10u32.pow(8 - i as u32);
            }
            rest = tail;
        }
    }
    if second > 59 {
        return None;
    }
    let naive = date.and_hms_nano_opt(hour, minute, second, nano)?;
    Some((naive, parse_offset(rest.trim_ascii_start())?))
}

/// `YYYY-MM-DD` (exactly ten bytes).
fn date(b: &[u8]) -> Option<NaiveDate> {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    NaiveDate::from_ymd_opt(digits(&b[0..4])? as i32, digits(&b[5..7])?, digits(&b[8..10])?)
}

/// `""` → no offset; `Z`, `UTC`, `GMT` → 0; `±HH`, `±HHMM`, `±HH:MM` → seconds east of UTC.
fn parse_offset(b: &[u8]) -> Option<Option<i32>> {
    let (sign, tail) = match b {
        [] => return Some(None),
        [b'Z' | b'z'] | b"UTC" | b"GMT" => return Some(Some(0)),
        [b'+', tail @ ..] => (1, tail),
        [b'-', tail @ ..] => (-1, tail),
        _ => return None,
    };
    let (h, m) = match tail {
        [h1, h2] => (digits(&[*h1, *h2])?, 0),
        [h1, h2, m1, m2] | [h1, h2, b':', m1, m2] => (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?),
        _ => return None,
    };
    if h > 23 || m > 59 {
        return None;
    }
    Some(Some(sign * (h * 3600 + m * 60) as i32))
}

/// The value of ASCII digits; `None` if any byte is not one.
fn digits(b: &[u8]) -> Option<u32> {
    b.iter().try_fold(0u32, |acc, &c| c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn utc(s: &str) -> DateTime<Utc> {
        parse_timestamp(s).unwrap()
    }
    fn ymd_hm(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    /// Formerly `forecast_rows::parse_time`'s test.
    #[test]
    fn export_forms() {
        let t = utc("2026-09-24T06:00:00Z");
        assert_eq!(t.to_rfc3339(), "2026-09-24T06:00:00+00:00");
        assert_eq!(utc("2026-09-24 06:00:00"), t);
        assert_eq!(utc("2026-09-24T02:00:00-04:00"), t);
        assert_eq!(utc("2026-09-24T11:30:00+0530"), t);
        assert_eq!(utc("2026-09-24 08:00:00+02"), t);
        assert_eq!(utc("2026-09-24T06:00"), t);
        assert_eq!(utc("2026-09-24T06:00:00.000Z"), t);
        assert_eq!(utc("2026-09-24t06:00:00,000z"), t);
        assert_eq!(utc("2026-09-24T06:00:00.5Z").timestamp_subsec_millis(), 500);
        // A zone name after a space is the one form the METAR CSV parser added to the union.
        assert_eq!(utc("2026-09-24T06:00:00 UTC"), t);
        for bad in [
            "",
            "2026-09-24",
            "2026-13-01 00:00:00",
            "2026-09-24X06:00:00",
            "2026-09-24T25:00:00",
            "2026-09-24T06:00:00+1",
            "2026-09-24T06:00:00 EST",
            "2026-09-24T06:00:60",
            "2026-09-24T06:00:60Z",
            "2026-09-24T06:00:00.Z",
            "2026-09-24T06:00:00+24:00",
            "2026-09-24T06:00:00+99999",
            "２026-09-24T06:00:00",
        ] {
            assert!(parse_timestamp(bad).is_none(), "{bad}");
        }
    }

    /// Formerly `metar_container::parse_utc_time`'s test.
    #[test]
    fn csv_valid_column_forms() {
        let t = parse_timestamp;
        assert_eq!(t("2024-03-01 00:52"), Some(ymd_hm(2024, 3, 1, 0, 52)));
        assert_eq!(t("2025-12-05 14:30 UTC"), Some(ymd_hm(2025, 12, 5, 14, 30)));
        assert_eq!(t("2025-12-05 14:30GMT"), Some(ymd_hm(2025, 12, 5, 14, 30)));
        assert_eq!(t("2023-01-01T00:54:00"), Some(ymd_hm(2023, 1, 1, 0, 54)));
        assert_eq!(t("2024-07-04T13:51:00Z"), Some(ymd_hm(2024, 7, 4, 13, 51)));
        assert_eq!(t("2024-07-04T08:51:00-05:00"), Some(ymd_hm(2024, 7, 4, 13, 51)));
        assert_eq!(t("2024-07-04 19:21+0530"), Some(ymd_hm(2024, 7, 4, 13, 51)));
        assert_eq!(
            t("2026-09-25T05:56:22.934Z"),
            Some(Utc.with_ymd_and_hms(2026, 9, 25, 5, 56, 22).unwrap() + Duration::milliseconds(934))
        );
        for bad in
            ["", "2024-03-01", "2024-13-01 00:00", "2024-03-01 24:00", "2024-03-01 00:00 EST", "2024-03-01 0é:00"]
        {
            assert_eq!(t(bad), None, "{bad}");
        }
    }

    /// Formerly `time::parse_utc`'s test.
    #[test]
    fn client_forms() {
        let want = utc("2026-01-10T06:00:00Z");
        for s in ["2026-01-10T06:00:00Z", "2026-01-10 06:00:00", "2026-01-10T06:00", "2026-01-10T01:00:00-05:00"] {
            assert_eq!(parse_timestamp_or_date(s), Some(want), "{s}");
        }
        assert_eq!(parse_timestamp_or_date(" 2026-01-10 "), Some(utc("2026-01-10T00:00:00Z")));
        assert_eq!(parse_timestamp_or_date("yesterday"), None);
        assert_eq!(parse_timestamp_or_date("2026-02-30"), None);
    }

    #[test]
    fn local_keeps_the_written_offset() {
        let (naive, off) = parse_local("2026-01-10T01:00").unwrap();
        assert_eq!((naive.to_string().as_str(), off), ("2026-01-10 01:00:00", None));
        assert_eq!(parse_local("2026-01-10T01:00-05:00").unwrap().1, Some(-5 * 3600));
        assert_eq!(parse_local("2026-01-10T01:00 GMT").unwrap().1, Some(0));
    }

    #[test]
    fn never_panics_on_arbitrary_bytes() {
        let mut next = crate::decode::testrand::xorshift(0x2545_F491_4F6C_DD1D);
        let alphabet = b"0123456789-:T .,Z+UTCGMz";
        for _ in 0..20_000 {
            let n = (next() % 40) as usize;
            let s: String = (0..n).map(|_| alphabet[(next() % alphabet.len() as u64) as usize] as char).collect();
            let _ = parse_timestamp_or_date(&s);
        }
    }
}
