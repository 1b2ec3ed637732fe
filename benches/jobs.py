"""forecast_daily in wxlake, DuckDB and Polars on the same Parquet files.

Run through benches/jobs_vs_duckdb.sh (it prepares the virtualenv, the lake and the
helper tables). The DuckDB and Polars versions are ports of sql/forecast_daily.sql: same
pieces -> days -> coverage steps, same helper tables, same output partitioning (by
run_date, as jobs/forecast_daily.toml declares: one file per run date).
"""

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time

import duckdb
from lake_files import duck_list, snapshot_files
from quiet import require_quiet, spread

try:
    import polars as pl
except ImportError:  # optional
    pl = None


DUCKDB_SQL = """
CREATE OR REPLACE TEMP TABLE day_windows AS SELECT * FROM read_parquet('{h}/day_windows.parquet');
CREATE OR REPLACE TEMP TABLE model_leads AS SELECT * FROM read_parquet('{h}/model_leads.parquet');
CREATE OR REPLACE TEMP TABLE stations AS SELECT * FROM read_parquet('{h}/stations.parquet');
CREATE OR REPLACE TEMP TABLE fd_pieces AS
SELECT model, run_date, location_name, run_time, valid_date_civil, valid_date_standard,
       count(*) AS points, min(valid_time) AS first_valid, max(valid_time) AS last_valid,
       min(forecast_hour) AS first_lead, max(forecast_hour) AS last_lead,
       max(temperature_f) AS high_f, min(temperature_f) AS low_f,
       max(temperature_c) AS high_c, min(temperature_c) AS low_c, max(available_at) AS available_at
FROM read_parquet({forecasts}, hive_partitioning = true,
                  hive_types = {{'model': VARCHAR, 'run_date': VARCHAR}})
WHERE valid_date_civil IS NOT NULL AND valid_date_standard IS NOT NULL
  AND (temperature_f IS NOT NULL OR temperature_c IS NOT NULL)
GROUP BY ALL;
CREATE OR REPLACE TEMP VIEW fd_days AS
SELECT model, run_date, location_name, run_time, 'civil' AS tz_mode, valid_date_civil AS date,
       sum(points) AS points, min(first_valid) AS first_valid, max(last_valid) AS last_valid,
       min(first_lead) AS first_lead, max(last_lead) AS last_lead,
       max(high_f) AS high_f, min(low_f) AS low_f, max(high_c) AS high_c, min(low_c) AS low_c,
       max(available_at) AS available_at
FROM fd_pieces GROUP BY model, run_date, location_name, run_time, valid_date_civil
UNION ALL
SELECT model, run_date, location_name, run_time, 'standard', valid_date_standard,
       sum(points), min(first_valid), max(last_valid), min(first_lead), max(last_lead),
       max(high_f), min(low_f), max(high_c), min(low_c), max(available_at)
FROM fd_pieces GROUP BY model, run_date, location_name, run_time, valid_date_standard;
COPY (
SELECT d.model, d.run_date, d.location_name, d.tz_mode, d.date, s.timezone, d.run_time,
       CAST(d.points AS INTEGER) AS points_used,
       CASE WHEN s.units = 'fahrenheit' THEN d.high_f END AS high_f,
       CASE WHEN s.units = 'fahrenheit' THEN d.low_f END AS low_f,
       CASE WHEN s.units = 'celsius' THEN d.high_c END AS high_c,
       CASE WHEN s.units = 'celsius' THEN d.low_c END AS low_c, d.available_at
FROM fd_days d
JOIN stations s ON s.station_code = d.location_name
JOIN day_windows w ON w.timezone = s.timezone AND w.tz_mode = d.tz_mode AND w.date = d.date
JOIN model_leads a ON a.model = d.model AND a.forecast_hour = d.first_lead
JOIN model_leads b ON b.model = d.model AND b.forecast_hour = d.last_lead
WHERE epoch(d.first_valid) - epoch(w.start_utc) < 3600 * a.step_before_h
  AND epoch(w.end_utc) - epoch(d.last_valid) <= 3600 * b.step_after_h
  AND d.points >= round(b.native_index - a.native_index) + 1
) TO '{out}' (FORMAT parquet, PARTITION_BY (run_date), COMPRESSION snappy, OVERWRITE_OR_IGNORE);
"""


def run_duckdb(lake, helpers, out):
    shutil.rmtree(out, ignore_errors=True)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(DUCKDB_SQL.format(forecasts=duck_list(f"{lake}/forecasts"), h=helpers, out=out))
    con.close()


def run_polars(lake, helpers, out):
    shutil.rmtree(out, ignore_errors=True)
    f = pl.scan_delta(f"{lake}/forecasts").with_columns(pl.col("model").cast(pl.String),
                                                      pl.col("run_date").cast(pl.String))
    pieces = (
        f.filter(pl.col("valid_date_civil").is_not_null() & pl.col("valid_date_standard").is_not_null()
                 & (pl.col("temperature_f").is_not_null() | pl.col("temperature_c").is_not_null()))
        .group_by(["model", "run_date", "location_name", "run_time", "valid_date_civil", "valid_date_standard"])
        .agg(points=pl.len(), first_valid=pl.col("valid_time").min(), last_valid=pl.col("valid_time").max(),
             first_lead=pl.col("forecast_hour").min(), last_lead=pl.col("forecast_hour").max(),
             high_f=pl.col("temperature_f").max(), low_f=pl.col("temperature_f").min(),
             high_c=pl.col("temperature_c").max(), low_c=pl.col("temperature_c").min(),
             available_at=pl.col("available_at").max())
        .collect()
        .lazy()
    )
    aggs = [pl.col("points").sum(), pl.col("first_valid").min(), pl.col("last_valid").max(),
            pl.col("first_lead").min(), pl.col("last_lead").max(), pl.col("high_f").max(),
            pl.col("low_f").min(), pl.col("high_c").max(), pl.col("low_c").min(), pl.col("available_at").max()]
    keys = ["model", "run_date", "location_name", "run_time"]
    days = pl.concat([
        pieces.group_by(keys + ["valid_date_civil"]).agg(aggs)
        .rename({"valid_date_civil": "date"}).with_columns(tz_mode=pl.lit("civil")),
        pieces.group_by(keys + ["valid_date_standard"]).agg(aggs)
        .rename({"valid_date_standard": "date"}).with_columns(tz_mode=pl.lit("standard")),
    ], how="diagonal")
    stations = pl.scan_parquet(f"{helpers}/stations.parquet").select(
        pl.col("station_code").alias("location_name"), "timezone", "units")
    windows = pl.scan_parquet(f"{helpers}/day_windows.parquet").select("timezone", "tz_mode", "date", "start_utc", "end_utc")
    leads = pl.scan_parquet(f"{helpers}/model_leads.parquet")
    a = leads.select("model", pl.col("forecast_hour").alias("first_lead"), "step_before_h",
                     pl.col("native_index").alias("a_index"))
    b = leads.select("model", pl.col("forecast_hour").alias("last_lead"), "step_after_h",
                     pl.col("native_index").alias("b_index"))
    fahrenheit = pl.col("units") == "fahrenheit"
    celsius = pl.col("units") == "celsius"
    result = (
        days.join(stations, on="location_name")
        .join(windows, on=["timezone", "tz_mode", "date"])
        .join(a, on=["model", "first_lead"])
        .join(b, on=["model", "last_lead"])
        .filter(((pl.col("first_valid") - pl.col("start_utc")).dt.total_seconds() < 3600 * pl.col("step_before_h"))
                & ((pl.col("end_utc") - pl.col("last_valid")).dt.total_seconds() <= 3600 * pl.col("step_after_h"))
                & (pl.col("points") >= (pl.col("b_index") - pl.col("a_index")).round() + 1))
        .select("model", "run_date", "location_name", "tz_mode", "date", "timezone", "run_time",
                pl.col("points").cast(pl.Int32).alias("points_used"),
                pl.when(fahrenheit).then(pl.col("high_f")).alias("high_f"),
                pl.when(fahrenheit).then(pl.col("low_f")).alias("low_f"),
                pl.when(celsius).then(pl.col("high_c")).alias("high_c"),
                pl.when(celsius).then(pl.col("low_c")).alias("low_c"), "available_at")
        .collect()
    )
    os.makedirs(out, exist_ok=True)
    result.write_parquet(out, partition_by=["run_date"], compression="snappy")


def run_wxlake(jobs_cmd, lake):
    cmd = shlex.split(jobs_cmd)
    # `wxlake jobs` takes --lake before `jobs`; a shim takes it first.
    cmd = cmd[:1] + ["--lake", f"file://{lake}"] + cmd[1:] + ["run", "forecast_daily"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"wxlake failed ({r.returncode}): {r.stderr}")
    return r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""


def timed(fn, repeat):
    times, last = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        last = fn()
        times.append(time.perf_counter() - t0)
    return times, last


COMPARE = """
WITH w AS (SELECT model, run_date::VARCHAR AS run_date, location_name, tz_mode, date, timezone, run_time,
                  points_used, high_f, low_f, high_c, low_c, available_at
           FROM read_parquet({a}, hive_partitioning = true, hive_types_autocast = false)),
     o AS (SELECT model, run_date::VARCHAR AS run_date, location_name, tz_mode, date, timezone, run_time,
                  points_used, high_f, low_f, high_c, low_c, available_at
           FROM read_parquet({b}, hive_partitioning = true, hive_types_autocast = false))
SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM o),
       (SELECT count(*) FROM (SELECT * FROM w EXCEPT ALL SELECT * FROM o)),
       (SELECT count(*) FROM (SELECT * FROM o EXCEPT ALL SELECT * FROM w))
"""


def compare(a, b):
    """wxlake's output (a Delta table: its current files) against another engine's (a
    directory of Parquet it wrote)."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    n_a, n_b, only_a, only_b = con.execute(COMPARE.format(a=duck_list(a), b=f"'{b}/*/*.parquet'")).fetchone()
    return n_a, n_b, only_a, only_b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lake", required=True)
    ap.add_argument("--helpers", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs-cmd", required=True)
    ap.add_argument("--force", action="store_true", help="time even if the machine or the lake is not quiet")
    a = ap.parse_args()

    con = duckdb.connect()
    files = snapshot_files(f"{a.lake}/forecasts")
    rows = con.execute(f"SELECT count(*) FROM read_parquet({duck_list(a.lake + '/forecasts')})").fetchone()[0]
    size = sum(os.path.getsize(f) for f in files)
    files = len(files)
    print(f"input: {rows:,} forecast rows in {files} files ({size / 1e6:.0f} MB) at {a.lake}")
    print(f"cores: {os.cpu_count()}, runs per engine: {a.repeat}")

    require_quiet(a.lake, a.force)
    results = []
    times, msg = timed(lambda: run_wxlake(a.jobs_cmd, a.lake), a.repeat)
    results.append(("wxlake (DataFusion)", times))
    print(f"  wxlake: {msg}")
    duck_out = f"{a.work}/duckdb_out"
    times, _ = timed(lambda: run_duckdb(a.lake, a.helpers, duck_out), a.repeat)
    results.append((f"DuckDB {duckdb.__version__}", times))
    pol_out = f"{a.work}/polars_out"
    if pl is not None:
        times, _ = timed(lambda: run_polars(a.lake, a.helpers, pol_out), a.repeat)
        results.append((f"Polars {pl.__version__}", times))

    print(f"{'engine':<24}{'best s':>10}{'median s':>10}   best / median / worst, spread")
    for name, times in results:
        print(f"{name:<24}{min(times):>10.2f}{statistics.median(times):>10.2f}   {spread(times)}")

    wx_out = f"{a.lake}/derived/forecast_daily"
    checks = [("DuckDB", duck_out)] + ([("Polars", pol_out)] if pl is not None else [])
    ok = True
    for name, out in checks:
        n_w, n_o, only_w, only_o = compare(wx_out, out)
        same = only_w == 0 and only_o == 0
        ok &= same
        print(f"result check vs {name}: wxlake {n_w:,} rows, {name} {n_o:,} rows, "
              f"{only_w} only in wxlake, {only_o} only in {name}: {'identical' if same else 'DIFFERENT'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
