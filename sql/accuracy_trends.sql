-- accuracy_trends: a rolling 7-day MAE and bias per station, lead (1-3), target and model, for
-- each day of the 90 days ending at `as_of` (the station's latest day in accuracy_pairs). The point
-- of day D pools the pairs of days D-6..D; a day whose 7-day span holds no pair has no
-- point. Rows at two scopes: per_model_run (one run-time label) and per_model (all labels,
-- run_label = ''). The sums are kept so the points of any subset of labels add up (the
-- API's `run_time` filter).
--
-- How: each pair is spread over the 7 days whose span holds it and grouped once, per label
-- (at_runs); a per_model point is the sum of its labels' points of that day. (A grouping set
-- of both scopes looked up each of the 10 M spread rows of the 90-day bench lake twice.)
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

CREATE OR REPLACE TABLE at_runs AS
SELECT
    p.station_code, p.lead_days, p.target, p.model, p.run_label, p.day + o.k AS day,
    count(*) AS n,
    sum(p.e) AS sum_error,
    sum(p.ae) AS sum_abs_error,
    sum(p.se) AS sum_sq_error
FROM (
    SELECT p.station_code, p.lead_days, p.target, p.model, p.run_label, CAST(p.date AS INT) AS day, a.as_of,
           CAST(p.error AS DECIMAL(38, 17)) AS e,
           CAST(abs(p.error) AS DECIMAL(38, 17)) AS ae,
           CAST(p.error * p.error AS DECIMAL(38, 17)) AS se
    FROM accuracy_pairs p
    JOIN at_days a ON a.station_code = p.station_code AND a.date = p.date
    WHERE p.lead_days >= 1
) p
CROSS JOIN (VALUES (0), (1), (2), (3), (4), (5), (6)) AS o(k)
WHERE p.day + o.k <= p.as_of
  AND p.day + o.k > p.as_of - 90
GROUP BY p.station_code, p.lead_days, p.target, p.model, p.run_label, p.day + o.k;

SELECT
    station_code, lead_days, target, scope, model, run_label, CAST(day AS DATE) AS date, n,
    CAST(sum_error AS DOUBLE) AS sum_error,
    CAST(sum_abs_error AS DOUBLE) AS sum_abs_error,
    CAST(sum_sq_error AS DOUBLE) AS sum_sq_error,
    CAST(sum_abs_error AS DOUBLE) / n AS mae_7d,
    CAST(sum_error AS DOUBLE) / n AS bias_7d,
    now() AS computed_at
FROM (
    SELECT station_code, lead_days, target, 'per_model_run' AS scope, model, run_label, day,
           n, sum_error, sum_abs_error, sum_sq_error
    FROM at_runs
    UNION ALL
    SELECT station_code, lead_days, target, 'per_model', model, '', day,
           sum(n), sum(sum_error), sum(sum_abs_error), sum(sum_sq_error)
    FROM at_runs
    GROUP BY station_code, lead_days, target, model, day
) s
