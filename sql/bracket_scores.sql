-- bracket_scores: the bracket odds each settled station-day had at each checkpoint, and
-- the baselines', scored against the settled value.
--
-- The distributions are made by the service's own code from what was known at each
-- checkpoint (no look-ahead): the runner computes them for the run's dates and registers
-- them as `bracket_forecasts` (src/jobs/bracket_scores.rs documents every column). This
-- statement only stamps the run time and keeps the run's dates.
SELECT
    station_code, date, target, logic, units, checkpoint, checkpoint_at, forecaster, method, settled,
    settled_at, bracket, bracket_lo, bracket_hi, p, hit, ignorance, rps, brier, pit, mean,
    now() AS computed_at
FROM bracket_forecasts
WHERE date BETWEEN $from AND $to
