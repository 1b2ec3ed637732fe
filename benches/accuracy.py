"""The accuracy jobs in wxlake and DuckDB on the same Parquet files.

Run through benches/accuracy_vs_duckdb.sh (it prepares the virtualenv, the lake and the
helper tables). Steps, in dependency order, each timed on its own:

  accuracy_pairs         forecast_daily + daily_extremes + nws_hourly + stations -> pairs
  model_accuracy         pairs -> metrics per window / lead / target / scope
  accuracy_trends        pairs -> rolling 7-day points
  accuracy_daily_detail  pairs -> last 30 days

wxlake: `wxlake jobs run <job>` (wall time of the process, incl. start-up, planning,
publication and the job_runs record). DuckDB: a port of each sql/*.sql file, a fresh
in-process connection per step, reading the same input Parquet files (the downstream
steps read DuckDB's own accuracy_pairs output) and writing Snappy Parquet (as wxlake writes job outputs) partitioned as the
job declares, each file sorted by the job's sort_by. Results are then compared row by
row on each table's key (floats within 1e-9 x max(|a|, |b|, 1): sums taken in another order
differ in the last bits, and a sum near 0 has no meaningful relative error).

Porting notes (DataFusion -> DuckDB):
- date_part('epoch', x)            -> epoch(x) (DOUBLE seconds)
- date_part('hour', ts)            -> hour(ts) (session TimeZone = UTC, like wxlake)
- CAST(date AS INT)                -> date - DATE '1970-01-01' (days since the epoch)
- CAST(int AS DATE)                -> DATE '1970-01-01' + int
- CAST(date - INTERVAL 'n days' AS VARCHAR): DataFusion keeps a DATE ('YYYY-MM-DD');
  DuckDB's DATE - INTERVAL is a TIMESTAMP ('YYYY-MM-DD 00:00:00', which would compare
  differently with the run_date strings), so the port subtracts an integer: date - n.
- bit_or, <<, FILTER, named structs: same in DuckDB.
- wxlake_rolling_sums (accuracy_trends; src/jobs/rolling_sums.rs, a function of wxlake's,
  which the issue allows where DataFusion lacks an operator): DuckDB has no such function,
  so its port spreads each pair over the 7 days whose span holds it and groups the copies,
  which is what the function computes and what wxlake's SQL did before it (session 38).
- Hive partition columns: strings (run_date, nws_hourly date) except the DATE `date`
  partitions of the derived tables, as in wxlake sessions.
"""

import argparse
import hashlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
import tomllib

import duckdb
from lake_files import duck_list, snapshot_files
from quiet import require_quiet, spread

STEPS = ["accuracy_pairs", "model_accuracy", "accuracy_trends", "accuracy_daily_detail"]

# SHA-256 of the sql/*.sql files this port follows: a mismatch means the jobs' SQL changed
# since and the port (below) needs the same change, or the results will differ.
PORTED_SQL = {
    "accuracy_pairs": "a8647d51b139389c278f280904bee48f6e9bb28abb8e50057675e4c875ac2d6e",
    "model_accuracy": "d915dc5ff75958ad25293eb6598a5962ea591d428acef9bf6173777960aae946",
    "accuracy_trends": "043e3ee468249d51eb519d742777cd244e685b74e7124db49131c468bc52fa6e",
    "accuracy_daily_detail": "9404b9927c7002180d104dacae3bda883aca91030754345b7afded3191721175",
}
SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sql")


def sql_hashes():
    out = {}
    for step in STEPS:
        with open(os.path.join(SQL_DIR, f"{step}.sql"), "rb") as f:
            out[step] = hashlib.sha256(f.read()).hexdigest()
    return out

INPUT_VIEWS = """
SET TimeZone = 'UTC';
CREATE OR REPLACE TEMP TABLE stations AS SELECT * FROM read_parquet('{h}/stations.parquet');
CREATE OR REPLACE TEMP VIEW forecast_daily AS
SELECT * FROM read_parquet({forecast_daily}, hive_partitioning = true,
                           hive_types = {{'run_date': VARCHAR}});
CREATE OR REPLACE TEMP VIEW daily_extremes AS
SELECT * FROM read_parquet({daily_extremes}, hive_partitioning = true,
                           hive_types = {{'date': DATE}});
CREATE OR REPLACE TEMP VIEW nws_hourly AS
SELECT * FROM read_parquet({nws_hourly}, hive_partitioning = true,
                           hive_types = {{'date': VARCHAR}});
CREATE OR REPLACE TEMP VIEW reports AS
SELECT * FROM read_parquet({reports}, hive_partitioning = true,
                           hive_types = {{'kind': VARCHAR}});
CREATE OR REPLACE TEMP VIEW observations AS
SELECT * FROM read_parquet({observations}, hive_partitioning = true,
                           hive_types = {{'date': VARCHAR}});
CREATE OR REPLACE TEMP VIEW onemin AS
SELECT * FROM read_parquet({onemin}, hive_partitioning = true,
                           hive_types = {{'date': VARCHAR}});
"""

# The readings' known times of sql/accuracy_pairs.sql, one table per input (joined, not
# stacked: see the SQL); {table} is observations or onemin, {{frm}} / {{to}} as below.
READINGS_KNOWN = """
CREATE OR REPLACE TEMP TABLE ap_{table}_known AS
SELECT b.station_code,
       DATE '1970-01-01' + CAST(floor((epoch(b.bucket) + 60 * s.standard_offset_minutes + x.shift) / 86400) AS INT) AS date,
       max(b.known_at) AS known_at
FROM (
    SELECT station_code, time_bucket(INTERVAL '15 minutes', observation_time) AS bucket, max(available_at) AS known_at
    FROM {table}
    WHERE date BETWEEN CAST({{frm}} - 1 AS VARCHAR) AND CAST({{to}} + 2 AS VARCHAR)
    GROUP BY 1, 2
) b
JOIN stations s ON s.station_code = b.station_code
CROSS JOIN (VALUES (-7200), (25200)) AS x(shift)
GROUP BY 1, 2;

"""

# sql/accuracy_pairs.sql; {frm} / {to} are DATE literals. Leaves the chunk's rows in
# the temp table ap_out (appended to, so chunks accumulate).
PAIRS_SQL = """
CREATE OR REPLACE TEMP TABLE ap_observed AS
SELECT
    station_code,
    date,
    COALESCE(cli_high, high) AS observed_high,
    CASE WHEN cli_high IS NOT NULL THEN 'cli' ELSE high_source END AS high_source,
    COALESCE(cli_low, low) AS observed_low,
    CASE WHEN cli_low IS NOT NULL THEN 'cli' ELSE low_source END AS low_source
FROM daily_extremes
WHERE logic = 'nws'
  AND day_complete
  AND (cli_high IS NOT NULL OR cli_low IS NOT NULL OR observations >= 20)
  AND date BETWEEN {frm} AND {to};

CREATE OR REPLACE TEMP TABLE ap_reports_known AS
SELECT
    station_code,
    report_date AS date,
    max(CASE WHEN kind = 'cli' THEN available_at END) AS cli_at,
    max(CASE WHEN kind = 'dsm' THEN available_at END) AS dsm_at
FROM reports
WHERE report_date BETWEEN {frm} AND {to}
GROUP BY station_code, report_date;

""" + "".join(READINGS_KNOWN.format(table=t) for t in ("observations", "onemin")) + """CREATE OR REPLACE TEMP TABLE ap_verified AS
SELECT
    o.*,
    CASE WHEN o.high_source = 'cli' THEN c.cli_at ELSE greatest(r.known_at, m.known_at, c.dsm_at) END AS high_known_at,
    CASE WHEN o.low_source = 'cli' THEN c.cli_at ELSE greatest(r.known_at, m.known_at, c.dsm_at) END AS low_known_at
FROM ap_observed o
LEFT JOIN ap_reports_known c ON c.station_code = o.station_code AND c.date = o.date
LEFT JOIN ap_observations_known r ON r.station_code = o.station_code AND r.date = o.date
LEFT JOIN ap_onemin_known m ON m.station_code = o.station_code AND m.date = o.date;

CREATE OR REPLACE TEMP TABLE ap_runs AS
SELECT
    f.model,
    f.location_name AS station_code,
    f.date,
    f.run_time,
    lpad(CAST(CAST(hour(f.run_time) AS INT) AS VARCHAR), 2, '0') || 'z' AS run_label,
    CASE WHEN s.units = 'fahrenheit' THEN f.high_f ELSE f.high_c END AS forecast_high,
    CASE WHEN s.units = 'fahrenheit' THEN f.low_f ELSE f.low_c END AS forecast_low,
    epoch(CAST(f.date AS TIMESTAMP)) - 60 * s.standard_offset_minutes AS day_start,
    f.available_at
FROM forecast_daily f
JOIN stations s ON s.station_code = f.location_name
WHERE f.tz_mode = 'standard'
  AND f.date BETWEEN {frm} AND {to}
  AND f.run_date >= CAST({frm} - 20 AS VARCHAR)
  AND f.run_date <= CAST({to} AS VARCHAR)
UNION ALL
SELECT
    'NWS' AS model,
    station_code,
    DATE '1970-01-01' + day_num AS date,
    run_time,
    lpad(CAST(CAST(6 * floor(hour(run_time) / 6) AS INT) AS VARCHAR), 2, '0') || 'z' AS run_label,
    CASE WHEN units = 'fahrenheit' THEN max_f ELSE round((max_f - 32) * 5 / 9, 1) END AS forecast_high,
    CASE WHEN units = 'fahrenheit' THEN min_f ELSE round((min_f - 32) * 5 / 9, 1) END AS forecast_low,
    86400.0 * day_num - 60 * standard_offset_minutes AS day_start,
    available_at
FROM (
    SELECT
        n.station_code,
        s.units,
        s.standard_offset_minutes,
        CAST(floor((epoch(n.start_time) + 60 * s.standard_offset_minutes) / 86400) AS INT) AS day_num,
        n.generated_at AS run_time,
        max(n.temperature_f) AS max_f,
        min(n.temperature_f) AS min_f,
        count(*) AS hours,
        max(n.available_at) AS available_at
    FROM nws_hourly n
    JOIN stations s ON s.station_code = n.station_code
    WHERE n.date >= CAST({frm} - 8 AS VARCHAR)
      AND n.date <= CAST({to} AS VARCHAR)
    GROUP BY 1, 2, 3, 4, 5
) v
WHERE hours = 24
  AND DATE '1970-01-01' + day_num BETWEEN {frm} AND {to}
  AND epoch(run_time) < 86400.0 * day_num - 60 * standard_offset_minutes;

CREATE OR REPLACE TEMP TABLE ap_runs_n AS
SELECT *, CAST(ceil((day_start - epoch(run_time)) / 86400.0) AS INT) AS natural_lead
FROM ap_runs;

CREATE OR REPLACE TEMP TABLE ap_newest AS
SELECT
    model, station_code, run_label, date,
    max(run_time) FILTER (WHERE natural_lead = 0) AS run_0,
    max(run_time) FILTER (WHERE natural_lead >= 1) AS run_1,
    max(run_time) FILTER (WHERE natural_lead >= 2) AS run_2,
    max(run_time) FILTER (WHERE natural_lead >= 3) AS run_3
FROM ap_runs_n
GROUP BY model, station_code, run_label, date;

CREATE OR REPLACE TEMP TABLE ap_leads AS
SELECT r.*, c.lead_days
FROM (
    SELECT model, station_code, run_label, date, 0 AS lead_days, run_0 AS run_time FROM ap_newest WHERE run_0 IS NOT NULL
    UNION ALL
    SELECT model, station_code, run_label, date, 1, run_1 FROM ap_newest WHERE run_1 IS NOT NULL
    UNION ALL
    SELECT model, station_code, run_label, date, 2, run_2 FROM ap_newest WHERE run_2 IS NOT NULL
    UNION ALL
    SELECT model, station_code, run_label, date, 3, run_3 FROM ap_newest WHERE run_3 IS NOT NULL
) c
JOIN ap_runs_n r
  ON r.model = c.model AND r.station_code = c.station_code AND r.run_label = c.run_label
 AND r.date = c.date AND r.run_time = c.run_time;

INSERT INTO ap_out
SELECT
    l.station_code, l.date, l.model, l.run_label, l.run_time, l.lead_days,
    'high' AS target, l.forecast_high AS forecast, o.observed_high AS observed,
    o.observed_high - l.forecast_high AS error, o.high_source AS observed_source,
    CASE WHEN l.available_at IS NOT NULL AND o.high_known_at IS NOT NULL
         THEN greatest(l.available_at, o.high_known_at) END AS available_at
FROM ap_leads l
JOIN ap_verified o ON o.station_code = l.station_code AND o.date = l.date
WHERE l.forecast_high IS NOT NULL AND o.observed_high IS NOT NULL
UNION ALL
SELECT
    l.station_code, l.date, l.model, l.run_label, l.run_time, l.lead_days,
    'low' AS target, l.forecast_low AS forecast, o.observed_low AS observed,
    o.observed_low - l.forecast_low AS error, o.low_source AS observed_source,
    CASE WHEN l.available_at IS NOT NULL AND o.low_known_at IS NOT NULL
         THEN greatest(l.available_at, o.low_known_at) END AS available_at
FROM ap_leads l
JOIN ap_verified o ON o.station_code = l.station_code AND o.date = l.date
WHERE l.forecast_low IS NOT NULL AND o.observed_low IS NOT NULL;
"""

PAIRS_OUT = """
CREATE OR REPLACE TEMP TABLE ap_out (
    station_code VARCHAR, date DATE, model VARCHAR, run_label VARCHAR, run_time TIMESTAMPTZ,
    lead_days INTEGER, target VARCHAR, forecast DOUBLE, observed DOUBLE, error DOUBLE,
    observed_source VARCHAR, available_at TIMESTAMPTZ);
"""

PAIRS_COPY = """
COPY (SELECT * FROM ap_out ORDER BY date, station_code, lead_days, target, model, run_label)
TO '{out}' (FORMAT parquet, PARTITION_BY (date), COMPRESSION snappy, OVERWRITE_OR_IGNORE);
"""

PAIRS_VIEW = """
CREATE OR REPLACE TEMP VIEW accuracy_pairs AS
SELECT * FROM read_parquet('{pairs}/*/*.parquet', hive_partitioning = true, hive_types = {{'date': DATE}});
"""

# sql/model_accuracy.sql
MODEL_ACCURACY_SQL = """
CREATE OR REPLACE TEMP TABLE ma_days AS
SELECT a.station_code, a.as_of - CAST(d.k AS INTEGER) AS date, a.as_of, d.k AS age
FROM (SELECT station_code, max(date) AS as_of FROM accuracy_pairs WHERE lead_days >= 1 GROUP BY station_code) a
CROSS JOIN range(0, 90) d(k);

CREATE OR REPLACE TEMP TABLE ma_runs AS
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

CREATE OR REPLACE TEMP TABLE ma_models AS
SELECT
    station_code, window_name, window_days, as_of, lead_days, target, model,
    CAST(sum(n) AS BIGINT) AS n, sum(sum_error) AS sum_error, sum(sum_abs_error) AS sum_abs_error,
    sum(sum_sq_error) AS sum_sq_error, bit_or(day_bits_lo) AS day_bits_lo, bit_or(day_bits_hi) AS day_bits_hi
FROM ma_runs
GROUP BY station_code, window_name, window_days, as_of, lead_days, target, model;

COPY (
SELECT * FROM (
SELECT
    station_code, window_name AS "window", CAST(window_days AS INTEGER) AS window_days, as_of,
    CAST(lead_days AS INTEGER) AS lead_days, target, scope, model, run_label, CAST(n AS BIGINT) AS n,
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
           CAST(sum(n) AS BIGINT), sum(sum_error), sum(sum_abs_error), sum(sum_sq_error),
           bit_or(day_bits_lo), bit_or(day_bits_hi)
    FROM ma_models
    GROUP BY station_code, window_name, window_days, as_of, lead_days, target
)) ORDER BY station_code, window_days, lead_days, target, scope, model, run_label
) TO '{out}' (FORMAT parquet, PARTITION_BY (station_code), COMPRESSION snappy, OVERWRITE_OR_IGNORE);
"""

# sql/accuracy_trends.sql (its rolling sums spread and grouped: see the porting notes)
TRENDS_SQL = """
CREATE OR REPLACE TEMP TABLE at_days AS
SELECT a.station_code, DATE '1970-01-01' + CAST(a.as_of - d.k AS INTEGER) AS date, a.as_of
FROM (SELECT station_code, max(date) - DATE '1970-01-01' AS as_of FROM accuracy_pairs WHERE lead_days >= 1 GROUP BY station_code) a
CROSS JOIN range(0, 96) d(k);

CREATE OR REPLACE TEMP TABLE at_runs AS
SELECT
    p.station_code, p.lead_days, p.target, p.model, p.run_label, p.day + o.k AS day,
    count(*) AS n,
    sum(p.e) AS sum_error,
    sum(p.ae) AS sum_abs_error,
    sum(p.se) AS sum_sq_error
FROM (
    SELECT p.station_code, p.lead_days, p.target, p.model, p.run_label, p.date - DATE '1970-01-01' AS day, a.as_of,
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

COPY (
SELECT * FROM (
SELECT
    station_code, CAST(lead_days AS INTEGER) AS lead_days, target, scope, model, run_label,
    DATE '1970-01-01' + CAST(day AS INTEGER) AS date, CAST(n AS BIGINT) AS n,
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
           CAST(sum(n) AS BIGINT), sum(sum_error), sum(sum_abs_error), sum(sum_sq_error)
    FROM at_runs
    GROUP BY station_code, lead_days, target, model, day
)) ORDER BY station_code, lead_days, target, model, scope, run_label, date
) TO '{out}' (FORMAT parquet, PARTITION_BY (station_code), COMPRESSION snappy, OVERWRITE_OR_IGNORE);
"""

# sql/accuracy_daily_detail.sql
DETAIL_SQL = """
CREATE OR REPLACE TEMP TABLE dd_days AS
SELECT a.station_code, a.as_of - CAST(d.k AS INTEGER) AS date
FROM (SELECT station_code, max(date) AS as_of FROM accuracy_pairs WHERE lead_days >= 1 GROUP BY station_code) a
CROSS JOIN range(0, 30) d(k);

COPY (
SELECT
    p.station_code, p.date, p.lead_days, p.target, p.model, p.run_label, p.run_time,
    p.forecast, p.observed, p.observed_source, now() AS computed_at
FROM accuracy_pairs p
JOIN dd_days d ON d.station_code = p.station_code AND d.date = p.date
WHERE p.lead_days >= 1
ORDER BY p.station_code, p.lead_days, p.target, p.date, p.model, p.run_label
) TO '{out}' (FORMAT parquet, PARTITION_BY (station_code), COMPRESSION snappy, OVERWRITE_OR_IGNORE);
"""


def lit(d):
    return f"DATE '{d}'"


def pairs_chunk_days():
    """accuracy_pairs' chunk size, as jobs/accuracy_pairs.toml declares it."""
    with open(os.path.join(SQL_DIR, "..", "jobs", "accuracy_pairs.toml"), "rb") as f:
        return tomllib.load(f)["incremental"]["chunk_days"]


def chunks(first, last, days):
    """[first, last] in `days`-day pieces (days <= 0: one piece), as wxlake splits it."""
    if days <= 0:
        return [(first, last)]
    import datetime as dt
    a, end, out = dt.date.fromisoformat(first), dt.date.fromisoformat(last), []
    while a <= end:
        b = min(a + dt.timedelta(days=days - 1), end)
        out.append((a.isoformat(), b.isoformat()))
        a = b + dt.timedelta(days=1)
    return out


def count_rows(con, files):
    """Rows of a glob (a directory an engine wrote) or of a lake table (its current files)."""
    source = f"'{files}'" if "*" in files else duck_list(files)
    return con.execute(f"SELECT count(*) FROM read_parquet({source})").fetchone()[0]


def duck_step(step, lake, helpers, out_root, pair_chunks):
    out = f"{out_root}/{step}"
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out_root, exist_ok=True)
    con = duckdb.connect()
    con.execute(INPUT_VIEWS.format(h=helpers, forecast_daily=duck_list(f"{lake}/derived/forecast_daily"),
                                   daily_extremes=duck_list(f"{lake}/derived/daily_extremes"),
                                   nws_hourly=duck_list(f"{lake}/nws_hourly"),
                                   reports=duck_list(f"{lake}/reports"),
                                   observations=duck_list(f"{lake}/observations"),
                                   onemin=duck_list(f"{lake}/onemin")))
    if step == "accuracy_pairs":
        con.execute(PAIRS_OUT)
        for a, b in pair_chunks:
            con.execute(PAIRS_SQL.format(frm=lit(a), to=lit(b)))
        con.execute(PAIRS_COPY.format(out=out))
        rows = con.execute("SELECT count(*) FROM ap_out").fetchone()[0]
    else:
        con.execute(PAIRS_VIEW.format(pairs=f"{out_root}/accuracy_pairs"))
        sql = {"model_accuracy": MODEL_ACCURACY_SQL, "accuracy_trends": TRENDS_SQL,
               "accuracy_daily_detail": DETAIL_SQL}[step]
        con.execute(sql.format(out=out))
        rows = None
    con.close()
    return rows


def wx_step(jobs_cmd, lake, step):
    cmd = shlex.split(jobs_cmd)
    # `wxlake jobs` takes --lake before `jobs`; a shim takes it first.
    cmd = cmd[:1] + ["--lake", f"file://{lake}"] + cmd[1:] + ["run", step, "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"wxlake {step} failed ({r.returncode}): {r.stderr}")
    try:
        runs = json.loads(r.stdout)
        return sum(x["rows"] for x in runs)
    except (ValueError, KeyError, TypeError):
        return None


def timed(fn):
    t0 = time.perf_counter()
    v = fn()
    return time.perf_counter() - t0, v


# Per table: hive partition type, key columns (unique per row), columns compared exactly, float columns
# compared within 1e-9 x max(|a|, |b|, 1) (sums in another order differ in the last bits).
# computed_at (now()) is not compared.
TABLES = {
    "accuracy_pairs": ("{'date': DATE}",
                       ["station_code", "date", "model", "run_label", "lead_days", "target"],
                       ["run_time", "observed_source", "available_at"], ["forecast", "observed", "error"]),
    "model_accuracy": ("{'station_code': VARCHAR}",
                       ["station_code", "window", "lead_days", "target", "scope", "model", "run_label"],
                       ["window_days", "as_of", "n", "day_bits_lo", "day_bits_hi"],
                       ["sum_error", "sum_abs_error", "sum_sq_error", "mae", "bias", "rmse"]),
    "accuracy_trends": ("{'station_code': VARCHAR}",
                        ["station_code", "lead_days", "target", "scope", "model", "run_label", "date"],
                        ["n"], ["sum_error", "sum_abs_error", "sum_sq_error", "mae_7d", "bias_7d"]),
    "accuracy_daily_detail": ("{'station_code': VARCHAR}",
                              ["station_code", "date", "lead_days", "target", "model", "run_label"],
                              ["run_time", "observed_source"], ["forecast", "observed"]),
}


def q(c):
    return f'"{c}"'


def compare(table, wx_dir, duck_dir, examples=5):
    """Full outer join of both results on the key; returns a dict of counts and examples."""
    types, key, exact, floats = TABLES[table]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    # wxlake's output is a Delta table (its current files); DuckDB's a directory it wrote.
    for name, files in (("w", duck_list(wx_dir)), ("d", f"'{duck_dir}/*/*.parquet'")):
        con.execute(f"CREATE TEMP VIEW {name} AS SELECT * FROM read_parquet({files}, "
                    f"hive_partitioning = true, hive_types = {types})")
    res = {"wx_rows": con.execute("SELECT count(*) FROM w").fetchone()[0],
           "duck_rows": con.execute("SELECT count(*) FROM d").fetchone()[0]}
    dup = {}
    for name in ("w", "d"):
        dup[name] = con.execute(
            f"SELECT count(*) FROM (SELECT {', '.join(map(q, key))} FROM {name} GROUP BY ALL HAVING count(*) > 1)"
        ).fetchone()[0]
    res["dup_keys"] = (dup["w"], dup["d"])
    on = " AND ".join(f"w.{q(k)} IS NOT DISTINCT FROM d.{q(k)}" for k in key)
    diff = " OR ".join(
        [f"w.{q(c)} IS DISTINCT FROM d.{q(c)}" for c in exact]
        + [f"NOT (w.{q(c)} IS NOT DISTINCT FROM d.{q(c)} OR abs(w.{q(c)} - d.{q(c)}) "
           f"<= 1e-9 * greatest(abs(w.{q(c)}), abs(d.{q(c)}), 1))" for c in floats])
    con.execute(f"""CREATE TEMP TABLE j AS
        SELECT {', '.join(f'COALESCE(w.{q(k)}, d.{q(k)}) AS {q(k)}' for k in key)},
               w.{q(key[0])} IS NOT NULL AS in_w, d.{q(key[0])} IS NOT NULL AS in_d,
               {', '.join(f'w.{q(c)} AS {q("w_" + c)}, d.{q(c)} AS {q("d_" + c)}' for c in exact + floats)},
               CASE WHEN w.{q(key[0])} IS NOT NULL AND d.{q(key[0])} IS NOT NULL THEN ({diff}) ELSE false END AS differs
        FROM w FULL OUTER JOIN d ON {on}""")
    res["only_wx"], res["only_duck"], res["differ"] = con.execute(
        "SELECT count(*) FILTER (WHERE in_w AND NOT in_d), count(*) FILTER (WHERE in_d AND NOT in_w), "
        "count(*) FILTER (WHERE differs) FROM j").fetchone()
    order = ", ".join(map(q, key))
    res["examples"] = {}
    for label, cond in (("only in wxlake", "in_w AND NOT in_d"), ("only in DuckDB", "in_d AND NOT in_w"),
                        ("values differ", "differs")):
        # As text: fetching TIMESTAMPTZ values into Python would need pytz.
        cols = [r[0] for r in con.execute("DESCRIBE j").fetchall()]
        text = ", ".join(f"CAST({q(c)} AS VARCHAR) AS {q(c)}" for c in cols)
        rel = con.execute(f"SELECT {text} FROM j WHERE {cond} ORDER BY {order} LIMIT {examples}")
        cols = [c[0] for c in rel.description]
        rows = rel.fetchall()
        if rows:
            res["examples"][label] = [
                {c: v for c, v in zip(cols, r) if c not in ("in_w", "in_d", "differs")
                 and (label == "values differ" or not c.startswith(("w_", "d_")))} for r in rows]
    # Where missing rows concentrate (by model and by date), the quickest clue to a cause.
    res["breakdown"] = {}
    if res["only_wx"] or res["only_duck"]:
        for col in ("model", "date", "lead_days"):
            if col in key:
                res["breakdown"][col] = con.execute(
                    f"SELECT CAST({q(col)} AS VARCHAR), count(*) FILTER (WHERE in_w AND NOT in_d) AS only_wx, "
                    f"count(*) FILTER (WHERE in_d AND NOT in_w) AS only_duck FROM j "
                    f"GROUP BY 1 HAVING only_wx + only_duck > 0 ORDER BY only_wx + only_duck DESC LIMIT 8"
                ).fetchall()
    con.close()
    return res


def lake_stats(lake):
    """Rows, days, stations, models and bytes of the inputs, at each table's current version."""
    con = duckdb.connect()
    out = {}
    tables = ("derived/forecast_daily", "derived/daily_extremes", "nws_hourly")
    for t in tables:
        out[t.rsplit("/", 1)[-1]] = count_rows(con, f"{lake}/{t}")
    extremes = snapshot_files(f"{lake}/derived/daily_extremes")
    dates = sorted({p.split("/date=", 1)[1].split("/", 1)[0] for p in extremes if "/date=" in p})
    stations = con.execute(
        f"SELECT count(DISTINCT station_code) FROM read_parquet({duck_list(lake + '/derived/daily_extremes')})"
    ).fetchone()[0]
    models = con.execute(
        f"SELECT count(DISTINCT model) FROM read_parquet({duck_list(lake + '/derived/forecast_daily')}, "
        f"hive_partitioning = true)").fetchone()[0]
    size = sum(os.path.getsize(f) for t in tables for f in snapshot_files(f"{lake}/{t}"))
    con.close()
    return out, dates, stations, models, size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lake", required=True)
    ap.add_argument("--helpers", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs-cmd", required=True)
    ap.add_argument("--force", action="store_true", help="time even if the machine or the lake is not quiet")
    ap.add_argument("--duck-chunk-days", type=int, default=0,
                    help="DuckDB accuracy_pairs in chunks of this many days as wxlake does (0: one go)")
    a = ap.parse_args()

    hashes = sql_hashes()
    stale = [k for k, v in hashes.items() if PORTED_SQL[k] != v]
    if stale:
        print(f"WARNING: sql/{{{','.join(stale)}}}.sql changed since the DuckDB port was written: "
              "port the change into benches/accuracy.py (and update PORTED_SQL) or expect differences")
    rows, dates, n_st, n_models, size = lake_stats(a.lake)
    if not dates:
        sys.exit("no daily_extremes partitions in the lake")
    print(f"lake: {a.lake}")
    print(f"  {len(dates)} daily_extremes days ({dates[0]}..{dates[-1]}), {n_st} stations, {n_models} models; "
          f"inputs {size / 1e6:.0f} MB")
    print("  " + ", ".join(f"{k} {v:,} rows" for k, v in rows.items()))
    pair_chunks = chunks(dates[0], dates[-1], a.duck_chunk_days)
    wx_chunk = pairs_chunk_days()
    print(f"wxlake accuracy_pairs: full run in {wx_chunk}-day chunks ({len(chunks(dates[0], dates[-1], wx_chunk))}); "
          f"DuckDB accuracy_pairs: "
          + ("full range in one go" if a.duck_chunk_days <= 0
             else f"{len(pair_chunks)} chunks of {a.duck_chunk_days} days")
          + f" ({dates[0]}..{dates[-1]})")
    print(f"cores: {os.cpu_count()}, runs per engine: {a.repeat}, DuckDB {duckdb.__version__}", flush=True)

    engines = {"wxlake": {s: [] for s in STEPS}, "duckdb": {s: [] for s in STEPS}}
    rowcounts = {"wxlake": {}, "duckdb": {}}
    duck_out = f"{a.work}/duckdb"
    # The engines alternate (wxlake's four steps, then DuckDB's, --repeat times), so a
    # change in machine load hits both alike.
    require_quiet(a.lake, a.force)
    for i in range(a.repeat):
        for s in STEPS:
            t, n = timed(lambda: wx_step(a.jobs_cmd, a.lake, s))
            engines["wxlake"][s].append(t)
            rowcounts["wxlake"][s] = n
        print(f"  wxlake run {i + 1}: " + ", ".join(f"{s} {engines['wxlake'][s][-1]:.2f}s" for s in STEPS),
              flush=True)
        for s in STEPS:
            t, n = timed(lambda: duck_step(s, a.lake, a.helpers, duck_out, pair_chunks))
            engines["duckdb"][s].append(t)
            if n is not None:
                rowcounts["duckdb"][s] = n
        print(f"  DuckDB run {i + 1}: " + ", ".join(f"{s} {engines['duckdb'][s][-1]:.2f}s" for s in STEPS),
              flush=True)
    con = duckdb.connect()
    for s in STEPS[1:]:
        rowcounts["duckdb"][s] = count_rows(con, f"{duck_out}/{s}/*/*.parquet")
    con.close()

    if sql_hashes() != hashes:
        print("WARNING: sql/*.sql changed during the run: the wxlake runs used different SQL")

    # Comparison.
    ok = True
    print("\nresult check (join on each table's key; floats within 1e-9 x max(|a|,|b|,1); computed_at ignored):")
    for s in STEPS:
        r = compare(s, f"{a.lake}/derived/{s}", f"{duck_out}/{s}")
        same = r["only_wx"] == 0 and r["only_duck"] == 0 and r["differ"] == 0 and r["dup_keys"] == (0, 0)
        ok &= same
        print(f"  {s}: wxlake {r['wx_rows']:,} rows, DuckDB {r['duck_rows']:,} rows; "
              f"{r['only_wx']} only in wxlake, {r['only_duck']} only in DuckDB, {r['differ']} with different "
              f"values, duplicate keys {r['dup_keys'][0]}/{r['dup_keys'][1]}: {'identical' if same else 'DIFFERENT'}")
        for label, ex in r["examples"].items():
            print(f"    {label}:")
            for e in ex:
                print("      " + ", ".join(f"{k}={v}" for k, v in e.items()))
        for col, b in r["breakdown"].items():
            print(f"    by {col} (value, only wxlake, only DuckDB): {b}")

    # Summary.
    print(f"\n{'engine':<22}{'step':<24}{'best s':>9}{'median s':>10}{'rows':>14}")
    for eng, label in (("wxlake", "wxlake (DataFusion)"), ("duckdb", f"DuckDB {duckdb.__version__}")):
        for s in STEPS:
            t = engines[eng][s]
            n = rowcounts[eng].get(s)
            print(f"{label:<22}{s:<24}{min(t):>9.2f}{statistics.median(t):>10.2f}"
                  f"{(f'{n:,}' if n is not None else '?'):>14}")
        totals = [sum(engines[eng][s][i] for s in STEPS) for i in range(a.repeat)]
        print(f"{label:<22}{'total':<24}{min(totals):>9.2f}{statistics.median(totals):>10.2f}"
              f"   {spread(totals)}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
