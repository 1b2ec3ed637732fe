-- accuracy_trends: a rolling 7-day MAE and bias per station, lead (1-3), target and model, for
-- each day of the 90 days ending at `as_of` (the station's latest day in accuracy_pairs). The point
-- of day D pools the pairs of days D-6..D; a day whose 7-day span holds no pair has no
-- point. Rows at two scopes: per_model_run (one run-time label) and per_model (all labels,
-- run_label = ''). The sums are kept so the points of any subset of labels add up (the
-- API's `run_time` filter).

CREATE OR REPLACE TABLE at_asof AS
SELECT station_code, CAST(max(date) AS INT) AS as_of FROM accuracy_pairs WHERE lead_days >= 1 GROUP BY station_code;

CREATE OR REPLACE TABLE at_spread AS
SELECT p.station_code, p.lead_days, p.target, p.model, p.run_label, p.error, CAST(p.date AS INT) + o.k AS day
FROM accuracy_pairs p
JOIN at_asof a ON a.station_code = p.station_code
CROSS JOIN (VALUES (0), (1), (2), (3), (4), (5), (6)) AS o(k)
WHERE p.lead_days >= 1
  AND CAST(p.date AS INT) > a.as_of - 96
  AND CAST(p.date AS INT) + o.k <= a.as_of
  AND CAST(p.date AS INT) + o.k > a.as_of - 90;

SELECT
    station_code,
    lead_days,
    target,
    CASE WHEN grouping(run_label) = 1 THEN 'per_model' ELSE 'per_model_run' END AS scope,
    model,
    COALESCE(run_label, '') AS run_label,
    CAST(day AS DATE) AS date,
    count(*) AS n,
    sum(error) AS sum_error,
    sum(abs(error)) AS sum_abs_error,
    sum(error * error) AS sum_sq_error,
    avg(abs(error)) AS mae_7d,
    avg(error) AS bias_7d,
    now() AS computed_at
FROM at_spread
GROUP BY GROUPING SETS (
    (station_code, lead_days, target, model, run_label, day),
    (station_code, lead_days, target, model, day)
)
