-- forecast_daily: the high and low of every forecast run for each local day of its
-- station, in both tz_modes, fully covered days only (spec 2.6, 4.2 rule 4).
-- Declared in jobs/forecast_daily.toml; tested by tests/slt/forecast_daily*.slt.
--
-- Parameters, bound by the runner as DATE values (src/jobs/params.rs): $from and $to,
-- the run_date partitions of `forecasts` this run recomputes (the output is partitioned
-- the same way).
--
-- Tables the runner computes in Rust for the range (src/jobs/rust_tables.rs):
--   day_windows(timezone, tz_mode, date, start_utc, end_utc, hours)
--       the UTC window [start_utc, end_utc) of each local day, from crate::time::day_window:
--       'civil' days are 23, 24 or 25 hours around DST changes, 'standard' days (Local
--       Standard Time) are always 24 hours.
--   model_leads(model, forecast_hour, step_before_h, step_after_h, native_index)
--       the model's native output step before and after each lead hour (src/models.rs),
--       and the number of native steps from lead 0 to it.
--
-- Days are grouped on valid_date_civil / valid_date_standard, the local dates computed
-- once at ingest with the same crate::time functions (no AT TIME ZONE here).
--
-- Coverage rule. A run covers local day [S, E), whose points are t1 < ... < tn with
-- leads a .. b, when
--   1. t1 - S <  step_before(a)   the run's previous native point would fall before S;
--   2. E - tn <= step_after(b)    its next native point would fall at or after E;
--   3. n = round(native_index(b) - native_index(a)) + 1 or more: no native point is
--      missing between t1 and tn.
-- A 3-hourly MOS day (8 points) is complete; a run that starts or ends inside a day
-- leaves that day out; Asia/Kolkata works (hourly points fall at :30 local) because the
-- rule compares instants, not clock readings.

-- Each point's current values: a re-published run keeps the values it replaced beside
-- them, with superseded_at set (src/lake/versions.rs).
--
-- 1. One pass over the files: each run's points cut by (civil day, standard day). A day
--    of one clock overlaps at most two days of the other, so both tz_modes are rolled up
--    from this table (about a twelfth of the rows) instead of scanning the forecasts
--    twice. A table, not a view, so it is computed once.
CREATE OR REPLACE TABLE fd_pieces AS
SELECT
    model,
    run_date,
    location_name,
    run_time,
    valid_date_civil,
    valid_date_standard,
    count(*) AS points,
    min(valid_time) AS first_valid,
    max(valid_time) AS last_valid,
    min(forecast_hour) AS first_lead,
    max(forecast_hour) AS last_lead,
    max(temperature_f) AS high_f,
    min(temperature_f) AS low_f,
    max(temperature_c) AS high_c,
    min(temperature_c) AS low_c,
    max(available_at) AS available_at
FROM forecasts
WHERE run_date BETWEEN $from AND $to
  AND superseded_at IS NULL
  AND valid_date_civil IS NOT NULL
  AND valid_date_standard IS NOT NULL
  AND (temperature_f IS NOT NULL OR temperature_c IS NOT NULL)
GROUP BY model, run_date, location_name, run_time, valid_date_civil, valid_date_standard;

-- 2. Per run and local day, in each tz_mode.
CREATE OR REPLACE VIEW fd_days AS
SELECT
    model, run_date, location_name, run_time,
    'civil' AS tz_mode,
    valid_date_civil AS date,
    sum(points) AS points,
    min(first_valid) AS first_valid,
    max(last_valid) AS last_valid,
    min(first_lead) AS first_lead,
    max(last_lead) AS last_lead,
    max(high_f) AS high_f,
    min(low_f) AS low_f,
    max(high_c) AS high_c,
    min(low_c) AS low_c,
    max(available_at) AS available_at
FROM fd_pieces
GROUP BY model, run_date, location_name, run_time, valid_date_civil
UNION ALL
SELECT
    model, run_date, location_name, run_time,
    'standard' AS tz_mode,
    valid_date_standard AS date,
    sum(points),
    min(first_valid),
    max(last_valid),
    min(first_lead),
    max(last_lead),
    max(high_f),
    min(low_f),
    max(high_c),
    min(low_c),
    max(available_at)
FROM fd_pieces
GROUP BY model, run_date, location_name, run_time, valid_date_standard;

-- 3. Fully covered days only, in the station's units (°F for US stations, °C elsewhere;
--    a unit the model did not provide stays NULL). available_at: when the last of the
--    day's points became available, so the first moment the day's summary could be known
--    (`as_of` on mode=daily; a covered day gains no points later).
SELECT
    d.model,
    d.run_date,
    d.location_name,
    d.tz_mode,
    d.date,
    s.timezone,
    d.run_time,
    d.points AS points_used,
    CASE WHEN s.units = 'fahrenheit' THEN d.high_f END AS high_f,
    CASE WHEN s.units = 'fahrenheit' THEN d.low_f END AS low_f,
    CASE WHEN s.units = 'celsius' THEN d.high_c END AS high_c,
    CASE WHEN s.units = 'celsius' THEN d.low_c END AS low_c,
    d.available_at
FROM fd_days d
JOIN stations s ON s.station_code = d.location_name
JOIN day_windows w ON w.timezone = s.timezone AND w.tz_mode = d.tz_mode AND w.date = d.date
JOIN model_leads a ON a.model = d.model AND a.forecast_hour = d.first_lead
JOIN model_leads b ON b.model = d.model AND b.forecast_hour = d.last_lead
WHERE to_unixtime(d.first_valid) - to_unixtime(w.start_utc) < 3600 * a.step_before_h
  AND to_unixtime(w.end_utc) - to_unixtime(d.last_valid) <= 3600 * b.step_after_h
  AND d.points >= round(b.native_index - a.native_index) + 1
