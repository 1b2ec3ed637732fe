-- accuracy_trends: a rolling 7-day MAE and bias per station, lead (1-3), target and model, for
-- each day of the 90 days ending at `as_of` (the station's latest day in accuracy_pairs). The point
-- of day D pools the pairs of days D-6..D; a day whose 7-day span holds no pair has no
-- point. Rows at two scopes: per_model_run (one run-time label) and per_model (all labels,
-- run_label = ''). The sums are kept so the points of any subset of labels add up (the
-- API's `run_time` filter).
--
-- How: each series' pairs (per label, and per model over its labels) are gathered into one
-- list and summed over the sliding 7 days by `wxlake_rolling_sums` (src/jobs/rolling_sums.rs),
-- which touches each pair twice in order of day. The plain SQL for it copies every pair to
-- the 7 days whose span holds it and groups the copies: 10 M rows hashed on the 90-day bench
-- lake, most of the job's time.
-- The sums are exact: each error enters as DECIMAL(38, 17) and the total becomes a DOUBLE
-- at the end. A float sum's last bits depend on the order of its terms, which a parallel
-- plan does not fix, and the same lake must give the same table on every run.
-- (An error is a finite temperature difference, the decoders keep every number finite, so it
-- is far inside the decimal's range; one outside it would fail the job with the cast's error
-- rather than store a wrong sum.)

-- The 96 days each station's points draw on (its 90 days and the 6 before), as a table joined
-- on (station_code, date): the join's dynamic filter then skips the files of other dates, so
-- a lake of several years reads about 96 days of pairs, not all of them.
CREATE OR REPLACE TABLE at_days AS
SELECT a.station_code, CAST(a.as_of - d.k AS DATE) AS date, a.as_of
FROM (SELECT station_code, CAST(max(date) AS INT) AS as_of FROM accuracy_pairs WHERE lead_days >= 1 GROUP BY station_code) a
CROSS JOIN (SELECT unnest(range(0, 96)) AS k) d;

CREATE OR REPLACE TABLE at_pairs AS
SELECT
    p.station_code, p.lead_days, p.target, p.model, p.run_label, a.as_of,
    named_struct(
        'day', CAST(p.date AS INT),
        'sum_error', CAST(p.error AS DECIMAL(38, 17)),
        'sum_abs_error', CAST(abs(p.error) AS DECIMAL(38, 17)),
        'sum_sq_error', CAST(p.error * p.error AS DECIMAL(38, 17))
    ) AS pair
FROM accuracy_pairs p
JOIN at_days a ON a.station_code = p.station_code AND a.date = p.date
WHERE p.lead_days >= 1;

SELECT
    station_code, lead_days, target, scope, model, run_label,
    CAST(get_field(p, 'day') AS DATE) AS date,
    get_field(p, 'n') AS n,
    CAST(get_field(p, 'sum_error') AS DOUBLE) AS sum_error,
    CAST(get_field(p, 'sum_abs_error') AS DOUBLE) AS sum_abs_error,
    CAST(get_field(p, 'sum_sq_error') AS DOUBLE) AS sum_sq_error,
    CAST(get_field(p, 'sum_abs_error') AS DOUBLE) / get_field(p, 'n') AS mae_7d,
    CAST(get_field(p, 'sum_error') AS DOUBLE) / get_field(p, 'n') AS bias_7d,
    now() AS computed_at
FROM (
    SELECT station_code, lead_days, target, scope, model, run_label, unnest(points) AS p
    FROM (
        SELECT station_code, lead_days, target, 'per_model_run' AS scope, model, run_label,
               wxlake_rolling_sums(array_agg(pair), as_of - 89, as_of, 7) AS points
        FROM at_pairs
        GROUP BY station_code, lead_days, target, model, run_label, as_of
        UNION ALL
        SELECT station_code, lead_days, target, 'per_model', model, '',
               wxlake_rolling_sums(array_agg(pair), as_of - 89, as_of, 7)
        FROM at_pairs
        GROUP BY station_code, lead_days, target, model, as_of
    ) s
) u
