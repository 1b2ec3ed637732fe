-- model_accuracy: MAE, bias and RMSE of every station's forecasts over the windows 7d, 14d,
-- 30d and 90d ending at `as_of`, the station's latest day with a pair in accuracy_pairs
-- (stations east of UTC finish their day hours before American ones); per lead
-- (1-3 days; the pairs' lead 0 is the same-day odds' alone) and target (high, low), at three scopes:
--   per_model_run  one model at one run-time label (model, run_label set),
--   per_model      one model over all its labels (run_label = ''),
--   ensemble       every pair of every model pooled (model = '', run_label = '').
-- The sums (n, sum_error, sum_abs_error, sum_sq_error) are kept beside the metrics: adding
-- the sums of per_model_run rows gives the metrics of any subset of models and labels
-- (what the API does for its `model` and `run_time` filters). day_bits_lo / day_bits_hi
-- say which days had pairs: bit k of lo is day as_of - k (k < 62), bit k of hi is day
-- as_of - 62 - k. The number of days with pairs (the API's days_available) is the count
-- of set bits of their OR over a subset (DuckDB: bit_count). No count(DISTINCT date)
-- column: it cost two thirds of this job's time in DataFusion 55 and repeats the bits.
-- error = observed - forecast: positive bias means the model ran cold.
--
-- How: the windowed pairs are grouped once, per model and label (ma_runs); a per_model row
-- is the sum of its labels' rows and an ensemble row the sum of its models' (a grouping set
-- of the three scopes looked up every windowed pair three times). The sums are exact: each
-- error enters as DECIMAL(38, 17) and the total becomes a DOUBLE at the end, so the order of
-- the terms, which a parallel plan does not fix, cannot change a bit between runs.
-- (An error is a finite temperature difference, the decoders keep every number finite, so it
-- is far inside the decimal's range; one outside it would fail the job with the cast's error
-- rather than store a wrong sum.)

-- The 90 days each station's windows cover, with their age (as_of - date), as a table joined
-- on (station_code, date): the join's dynamic filter then skips the files of other dates, so
-- a lake of several years reads 90 days of pairs, not all of them.
CREATE OR REPLACE TABLE ma_days AS
SELECT a.station_code, CAST(CAST(a.as_of AS INT) - d.k AS DATE) AS date, a.as_of, d.k AS age
FROM (SELECT station_code, max(date) AS as_of FROM accuracy_pairs WHERE lead_days >= 1 GROUP BY station_code) a
CROSS JOIN (SELECT unnest(range(0, 90)) AS k) d;

CREATE OR REPLACE TABLE ma_runs AS
SELECT
    p.station_code, w.window_name, w.window_days, p.as_of, p.lead_days, p.target, p.model, p.run_label,
    count(*) AS n,
    sum(p.e) AS sum_error,
    sum(p.ae) AS sum_abs_error,
    sum(p.se) AS sum_sq_error,
    COALESCE(bit_or(CASE WHEN p.age < 62 THEN CAST(1 AS BIGINT) << p.age END), 0) AS day_bits_lo,
    COALESCE(bit_or(CASE WHEN p.age >= 62 THEN CAST(1 AS BIGINT) << (p.age - 62) END), 0) AS day_bits_hi
FROM (
    SELECT p.station_code, p.model, p.run_label, p.lead_days, p.target, a.as_of,
           CAST(p.error AS DECIMAL(38, 17)) AS e,
           CAST(abs(p.error) AS DECIMAL(38, 17)) AS ae,
           CAST(p.error * p.error AS DECIMAL(38, 17)) AS se,
           a.age
    FROM accuracy_pairs p
    JOIN ma_days a ON a.station_code = p.station_code AND a.date = p.date
    WHERE p.lead_days >= 1
) p
JOIN (VALUES ('7d', 7), ('14d', 14), ('30d', 30), ('90d', 90)) AS w(window_name, window_days)
  ON p.age < w.window_days
GROUP BY p.station_code, w.window_name, w.window_days, p.as_of, p.lead_days, p.target, p.model, p.run_label;

CREATE OR REPLACE TABLE ma_models AS
SELECT
    station_code, window_name, window_days, as_of, lead_days, target, model,
    sum(n) AS n, sum(sum_error) AS sum_error, sum(sum_abs_error) AS sum_abs_error, sum(sum_sq_error) AS sum_sq_error,
    bit_or(day_bits_lo) AS day_bits_lo, bit_or(day_bits_hi) AS day_bits_hi
FROM ma_runs
GROUP BY station_code, window_name, window_days, as_of, lead_days, target, model;

SELECT
    station_code, window_name AS "window", window_days, as_of, lead_days, target, scope, model, run_label, n,
    CAST(sum_error AS DOUBLE) AS sum_error,
    CAST(sum_abs_error AS DOUBLE) AS sum_abs_error,
    CAST(sum_sq_error AS DOUBLE) AS sum_sq_error,
    CAST(sum_abs_error AS DOUBLE) / n AS mae,
    CAST(sum_error AS DOUBLE) / n AS bias,
    sqrt(CAST(sum_sq_error AS DOUBLE) / n) AS rmse,
    day_bits_lo, day_bits_hi, now() AS computed_at
FROM (
    SELECT station_code, window_name, window_days, as_of, lead_days, target, 'per_model_run' AS scope, model, run_label,
           n, sum_error, sum_abs_error, sum_sq_error, day_bits_lo, day_bits_hi
    FROM ma_runs
    UNION ALL
    SELECT station_code, window_name, window_days, as_of, lead_days, target, 'per_model', model, '',
           n, sum_error, sum_abs_error, sum_sq_error, day_bits_lo, day_bits_hi
    FROM ma_models
    UNION ALL
    SELECT station_code, window_name, window_days, as_of, lead_days, target, 'ensemble', '', '',
           sum(n), sum(sum_error), sum(sum_abs_error), sum(sum_sq_error), bit_or(day_bits_lo), bit_or(day_bits_hi)
    FROM ma_models
    GROUP BY station_code, window_name, window_days, as_of, lead_days, target
) s
