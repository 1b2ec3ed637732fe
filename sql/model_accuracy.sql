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

CREATE OR REPLACE TABLE ma_asof AS
SELECT station_code, max(date) AS as_of FROM accuracy_pairs WHERE lead_days >= 1 GROUP BY station_code;

CREATE OR REPLACE TABLE ma_pairs AS
SELECT
    p.station_code, p.model, p.run_label, p.lead_days, p.target, p.error, p.date,
    w.window_name, w.window_days, a.as_of,
    CAST(CAST(a.as_of AS INT) - CAST(p.date AS INT) AS BIGINT) AS age
FROM accuracy_pairs p
JOIN ma_asof a ON a.station_code = p.station_code
JOIN (VALUES ('7d', 7), ('14d', 14), ('30d', 30), ('90d', 90)) AS w(window_name, window_days)
  ON CAST(a.as_of AS INT) - CAST(p.date AS INT) < w.window_days
WHERE p.date > a.as_of - INTERVAL '90 days'
  AND p.lead_days >= 1;

SELECT
    station_code,
    window_name AS "window",
    window_days,
    as_of,
    lead_days,
    target,
    CASE
        WHEN grouping(model) = 1 THEN 'ensemble'
        WHEN grouping(run_label) = 1 THEN 'per_model'
        ELSE 'per_model_run'
    END AS scope,
    COALESCE(model, '') AS model,
    COALESCE(run_label, '') AS run_label,
    count(*) AS n,
    sum(error) AS sum_error,
    sum(abs(error)) AS sum_abs_error,
    sum(error * error) AS sum_sq_error,
    avg(abs(error)) AS mae,
    avg(error) AS bias,
    sqrt(avg(error * error)) AS rmse,
    COALESCE(bit_or(CASE WHEN age < 62 THEN CAST(1 AS BIGINT) << age END), 0) AS day_bits_lo,
    COALESCE(bit_or(CASE WHEN age >= 62 THEN CAST(1 AS BIGINT) << (age - 62) END), 0) AS day_bits_hi,
    now() AS computed_at
FROM ma_pairs
GROUP BY GROUPING SETS (
    (station_code, window_name, window_days, as_of, lead_days, target, model, run_label),
    (station_code, window_name, window_days, as_of, lead_days, target, model),
    (station_code, window_name, window_days, as_of, lead_days, target)
)
