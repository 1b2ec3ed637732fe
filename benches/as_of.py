#!/usr/bin/env python3
"""What answering "as of" a time costs (issue 31), as ratios in one run on one server:
each REST request plain and with `as_of` a minute before now (today's answers: both come
from memory, the as_of ones replaying the hot state's inputs known by then or filtering the
caches' rows on their available_at), and each SQL query over a past day plain and through `as_of(...)`,
over the PostgreSQL wire. Median of ROUNDS requests each, the two forms alternated.

The lake is a demo lake of DAYS days for two stations (`wxlake demo`), built first.

Usage: .ci/venv/bin/python -W ignore benches/as_of.py [BIN=target/release/wxlake] [DAYS=7] [ROUNDS=60]
(ROUNDS at most 70: 2 x ROUNDS x 5 queries a minute stay under a key's rate limit)
"""
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import psycopg

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/wxlake"
DAYS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 60
HTTP, PG = 18097, 5447

work = tempfile.mkdtemp()
lake = f"file://{work}/lake"


def run(*args):
    return subprocess.run([BIN, "--lake", lake, *args], capture_output=True, text=True, check=True)


run("demo", "--days", str(DAYS), "--stations", "KNYC,KMDW")
# One key for REST and one for SQL, each under its 1,200 requests a minute.
key, sql_key = (run("keys", "create", "--tier", "enterprise", "--user", f"bench{i}", "--admin").stdout.strip()
                .splitlines()[-1] for i in range(2))
log = open(f"{work}/server.log", "w")
srv = subprocess.Popen([BIN, "--lake", lake, "serve", "--addr", f"127.0.0.1:{HTTP}", "--pg-addr",
                        f"127.0.0.1:{PG}", "--flush-secs", "3600"], stdout=log, stderr=log)
try:
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{HTTP}/healthz", timeout=1)
            break
        except Exception:
            time.sleep(0.2)
    time.sleep(5)  # the startup's scheduled job runs

    def get(path):
        req = urllib.request.Request(f"http://127.0.0.1:{HTTP}{path}", headers={"X-API-Key": key})
        t = time.perf_counter()
        with urllib.request.urlopen(req) as r:
            r.read()
        return time.perf_counter() - t

    def pair(plain, as_of, call):
        call(plain), call(as_of)  # warm
        a, b = [], []
        for _ in range(ROUNDS):
            a.append(call(plain))
            b.append(call(as_of))
        return statistics.median(a), statistics.median(b)

    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    t = (now - dt.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    day_ago = (now - dt.timedelta(hours=23)).strftime("%Y-%m-%dT%H:%M:%SZ")
    end = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    rest = {
        "svc_high nws (today)": "/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws",
        "latest": "/api/v2/observations.php?station_code=KNYC&mode=latest",
        "history, last 23 h": f"/api/v2/observations.php?station_code=KNYC&start_time={day_ago}&end_time={end}",
        "forecasts GFS run=latest": "/api/v2/forecasts.php?location_name=KNYC&model=GFS&run=latest",
        "nws_forecasts latest": "/api/v2/nws_forecasts.php?station_code=KNYC",
    }
    print(f"{'REST request':32} {'plain ms':>9} {'as_of ms':>9} {'ratio':>6}")
    for name, path in rest.items():
        p, a = pair(path, f"{path}&as_of={t}", get)
        print(f"{name:32} {p * 1e3:9.2f} {a * 1e3:9.2f} {a / p:6.2f}")

    past = (now - dt.timedelta(days=3)).date().isoformat()
    cut = (now - dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    conn = psycopg.connect(host="127.0.0.1", port=PG, user="bench", password=sql_key, dbname="wxlake",
                           autocommit=True)

    def query(sql):
        t0 = time.perf_counter()
        conn.execute(sql).fetchall()
        return time.perf_counter() - t0

    sql = {
        "observations, one past day": (
            f"SELECT count(*), max(temperature) FROM {{}} WHERE station_code = 'KNYC' AND date = '{past}'",
            "observations"),
        "forecasts GFS, one past run day": (
            f"SELECT count(*), max(temperature_f) FROM {{}} WHERE location_name = 'KNYC' AND model = 'GFS' "
            f"AND run_date = '{past}'", "forecasts"),
        "reports, one past day": (
            f"SELECT count(*), max(high_f) FROM {{}} WHERE station_code = 'KNYC' AND report_date = DATE '{past}'",
            "reports"),
        "nws_hourly, one past day": (
            f"SELECT count(*), max(temperature_f) FROM {{}} WHERE station_code = 'KNYC' AND date = '{past}'",
            "nws_hourly"),
    }
    pairs = {name: (text.format(table), text.format(f"as_of('{table}', '{cut}')")) for name, (text, table) in sql.items()}
    # The NWS version in force at a past moment, as a user without as_of writes it (the
    # newest version available then, within the 8 days as_of reads), against as_of: the
    # plain one-day query above returns every version of the day, this one the same rows.
    cut_day = (now - dt.timedelta(days=1)).date()
    days = f"date >= '{(cut_day - dt.timedelta(days=8)).isoformat()}' AND date <= '{cut_day.isoformat()}'"
    pairs["nws_hourly, version in force"] = (
        "SELECT count(*), max(temperature_f) FROM nws_hourly WHERE station_code = 'KNYC' AND " + days +
        " AND generated_at = (SELECT max(generated_at) FROM nws_hourly WHERE station_code = 'KNYC' AND " + days +
        f" AND available_at <= TIMESTAMP '{cut}')",
        f"SELECT count(*), max(temperature_f) FROM as_of('nws_hourly', '{cut}') WHERE station_code = 'KNYC'")
    print(f"\n{'SQL over the PostgreSQL wire':32} {'plain ms':>9} {'as_of ms':>9} {'ratio':>6}")
    for name, (plain, as_of) in pairs.items():
        p, a = pair(plain, as_of, query)
        print(f"{name:32} {p * 1e3:9.2f} {a * 1e3:9.2f} {a / p:6.2f}")
finally:
    srv.terminate()
    srv.wait()
