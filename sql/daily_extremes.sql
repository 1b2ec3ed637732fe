-- daily_extremes: the live engine's answer for each station, trading day and logic.
--
-- The rules (Local Standard Time windows, probable ranges, 6/24-hour groups, DSM/CLI
-- finality, wu rule 3, -999 gaps, suspect temperatures) live in one place, src/live: the
-- runner replays the lake's rows for the run's dates through it and registers the result
-- as `observed_extremes` (src/jobs/observed.rs documents every column). This statement
-- only stamps the run time and keeps the run's dates.
SELECT
    station_code, date, logic, units,
    high, low, high_f, low_f, high_c, low_c, high_time, low_time, high_source, low_source,
    high_sources, low_sources,
    cli_high, cli_low, is_final, anomaly, day_complete, high_valid_through, low_valid_through,
    observations, suspect, onemin, missing_minutes, held, quality_ok, data_quality,
    high_by_hour, low_by_hour,
    now() AS computed_at
FROM observed_extremes
WHERE date BETWEEN $from AND $to
