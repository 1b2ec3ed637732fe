#!/usr/bin/env python3
"""What the PostgreSQL-compatibility layer (issue 30: statement rewrites, column names,
column origins, cursors) costs a query on the wire, measured as two servers' ratio in one
run: a release binary from before that layer and one from after, over the same lake,
one at a time, alternated.

Per server: the median time to first row of a one-station, one-day query of
`observations` over 30 runs, with the simple protocol (psql's) and with the extended one
(psycopg with a parameter, pgjdbc's and SQLAlchemy's path); and 1 M rows x 5 columns of
`forecasts` into pandas, best of 3.

Usage: .ci/venv/bin/python -W ignore benches/pgwire_compat.py BEFORE_BIN AFTER_BIN LAKE_DIR [ROUNDS]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import pandas as pd
import psycopg

BEFORE, AFTER, LAKE = sys.argv[1], sys.argv[2], sys.argv[3]
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 2
PORT = 5441
COLS = "station_code, observation_time, temperature, dew_point, raw"
MILLION = "SELECT location_name, valid_time, forecast_hour, temperature_f, dew_point_f FROM forecasts LIMIT 1000000"


def key(binary):
    out = subprocess.run([binary, "--lake", f"file://{LAKE}", "keys", "create", "--tier", "enterprise",
                          "--user", "bench", "--admin"], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def start(binary):
    log = tempfile.NamedTemporaryFile(delete=False)
    srv = subprocess.Popen([binary, "--lake", f"file://{LAKE}", "serve", "--addr", "127.0.0.1:8099",
                            "--pg-addr", f"127.0.0.1:{PORT}"], stdout=log, stderr=log)
    for _ in range(120):
        try:
            psycopg.connect(host="127.0.0.1", port=PORT, user="b", password="x", dbname="wxlake",
                            connect_timeout=1).close()
        except psycopg.OperationalError as e:
            if "password" in str(e) or "key" in str(e).lower():
                break
        time.sleep(0.5)
    # Let the startup work (scheduled job runs) finish: under 5 % of a core over 3 s.
    def ticks():
        fields = open(f"/proc/{srv.pid}/stat").read().split(")")[-1].split()
        return int(fields[11]) + int(fields[12])
    for _ in range(60):
        a = ticks()
        time.sleep(3)
        if ticks() - a < 15:
            break
    return srv


def measure(k):
    conn = psycopg.connect(host="127.0.0.1", port=PORT, user="bench", password=k, dbname="wxlake", autocommit=True)
    day = conn.execute("SELECT max(date) FROM observations").fetchone()[0]
    simple, extended = [], []
    for _ in range(30):
        t = time.perf_counter()
        conn.pgconn.send_query(f"SELECT {COLS} FROM observations WHERE station_code = 'KNYC' AND date = '{day}'".encode())
        while conn.pgconn.get_result() is not None:
            pass
        simple.append(time.perf_counter() - t)
        t = time.perf_counter()
        conn.execute(f"SELECT {COLS} FROM observations WHERE station_code = %s AND date = %s", ("KNYC", day)).fetchall()
        extended.append(time.perf_counter() - t)
    best = None
    for _ in range(3):
        t = time.perf_counter()
        n = len(pd.read_sql(MILLION, conn))
        d = time.perf_counter() - t
        best = d if best is None else min(best, d)
    conn.close()
    return statistics.median(simple), statistics.median(extended), best, n


results = {"before": [], "after": []}
for r in range(ROUNDS):
    for label, binary in (("before", BEFORE), ("after", AFTER)):
        k = key(binary)
        srv = start(binary)
        try:
            results[label].append(measure(k))
        finally:
            srv.terminate()
            srv.wait()
        s, e, p, n = results[label][-1]
        print(f"round {r + 1} {label}: first row simple {s * 1000:.1f} ms, extended {e * 1000:.1f} ms; "
              f"{n} rows into pandas {p:.2f} s", flush=True)

load = os.getloadavg()
print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
for i, name in enumerate(["first row, simple (median of 30)", "first row, extended (median of 30)",
                          "1 M rows into pandas (best of 3)"]):
    b = min(x[i] for x in results["before"])
    a = min(x[i] for x in results["after"])
    unit = (1000, "ms") if i < 2 else (1, "s")
    print(f"{name}: before {b * unit[0]:.2f} {unit[1]}, after {a * unit[0]:.2f} {unit[1]}, after/before {a / b:.2f}")
