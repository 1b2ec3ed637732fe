-- accuracy_pairs: one forecast-observation pair per station, Local Standard Time day,
-- model, run-time label, lead and target (high/low), for the trading days $from..$to.
-- The metrics, trends and daily_detail jobs read this table (DESIGN.md "Settled
-- interpretations"; src/api/v2/model_accuracy.rs serves them).
--
-- Rules:
-- * Verifying value: the day's CLI value (final, else latest preliminary) when there is one,
--   else the computed `nws` value (daily_extremes, logic nws). Only finished days count,
--   and a day without a CLI only with at least 20 observations (about hourly coverage):
--   a day with a hole in its data would score every model against a truncated extreme.
-- * Forecast: forecast_daily's standard tz_mode (the same LST day), in the station's units;
--   the NWS hourly forecast counts as model `NWS` (its version's 24 hourly temperatures of
--   the LST day, all present).
-- * Run-time label: `HHz` of the run's initialization (UTC). NWS versions are issued at any
--   hour and are labelled by the 6-hour synoptic slot they fall in (00z, 06z, 12z, 18z).
-- * Lead: for lead_days L, the forecast of day D is the latest run of each label issued
--   before D starts minus (L - 1) days (L = 1: the latest run before the day starts). A run
--   r with n = ceil((start of D - r) / 1 day) was issued before the cutoff of every lead
--   L <= n, so lead L takes the newest run with n >= L, and a missing run is covered by
--   the one before it. Leads 1 to 3 are kept.
-- * Lead 0: a run issued after D began that still covers D (a run at the day's first hour,
--   a 3-hourly run one or two hours into it) is the newest run of its label with n = 0
--   exactly; a missing one is not covered by an older run, which is a lead-1 forecast.
--   Only the same-day bracket odds read lead 0 (src/bracket_odds/inputs.rs); the metrics,
--   trends and daily detail keep leads 1 to 3. The NWS hourly forecast has no lead 0: a
--   version issued within the day no longer holds the day's first hours.
-- * error = observed - forecast: positive means the model ran cold.
-- * available_at: when the pair could first have been scored (issue 31, `as_of` on
--   model_accuracy): the later of its forecast's available_at and the moment its verifying
--   value was known, the latest available_at of what that value is computed from (the
--   day's CLI reports when the CLI gives it, else the readings the engine replays for the
--   day and its DSM). A value revised later (a corrected CLI, late readings) counts only
--   from the revision on: a pair is never scored before its value could be known.

-- 1. Verifying values.
CREATE OR REPLACE TABLE ap_observed AS
SELECT
    station_code,
    date,
    COALESCE(cli_high, high) AS observed_high,
    CASE WHEN cli_high IS NOT NULL THEN 'cli' ELSE high_source END AS high_source,
    COALESCE(cli_low, low) AS observed_low,
    CASE WHEN cli_low IS NOT NULL THEN 'cli' ELSE low_source END AS low_source
FROM daily_extremes
WHERE logic = 'nws'
  AND day_complete
  AND (cli_high IS NOT NULL OR cli_low IS NOT NULL OR observations >= 20)
  AND date BETWEEN $from AND $to;

-- 1b. When the verifying values were known (see available_at above).
-- The day's reports: its CLI gives the value when it has one, its DSM can give a
-- computed one.
CREATE OR REPLACE TABLE ap_reports_known AS
SELECT
    station_code,
    report_date AS date,
    max(CASE WHEN kind = 'cli' THEN available_at END) AS cli_at,
    max(CASE WHEN kind = 'dsm' THEN available_at END) AS dsm_at
FROM reports
WHERE report_date BETWEEN $from AND $to
GROUP BY station_code, report_date;

-- The readings a computed value comes from are those the live engine replays for the
-- day: [start - 7 h, end + 2 h) of the LST day (extremes::REPLAY_BEFORE/REPLAY_AFTER:
-- the groups reported after the day closes count), so a reading at LST second e counts
-- for days floor((e - 7200) / 86400) and floor((e + 25200) / 86400). Grouped in
-- 15-minute buckets first (every zone offset is a multiple of 15 minutes, so a bucket
-- never straddles a boundary). One table per input, joined below rather than stacked
-- with UNION ALL: on a Ballista cluster a UNION ALL over an empty table (a lake without
-- one-minute data) never finishes.
CREATE OR REPLACE TABLE ap_observations_known AS
SELECT b.station_code, CAST(CAST(floor((date_part('epoch', b.bucket) + 60 * s.standard_offset_minutes + x.shift) / 86400) AS INT) AS DATE) AS date,
       max(b.known_at) AS known_at
FROM (
    SELECT station_code, date_bin(INTERVAL '15 minutes', observation_time) AS bucket, max(available_at) AS known_at
    FROM observations
    WHERE date BETWEEN CAST($from - INTERVAL '1 day' AS VARCHAR) AND CAST($to + INTERVAL '2 days' AS VARCHAR)
    GROUP BY 1, 2
) b
JOIN stations s ON s.station_code = b.station_code
CROSS JOIN (VALUES (-7200), (25200)) AS x(shift)
GROUP BY 1, 2;

CREATE OR REPLACE TABLE ap_onemin_known AS
SELECT b.station_code, CAST(CAST(floor((date_part('epoch', b.bucket) + 60 * s.standard_offset_minutes + x.shift) / 86400) AS INT) AS DATE) AS date,
       max(b.known_at) AS known_at
FROM (
    SELECT station_code, date_bin(INTERVAL '15 minutes', observation_time) AS bucket, max(available_at) AS known_at
    FROM onemin
    WHERE date BETWEEN CAST($from - INTERVAL '1 day' AS VARCHAR) AND CAST($to + INTERVAL '2 days' AS VARCHAR)
    GROUP BY 1, 2
) b
JOIN stations s ON s.station_code = b.station_code
CROSS JOIN (VALUES (-7200), (25200)) AS x(shift)
GROUP BY 1, 2;

CREATE OR REPLACE TABLE ap_verified AS
SELECT
    o.*,
    CASE WHEN o.high_source = 'cli' THEN c.cli_at ELSE greatest(r.known_at, m.known_at, c.dsm_at) END AS high_known_at,
    CASE WHEN o.low_source = 'cli' THEN c.cli_at ELSE greatest(r.known_at, m.known_at, c.dsm_at) END AS low_known_at
FROM ap_observed o
LEFT JOIN ap_reports_known c ON c.station_code = o.station_code AND c.date = o.date
LEFT JOIN ap_observations_known r ON r.station_code = o.station_code AND r.date = o.date
LEFT JOIN ap_onemin_known m ON m.station_code = o.station_code AND m.date = o.date;

-- 2. Every run's forecast of those days, with the start of the LST day (Unix seconds).
CREATE OR REPLACE TABLE ap_runs AS
SELECT
    f.model,
    f.location_name AS station_code,
    f.date,
    f.run_time,
    lpad(CAST(CAST(date_part('hour', f.run_time) AS INT) AS VARCHAR), 2, '0') || 'z' AS run_label,
    CASE WHEN s.units = 'fahrenheit' THEN f.high_f ELSE f.high_c END AS forecast_high,
    CASE WHEN s.units = 'fahrenheit' THEN f.low_f ELSE f.low_c END AS forecast_low,
    date_part('epoch', CAST(f.date AS TIMESTAMP)) - 60 * s.standard_offset_minutes AS day_start,
    f.available_at
FROM forecast_daily f
JOIN stations s ON s.station_code = f.location_name
WHERE f.tz_mode = 'standard'
  AND f.date BETWEEN $from AND $to
  AND f.run_date >= CAST($from - INTERVAL '20 days' AS VARCHAR)
  AND f.run_date <= CAST($to AS VARCHAR)
UNION ALL
SELECT
    'NWS' AS model,
    station_code,
    CAST(day_num AS DATE) AS date,
    run_time,
    lpad(CAST(CAST(6 * floor(date_part('hour', run_time) / 6) AS INT) AS VARCHAR), 2, '0') || 'z' AS run_label,
    CASE WHEN units = 'fahrenheit' THEN max_f ELSE round((max_f - 32) * 5 / 9, 1) END AS forecast_high,
    CASE WHEN units = 'fahrenheit' THEN min_f ELSE round((min_f - 32) * 5 / 9, 1) END AS forecast_low,
    86400.0 * day_num - 60 * standard_offset_minutes AS day_start,
    available_at
FROM (
    -- Each version's hours grouped by LST day (day_num: days since 1970-01-01). A version
    -- holds each hour once (nws_hourly's key is station, version and hour, and the lake
    -- stores each key once), so count(*) counts its distinct hours without a second
    -- aggregation.
    SELECT
        n.station_code,
        s.units,
        s.standard_offset_minutes,
        CAST(floor((date_part('epoch', n.start_time) + 60 * s.standard_offset_minutes) / 86400) AS INT) AS day_num,
        n.generated_at AS run_time,
        max(n.temperature_f) AS max_f,
        min(n.temperature_f) AS min_f,
        count(*) AS hours,
        max(n.available_at) AS available_at
    FROM nws_hourly n
    JOIN stations s ON s.station_code = n.station_code
    WHERE n.date >= CAST($from - INTERVAL '8 days' AS VARCHAR)
      AND n.date <= CAST($to AS VARCHAR)
    GROUP BY 1, 2, 3, 4, 5
) v
WHERE hours = 24
  AND CAST(day_num AS DATE) BETWEEN $from AND $to
  AND date_part('epoch', run_time) < 86400.0 * day_num - 60 * standard_offset_minutes;

-- 3. The run serving each lead: the newest run of the label with n >= L (runs older than
--    it have n >= L too, newer ones n < L), and for lead 0 the label's run with n = 0. One
--    aggregate per label and day with a filtered max per lead (ap_newest), then the runs
--    found joined back for their values. Not a window over the runs (the LAG formulation
--    measured 2x slower in DataFusion 55: many small window partitions), nor one group per
--    lead (each run copied to the four leads grouped 2.5 times the rows).
CREATE OR REPLACE TABLE ap_runs_n AS
SELECT *, CAST(ceil((day_start - date_part('epoch', run_time)) / 86400.0) AS INT) AS natural_lead
FROM ap_runs;

CREATE OR REPLACE TABLE ap_newest AS
SELECT
    model, station_code, run_label, date,
    max(run_time) FILTER (WHERE natural_lead = 0) AS run_0,
    max(run_time) FILTER (WHERE natural_lead >= 1) AS run_1,
    max(run_time) FILTER (WHERE natural_lead >= 2) AS run_2,
    max(run_time) FILTER (WHERE natural_lead >= 3) AS run_3
FROM ap_runs_n
GROUP BY model, station_code, run_label, date;

CREATE OR REPLACE TABLE ap_leads AS
SELECT r.*, c.lead_days
FROM (
    SELECT model, station_code, run_label, date, 0 AS lead_days, run_0 AS run_time FROM ap_newest WHERE run_0 IS NOT NULL
    UNION ALL
    SELECT model, station_code, run_label, date, 1, run_1 FROM ap_newest WHERE run_1 IS NOT NULL
    UNION ALL
    SELECT model, station_code, run_label, date, 2, run_2 FROM ap_newest WHERE run_2 IS NOT NULL
    UNION ALL
    SELECT model, station_code, run_label, date, 3, run_3 FROM ap_newest WHERE run_3 IS NOT NULL
) c
JOIN ap_runs_n r
  ON r.model = c.model AND r.station_code = c.station_code AND r.run_label = c.run_label
 AND r.date = c.date AND r.run_time = c.run_time;

SELECT
    l.station_code, l.date, l.model, l.run_label, l.run_time, l.lead_days,
    'high' AS target, l.forecast_high AS forecast, o.observed_high AS observed,
    o.observed_high - l.forecast_high AS error, o.high_source AS observed_source,
    -- NULL when either time is unknown (greatest() alone would skip a NULL).
    CASE WHEN l.available_at IS NOT NULL AND o.high_known_at IS NOT NULL
         THEN greatest(l.available_at, o.high_known_at) END AS available_at
FROM ap_leads l
JOIN ap_verified o ON o.station_code = l.station_code AND o.date = l.date
WHERE l.forecast_high IS NOT NULL AND o.observed_high IS NOT NULL
UNION ALL
SELECT
    l.station_code, l.date, l.model, l.run_label, l.run_time, l.lead_days,
    'low' AS target, l.forecast_low AS forecast, o.observed_low AS observed,
    o.observed_low - l.forecast_low AS error, o.low_source AS observed_source,
    CASE WHEN l.available_at IS NOT NULL AND o.low_known_at IS NOT NULL
         THEN greatest(l.available_at, o.low_known_at) END AS available_at
FROM ap_leads l
JOIN ap_verified o ON o.station_code = l.station_code AND o.date = l.date
WHERE l.forecast_low IS NOT NULL AND o.observed_low IS NOT NULL
