#!/usr/bin/env bash
# The scale figures of benches/README.md ("Scale-out"): a 1-year x 70-station x 18-model
# demo lake copied into a local S3 server on 127.0.0.1, then the derived jobs over it run
# locally (one process) and on a Ballista cluster (a scheduler and two executors, separate
# processes on the same machine), each timed, and the outputs compared.
#
#   cargo build --release --bins && [S3_SERVER=s3s|moto] benches/scale_figures.sh [LAKE_DIR] [DAYS]
#   (.ci/venv with moto and boto3: made by .ci/run; s3s-fs is installed from crates.io)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/target/release/wxlake
LAKE="${1:-/tmp/wxlake-scale-lake}"
DAYS="${2:-365}"
PY=.ci/venv/bin/python
if [ ! -d "$LAKE/forecasts" ]; then
    t0=$(date +%s)
    $BIN --lake "file://$LAKE" demo --days "$DAYS" --no-onemin 2>&1 | tail -1
    echo "demo took $(($(date +%s) - t0)) s"
fi
work=$(mktemp -d)
pids=()
trap 'kill ${pids[*]} 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; loopback_quickack off' EXIT

# Loopback without delayed ACKs while the S3 server runs. s3s-fs writes a response's head
# and body in two segments without TCP_NODELAY, so on loopback every small GET waited for
# the client's delayed ACK: 48 ms per 1 KB range GET, 7 ms with quick ACKs (boto3,
# 2026-11-26). Real S3 does not stall so; a figure taken with the stall measures it. Needs
# root (CAP_NET_ADMIN); without it the run goes on with a warning.
loopback_quickack() {
    local flag=()
    [ "$1" = on ] && flag=(quickack 1)
    for dst in 127.0.0.0/8 127.0.0.1; do
        ip route change local $dst dev lo proto kernel scope host src 127.0.0.1 table local "${flag[@]}" 2>/dev/null ||
            { [ "$1" = on ] && echo "warning: loopback keeps delayed ACKs (needs root): small GETs take ~40 ms"; return 0; }
    done
}

# The S3 server (S3_SERVER): s3s-fs (crates.io, objects in files; the default here) or
# moto (the tests' server, in memory). Moto answers a LIST by scanning every key of the
# bucket in Python: at this lake's size it is the bottleneck (benches/README.md). s3rver
# (npm) was tried too and dropped: its delimiter listings miss prefixes past 1,000 keys.
# S3_SERVER=none runs the same on the local files themselves.
port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
case "${S3_SERVER:-s3s}" in
none) ;;
s3s)
    S3S=/tmp/wxlake-s3s/bin/s3s-fs
    [ -x $S3S ] || cargo install s3s-fs@0.14.1 --features binary --locked --root /tmp/wxlake-s3s
    mkdir -p "$work/s3"
    $S3S --host 127.0.0.1 --port "$port" --access-key bench --secret-key bench "$work/s3" >"$work/server.log" 2>&1 &
    ;;
moto)
    $PY -c "from moto.server import main; main(['-H', '127.0.0.1', '-p', '$port'])" >"$work/server.log" 2>&1 &
    ;;
esac
if [ "${S3_SERVER:-s3s}" = none ]; then
    S3=file://$LAKE
else
    loopback_quickack on
    pids+=($!)
    for _ in $(seq 1 60); do curl -s -o /dev/null "http://127.0.0.1:$port" && break; sleep 1; done
    export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true AWS_ACCESS_KEY_ID=bench \
        AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1
    $PY benches/s3_upload.py "$AWS_ENDPOINT_URL" wxscale lake "$LAKE" forecasts observations reports nws_hourly
    S3=s3://wxscale/lake
fi
echo "lake: $S3 (S3 server: ${S3_SERVER:-s3s})"
$BIN --lake $S3 sql "SELECT count(*) AS forecast_rows, count(DISTINCT location_name) AS stations, \
    count(DISTINCT model) AS models, min(run_date) AS first_run_date, max(run_date) AS last_run_date \
    FROM forecasts" --format csv

# One timed job run: wall seconds, peak RSS of the client, and the object-store requests
# the client made (`-v` logs them; on a cluster the executors' own reads are not counted).
timed() {
    local label=$1
    shift
    /usr/bin/time -f "%e %M" -o "$work/time" $BIN -v --lake $S3 jobs run "$@" >"$work/out" 2>&1 || {
        cat "$work/out"
        return 1
    }
    read -r secs kb <"$work/time"
    requests=$(sed 's/\x1b\[[0-9;]*m//g' "$work/out" | sed -n 's/.*object store requests of this command requests=//p' | tail -1)
    printf '| %-44s | %8.1f s | %6d MB | %s |\n' "$label" "$secs" $((kb / 1024)) "$requests"
}
JOBS=(forecast_daily daily_extremes accuracy_pairs model_accuracy accuracy_trends accuracy_daily_detail)
echo "| run | wall | client peak RSS | client requests |"
echo "|---|---|---|---|"
for job in "${JOBS[@]}"; do timed "local: $job" "$job"; done
snapshot() {
    for t in forecast_daily accuracy_pairs model_accuracy accuracy_trends accuracy_daily_detail; do
        $BIN --lake $S3 sql "SELECT count(*) AS n FROM $t" --format csv | tail -1
    done | paste -sd, -
}
local_counts=$(snapshot)

# The cluster: a scheduler and two executors on the same lake and environment.
$BIN --lake $S3 cluster scheduler --bind 127.0.0.1:0 2>"$work/scheduler.log" &
pids+=($!)
for _ in $(seq 1 100); do grep -q "scheduler listening on" "$work/scheduler.log" && break; sleep 0.2; done
url=$(sed -n 's/.*scheduler listening on //p' "$work/scheduler.log" | head -1)
for i in 1 2; do
    eport=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    mkdir -p "$work/e$i"
    $BIN --lake $S3 cluster executor --scheduler "$url" --bind "127.0.0.1:$eport" --work-dir "$work/e$i" \
        2>"$work/e$i.log" &
    pids+=($!)
    for _ in $(seq 1 100); do (echo >"/dev/tcp/127.0.0.1/$eport") 2>/dev/null && break; sleep 0.2; done
done
for job in "${JOBS[@]}"; do timed "cluster: $job" "$job" --cluster "$url"; done
cluster_counts=$(snapshot)
echo "rows (forecast_daily, accuracy_pairs, model_accuracy, accuracy_trends, accuracy_daily_detail):"
echo "  local   $local_counts"
echo "  cluster $cluster_counts"
if [ "$local_counts" != "$cluster_counts" ]; then
    # daily_extremes (and so accuracy_pairs) depend on the clock: a station's day that ends
    # between the two runs (23:00 UTC ends Europe's) becomes complete. The local runs again,
    # untimed, to compare at the same hour.
    echo "  differ: the local jobs again, to compare at the same hour"
    for job in "${JOBS[@]}"; do $BIN --lake $S3 jobs run "$job" >"$work/out" 2>&1 || cat "$work/out"; done
    local_counts=$(snapshot)
    echo "  local   $local_counts"
fi
[ "$local_counts" = "$cluster_counts" ] && echo "same row counts" || { echo "ROW COUNTS DIFFER"; exit 1; }
