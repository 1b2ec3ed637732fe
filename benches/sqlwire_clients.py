#!/usr/bin/env python3
"""Analyst SQL figures (benches/README.md, "Analyst SQL over the wire").

Against a running `wxlake serve --pg-addr 127.0.0.1:5433 --flight-addr 127.0.0.1:50051`
(release build, a demo lake with enough forecast rows) and the same lake's Parquet files:

1. Flight SQL, N rows x 5 columns of `forecasts` into a pyarrow Table, vs DuckDB reading
   the same Parquet files in process into Arrow (the bar an analyst compares with).
2. pgwire, 1 M rows into pandas (psycopg).
3. Time to first row of a selective query (one station, one day), both protocols.
4. REST latency (`mode=latest`) idle vs while a heavy analyst query runs.

Usage: .ci/venv/bin/python benches/sqlwire_clients.py KEY LAKE_DIR [ROWS]
(pip install duckdb into the venv first).
"""
import statistics, sys, threading, time, urllib.request

import adbc_driver_flightsql.dbapi as flight_sql
import duckdb
import pandas as pd
import psycopg

KEY, LAKE = sys.argv[1], sys.argv[2]
ROWS = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000_000
COLS = "location_name, valid_time, forecast_hour, temperature_f, dew_point_f"
FLIGHT, PG, REST = "grpc://127.0.0.1:50051", dict(host="127.0.0.1", port=5433), "http://127.0.0.1:8080"


def flight():
    return flight_sql.connect(FLIGHT, db_kwargs={"adbc.flight.sql.authorization_header": f"Bearer {KEY}"})


def timed(f, n=1):
    best = None
    for _ in range(n):
        t = time.perf_counter()
        out = f()
        d = time.perf_counter() - t
        best = d if best is None else min(best, d)
    return best, out


def flight_rows():
    with flight() as c:
        cur = c.cursor()
        cur.execute(f"SELECT {COLS} FROM forecasts LIMIT {ROWS}")
        return cur.fetch_arrow_table().num_rows


def duckdb_rows():
    q = f"SELECT {COLS} FROM read_parquet('{LAKE}/forecasts/**/*.parquet', hive_partitioning = true) LIMIT {ROWS}"
    out = duckdb.sql(q).arrow()
    # DuckDB 2 returns a RecordBatchReader here, 1.x a Table.
    return (out.read_all() if hasattr(out, "read_all") else out).num_rows


def pg_rows(n):
    with psycopg.connect(**PG, user="bench", password=KEY, dbname="wxlake") as c:
        return len(pd.read_sql(f"SELECT {COLS} FROM forecasts LIMIT {n}", c))


def first_row_ms():
    q = "SELECT * FROM observations WHERE station_code = 'KNYC' AND date = (SELECT max(date) FROM observations)"
    out = {}
    with flight() as c:
        cur = c.cursor()
        samples = []
        for _ in range(20):
            t = time.perf_counter()
            cur.execute(q)
            cur.fetchone()
            samples.append((time.perf_counter() - t) * 1000)
        out["flight"] = statistics.median(samples)
    with psycopg.connect(**PG, user="bench", password=KEY, dbname="wxlake") as c:
        samples = []
        for _ in range(20):
            t = time.perf_counter()
            c.execute(q).fetchone()
            samples.append((time.perf_counter() - t) * 1000)
        out["pgwire"] = statistics.median(samples)
    return out


def rest_latency_ms(n=100):
    req = urllib.request.Request(f"{REST}/api/v2/observations.php?station_code=KNYC&mode=latest",
                                 headers={"Authorization": f"Bearer {KEY}"})
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        urllib.request.urlopen(req).read()
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(n * 0.95) - 1]


def heavy():
    with flight() as c:
        cur = c.cursor()
        cur.execute("SELECT location_name, model, avg(temperature_f), max(temperature_f) FROM forecasts "
                    "GROUP BY location_name, model ORDER BY 3 DESC")
        cur.fetch_arrow_table()


if __name__ == "__main__":
    # Each side once untimed (the page cache, DuckDB's extension load, the server's caches),
    # then the best of five, alternating so a background blip hits both.
    flight_rows(), duckdb_rows()
    tf, td = float("inf"), float("inf")
    for _ in range(5):
        t, n = timed(flight_rows)
        tf = min(tf, t)
        t, m = timed(duckdb_rows)
        td = min(td, t)
    print(f"Flight SQL -> pyarrow: {n:,} rows x 5 in {tf:.2f} s ({n / tf / 1e6:.2f} M rows/s)")
    print(f"DuckDB in process   : {m:,} rows x 5 in {td:.2f} s ({m / td / 1e6:.2f} M rows/s); Flight/DuckDB = {td / tf:.0%}")
    tp, k = timed(lambda: pg_rows(1_000_000), 3)
    print(f"pgwire -> pandas    : {k:,} rows x 5 in {tp:.2f} s ({k / tp / 1e6:.2f} M rows/s)")
    print("time to first row (median of 20, ms):", first_row_ms())
    idle = rest_latency_ms()
    t = threading.Thread(target=lambda: [heavy() for _ in range(3)])
    t.start()
    time.sleep(0.5)
    busy = rest_latency_ms()
    t.join()
    print(f"REST latest p50/p95 idle {idle[0]:.2f}/{idle[1]:.2f} ms, during a heavy query {busy[0]:.2f}/{busy[1]:.2f} ms "
          f"(p50 x{busy[0] / idle[0]:.2f})")
