#!/usr/bin/env bash
# Hot GET requests over HTTP under load from a second process (wrk), 127.0.0.1 only,
# bounded in time: svc_high, then latest (or LOAD_PATH), one after the other on one server.
# Every request goes through auth and the rate limiter: the load rotates over enough
# Enterprise keys (1,200 req/min each) that none is limited during the run.
# Usage: benches/http_load.sh [seconds=15] [connections=16] [threads]
# Env: LOAD_PATH (one path instead of the two), LOAD_DEMO_DAYS (build a demo lake of that
# many days for KNYC first, e.g. for forecast requests), PIN=0 (do not pin; default: with
# two or more cores the server runs on core 0 and wrk on core 1, so neither takes the
# other's core; threads then defaults to 1, else 2), WXLAKE_SKIP_BUILD=1 (use
# target/release/wxlake as it is).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-15}; conns=${2:-16}
pin=${PIN:-1}
[ "$(nproc)" -ge 2 ] || pin=0
if [ "$pin" = 1 ]; then threads=${3:-1}; on_server="taskset -c 0"; on_wrk="taskset -c 1"
else threads=${3:-2}; on_server=""; on_wrk=""; fi
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
[ -n "${WXLAKE_SKIP_BUILD:-}" ] || cargo build --release --quiet
bin=target/release/wxlake
work=$(mktemp -d); trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
lake="file://$work/lake"
paths=("${LOAD_PATH:-/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws}")
[ -n "${LOAD_PATH:-}" ] || paths+=("/api/v2/observations.php?station_code=KNYC&mode=latest")
# Enough keys for the request budget of every path's run:
# (req/s upper bound 100k x secs x paths) / 1200 per minute.
nkeys=$(( (100000 * secs * ${#paths[@]}) / 1200 + 10 ))
$bin --lake "$lake" keys create --tier enterprise --user bench --admin --count "$nkeys" > "$work/keys.txt"
admin=$(head -1 "$work/keys.txt")
if [ -n "${LOAD_DEMO_DAYS:-}" ]; then
  $bin --lake "$lake" demo --days "$LOAD_DEMO_DAYS" --stations KNYC --no-onemin 2> "$work/demo.log"
fi
$on_server $bin --lake "$lake" serve --addr 127.0.0.1:18080 --flush-secs 3600 2> "$work/server.log" &
server=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:18080/healthz >/dev/null && break; sleep 0.1; done
# An hour of KNYC reports so svc_high has a real day to compute.
month=$(date -u +%Y-%m)
for m in $(seq 60 -1 1); do
  t=$(date -u -d "-$m min" +%d%H%MZ)
  echo "KNYC $t 27008KT 10SM CLR 05/M02 A3012 RMK AO2 T00$((50 + m % 9))1017"
done | curl -sf -X POST -H "X-API-Key: $admin" --data-binary @- "http://127.0.0.1:18080/api/v2/ingest/metar?month=$month" >/dev/null
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); pinned: $([ "$pin" = 1 ] && echo "server core 0, wrk core 1" || echo no)"
for path in "${paths[@]}"; do
  cat > "$work/rotate.lua" <<LUA
local keys = {}
for line in io.lines("$work/keys.txt") do keys[#keys + 1] = line end
local i = math.random(#keys)
request = function()
  i = i % #keys + 1
  return wrk.format("GET", "$path", {["X-API-Key"] = keys[i]})
end
LUA
  echo
  echo "== $path"
  echo "wrk: ${secs}s, ${conns} connections, ${threads} threads, $nkeys keys"
  $on_wrk wrk -t"$threads" -c"$conns" -d"${secs}s" --latency -s "$work/rotate.lua" http://127.0.0.1:18080
  echo "status codes seen by a final probe:"
  curl -s -o /dev/null -w "%{http_code} %{size_download} bytes\n" -H "X-API-Key: $(tail -1 "$work/keys.txt")" \
    "http://127.0.0.1:18080$path"
done
