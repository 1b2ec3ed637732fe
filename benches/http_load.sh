#!/usr/bin/env bash
# svc_high over HTTP under load from a second process (wrk), 127.0.0.1 only, bounded in time.
# Every request goes through auth and the rate limiter: the load rotates over enough
# Enterprise keys (1,200 req/min each) that none is limited during the run.
# Usage: benches/http_load.sh [seconds=15] [connections=16] [threads=2]
# Env: LOAD_PATH (default the svc_high request), LOAD_DEMO_DAYS (build a demo lake of that
# many days for KNYC first, e.g. for forecast requests).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-15}; conns=${2:-16}; threads=${3:-2}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
cargo build --release --quiet
bin=target/release/wxlake
work=$(mktemp -d); trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
lake="file://$work/lake"
# Enough keys for the request budget: (req/s upper bound 100k x secs) / 1200 per minute.
nkeys=$(( (100000 * secs) / 1200 + 10 ))
$bin --lake "$lake" keys create --tier enterprise --user bench --admin --count "$nkeys" > "$work/keys.txt"
admin=$(head -1 "$work/keys.txt")
path=${LOAD_PATH:-/api/v2/observations.php?station_code=KNYC&mode=svc_high&logic=nws}
if [ -n "${LOAD_DEMO_DAYS:-}" ]; then
  $bin --lake "$lake" demo --days "$LOAD_DEMO_DAYS" --stations KNYC --no-onemin 2> "$work/demo.log"
fi
$bin --lake "$lake" serve --addr 127.0.0.1:18080 --flush-secs 3600 2> "$work/server.log" &
server=$!
for _ in $(seq 100); do curl -sf http://127.0.0.1:18080/healthz >/dev/null && break; sleep 0.1; done
# An hour of KNYC reports so svc_high has a real day to compute.
month=$(date -u +%Y-%m)
for m in $(seq 60 -1 1); do
  t=$(date -u -d "-$m min" +%d%H%MZ)
  echo "KNYC $t 27008KT 10SM CLR 05/M02 A3012 RMK AO2 T00$((50 + m % 9))1017"
done | curl -sf -X POST -H "X-API-Key: $admin" --data-binary @- "http://127.0.0.1:18080/api/v2/ingest/metar?month=$month" >/dev/null
cat > "$work/rotate.lua" <<LUA
local keys = {}
for line in io.lines("$work/keys.txt") do keys[#keys + 1] = line end
local i = math.random(#keys)
request = function()
  i = i % #keys + 1
  return wrk.format("GET", "$path", {["X-API-Key"] = keys[i]})
end
LUA
echo "wrk: ${secs}s, ${conns} connections, ${threads} threads, $nkeys keys"
wrk -t"$threads" -c"$conns" -d"${secs}s" --latency -s "$work/rotate.lua" http://127.0.0.1:18080
echo "status codes seen by a final probe:"
curl -s -o /dev/null -w "%{http_code} %{size_download} bytes\n" -H "X-API-Key: $(tail -1 "$work/keys.txt")" \
  "http://127.0.0.1:18080$path"
