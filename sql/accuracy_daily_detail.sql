-- accuracy_daily_detail: the pairs of the 30 days ending at `as_of` (the station's latest
-- day in accuracy_pairs), by station: the `daily_detail` section of model_accuracy.php, which
-- shows per day the observed value and, per model, the forecast of its latest run among
-- the requested run-time labels. Leads 1 to 3, as model_accuracy.

SELECT
    p.station_code, p.date, p.lead_days, p.target, p.model, p.run_label, p.run_time,
    p.forecast, p.observed, p.observed_source, now() AS computed_at
FROM accuracy_pairs p
JOIN (SELECT station_code, max(date) AS as_of FROM accuracy_pairs WHERE lead_days >= 1 GROUP BY station_code) a
  ON a.station_code = p.station_code
WHERE p.lead_days >= 1
  AND p.date > a.as_of - INTERVAL '30 days'
