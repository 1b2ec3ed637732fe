//! The JSON payload of each stream event (spec 6).

use serde_json::{json, Value};

use crate::bracket_odds::{Ask, Odds};
use crate::brackets::markets::Quantity;
use crate::brackets::METHOD;
use crate::catalog::Station;
use crate::decode::types::{DailyKind, DailyReport, Metar};
use crate::extremes::{suspect_temperature, DayExtremes, LiveEvent};
use crate::time::{civil_date, fmt_iso_utc};
use crate::units::{c_to_f, hpa_to_inhg, kt_to_kmh, kt_to_mph, relative_humidity, round1};
use chrono::{DateTime, Utc};

fn extreme_obj(x: Option<&DayExtremes>, high: bool) -> Value {
    let e = x.and_then(|x| if high { x.high } else { x.low });
    match e {
        Some(e) => json!({"value_f": e.value_f, "value_c": e.value_c, "time_utc": fmt_iso_utc(e.time)}),
        None => Value::Null,
    }
}

/// The `observation` payload (spec 6) for a report and the station's extremes after it.
pub fn observation_payload(station: &Station, m: &Metar, nws: Option<&DayExtremes>, wu: Option<&DayExtremes>) -> Value {
    let suspect = suspect_temperature(m);
    let t = m.temperature_c().filter(|_| suspect.is_none());
    let td = m.dew_point_c();
    let mut dq = serde_json::Map::new();
    for (name, x) in [("nws", nws), ("wu", wu)] {
        if let Some(x) = x {
            dq.insert(name.into(), serde_json::to_value(&x.data_quality).unwrap_or_default());
        }
    }
    json!({
        "station_code": station.code,
        "event": "observation",
        "timezone": station.timezone.name(),
        "local_date": civil_date(station.timezone, m.time).to_string(),
        "product": crate::lake::rows::report_type(m),
        "observation_time_utc": fmt_iso_utc(m.time),
        "temperature_celsius": t,
        "temperature_fahrenheit": t.map(|c| round1(c_to_f(c))),
        "dew_point_celsius": td,
        "dew_point_fahrenheit": td.map(|c| round1(c_to_f(c))),
        "relative_humidity": t.zip(td).map(|(t, td)| relative_humidity(t, td)),
        "wind_direction": if m.wind_variable { Some("VRB".to_string()) } else { m.wind_dir_deg.map(|d| d.to_string()) },
        "wind_speed_mph": m.wind_speed_kt.map(|k| round1(kt_to_mph(k))),
        "wind_speed_kmh": m.wind_speed_kt.map(|k| round1(kt_to_kmh(k))),
        "wind_gust_mph": m.wind_gust_kt.map(|k| round1(kt_to_mph(k))),
        "wind_gust_kmh": m.wind_gust_kt.map(|k| round1(kt_to_kmh(k))),
        "visibility_miles": m.visibility_sm,
        "altimeter_inhg": m.altimeter_hpa.map(|a| (hpa_to_inhg(a) * 100.0).round() / 100.0),
        "svc_high": {"nws": extreme_obj(nws, true), "wu": extreme_obj(wu, true)},
        "svc_low": {"nws": extreme_obj(nws, false), "wu": extreme_obj(wu, false)},
        "high_valid_through_utc": nws.and_then(|x| x.high_valid_through_utc).map(fmt_iso_utc),
        "low_valid_through_utc": nws.and_then(|x| x.low_valid_through_utc).map(fmt_iso_utc),
        "anomaly": nws.is_some_and(|x| x.anomaly),
        "suspect_temperature": suspect.map(|s| serde_json::to_value(s).unwrap_or_default()),
        "data_quality": dq,
    })
}

/// The `dsm` / `cli` payload (spec 6).
pub fn report_payload(r: &DailyReport, anomaly: bool) -> Value {
    let f_to_c = |f: Option<i32>| f.map(|f| round1(crate::units::f_to_c(f64::from(f))));
    let lst =
        |t: Option<chrono::NaiveDateTime>| t.and_then(|t| crate::catalog::lst_to_utc(&r.station, t)).map(fmt_iso_utc);
    let mut o = json!({
        "station_code": r.station,
        "event": r.kind.as_str(),
        "for_date": r.date.to_string(),
        "high_f": r.max_f,
        "high_c": f_to_c(r.max_f),
        "low_f": r.min_f,
        "low_c": f_to_c(r.min_f),
        "anomaly": anomaly,
    });
    if r.kind == DailyKind::Dsm {
        o["high_time_utc"] = lst(r.max_time_lst).into();
        o["low_time_utc"] = lst(r.min_time_lst).into();
    }
    o
}

/// The `new_high` / `new_low` payload.
pub fn change_payload(station: &str, e: &LiveEvent) -> Value {
    let c = e.change();
    json!({
        "station_code": station,
        "event": e.name(),
        "logic": c.logic.as_str(),
        "value_f": c.value_f,
        "value_c": c.value_c,
        "prev_value_f": c.prev_value_f,
        "prev_value_c": c.prev_value_c,
        "observation_time_utc": fmt_iso_utc(c.observation_time),
        "date": c.date.to_string(),
        "source": c.source.as_str(),
    })
}

/// The `brackets` event: the ladder of a station's day with each bracket's probability
/// now, what moved it (`moved`: the largest change of a bracket since the last event of
/// the day, null for the day's first), and the running extreme bounding it.
pub fn brackets_payload(ask: &Ask<'_>, odds: &Odds, moved: Option<f64>, at: DateTime<Utc>) -> Value {
    let bound = match ask.target {
        Quantity::High => "floor",
        Quantity::Low => "ceiling",
    };
    json!({
        "station_code": ask.station.code,
        "date": ask.date.to_string(),
        "target": ask.target.as_str(),
        "logic": ask.logic.as_str(),
        "units": ask.unit.as_str(),
        "series": ask.market.map(|m| m.series.as_str()),
        "brackets": odds.bracket_rows(),
        "mean": odds.distribution.mean(),
        "median": odds.distribution.quantile(0.5),
        bound: odds.observed.map(|o| o.value),
        "settled": odds.settled(),
        "moved": moved,
        "method": METHOD,
        "computed_at": fmt_iso_utc(at),
    })
}
