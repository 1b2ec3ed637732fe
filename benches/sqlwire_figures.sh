#!/usr/bin/env bash
# The analyst SQL figures of benches/README.md ("Analyst SQL over the wire"): a 31-day demo
# lake (10.3 M forecast rows), the release server with both SQL ports, then
# benches/sqlwire_clients.py once the server's startup work is over.
#
#   cargo build --release --bins && .ci/venv/bin/pip install duckdb && \
#   benches/sqlwire_figures.sh [LAKE_DIR]      (.ci/venv: made by .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/wxlake
LAKE="${1:-/tmp/wxlake-sqlwire-lake}"
if [ ! -d "$LAKE/forecasts" ]; then
    t0=$(date +%s)
    $BIN --lake "file://$LAKE" demo --days 31 --no-onemin 2>&1 | tail -1
    echo "demo took $(($(date +%s) - t0)) s"
fi
$BIN --lake "file://$LAKE" sql "SELECT count(*) AS forecast_rows FROM forecasts" --format csv
KEY=$($BIN --lake "file://$LAKE" keys create --tier enterprise --user bench --admin | tail -1)
log=$(mktemp)
$BIN --lake "file://$LAKE" serve --addr 127.0.0.1:8080 --pg-addr 127.0.0.1:5433 --flight-addr 127.0.0.1:50051 >"$log" 2>&1 &
SRV=$!
trap 'kill -TERM $SRV 2>/dev/null; wait $SRV 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do curl -s -o /dev/null http://127.0.0.1:8080/openapi.json && break; sleep 1; done
# The server's startup work (scheduled job runs) would share the cores with the query:
# wait until it uses under 5 % of a core over 3 s (clock ticks of /proc/PID/stat).
ticks() { awk '{print $14 + $15}' "/proc/$SRV/stat"; }
for _ in $(seq 1 200); do
    a=$(ticks); sleep 3; b=$(ticks)
    [ $((b - a)) -lt 15 ] && break
done
.ci/venv/bin/python -W ignore benches/sqlwire_clients.py "$KEY" "$LAKE" 10000000
