-- accuracy_daily_detail: the pairs of the 30 days ending at `as_of` (the station's latest
-- day in accuracy_pairs), by station: the `daily_detail` section of model_accuracy.php, which
-- shows per day the observed value and, per model, the forecast of its latest run among
-- the requested run-time labels. Leads 1 to 3, as model_accuracy.
--
-- The 30 days of each station are a table joined on (station_code, date): its 2,100 rows
-- are joined in place (the planner knows a table's size), and the join's dynamic filter
-- skips the other dates' files, so only about a third of a 90-day lake's pairs are read.

CREATE OR REPLACE TABLE dd_days AS
SELECT a.station_code, CAST(CAST(a.as_of AS INT) - d.k AS DATE) AS date
FROM (SELECT station_code, max(date) AS as_of FROM accuracy_pairs WHERE lead_days >= 1 GROUP BY station_code) a
CROSS JOIN (SELECT unnest(range(0, 30)) AS k) d;

SELECT
    p.station_code, p.date, p.lead_days, p.target, p.model, p.run_label, p.run_time,
    p.forecast, p.observed, p.observed_source, now() AS computed_at
FROM accuracy_pairs p
JOIN dd_days d ON d.station_code = p.station_code AND d.date = p.date
WHERE p.lead_days >= 1
