#!/usr/bin/env bash
# The peer of `cargo bench --bench feeds` (one poll of a 5,000-station METAR cache file):
# DuckDB reading the same metars.cache.csv.gz into a table of a database file, as a user
# loading AWC's cache file with it would. Prints the process's CPU time (every thread) and
# wall time per load, best of N.
#
#   benches/feeds_vs_duckdb.sh [--repeat N]
#
# Needs target/bench-feeds/metars.cache.csv.gz, which `cargo bench --bench feeds` writes.
# DuckDB comes from PyPI into the bench virtualenv (benches/bench_env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
REPEAT=5
while [ $# -gt 0 ]; do
    case "$1" in
        --repeat) REPEAT="$2"; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
FILE=target/bench-feeds/metars.cache.csv.gz
[ -f "$FILE" ] || { echo "$FILE is missing: run cargo bench --bench feeds first" >&2; exit 1; }
. benches/bench_env.sh
bench_venv duckdb
"$VENV/bin/python" - "$FILE" "$REPEAT" <<'PY'
import os, sys, tempfile, time
import duckdb

path, repeat = sys.argv[1], int(sys.argv[2])
best = None
for _ in range(repeat):
    with tempfile.TemporaryDirectory() as d:
        con = duckdb.connect(os.path.join(d, "cache.duckdb"))
        cpu, wall = time.process_time(), time.perf_counter()
        # skip=5: the data server's status lines before the header.
        con.execute(f"CREATE TABLE metars AS SELECT * FROM read_csv('{path}', skip=5, header=true)")
        con.execute("CHECKPOINT")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        rows = con.execute("SELECT count(*) FROM metars").fetchone()[0]
        con.close()
    if best is None or cpu < best[0]:
        best = (cpu, wall, rows)
print(f"duckdb {duckdb.__version__}: {best[2]} rows, CPU {best[0] * 1000:.1f} ms, wall {best[1] * 1000:.1f} ms (best of {repeat})")
PY
