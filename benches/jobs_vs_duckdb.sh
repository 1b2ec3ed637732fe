#!/usr/bin/env bash
# forecast_daily: `wxlake jobs run forecast_daily` against DuckDB (and Polars when it
# installs) computing the same table from the same Parquet files, in the same run.
#
#   benches/jobs_vs_duckdb.sh [--days N] [--stations A,B,...] [--lake DIR] [--repeat N] [--force]
#
# - Python tools live in a virtualenv under target/bench-venv (pip install duckdb polars).
# - The lake: --lake DIR if given (used as is), else target/bench-lake-<days>d[-<n>st],
#   built once with `wxlake demo` (90 days x 70 stations takes a while and ~GBs).
# - wxlake: target/release/wxlake, built when missing or WXLAKE_BUILD=1 (never with
#   WXLAKE_SKIP_BUILD=1); shared setup in benches/bench_env.sh.
#   WXLAKE=path uses another binary; WXLAKE_JOBS="cmd" replaces `wxlake jobs` by a command
#   taking `--lake URL` then the jobs subcommand.
# - DuckDB and Polars run a port of sql/forecast_daily.sql on forecasts/*/*/*.parquet with
#   the helper tables wxlake exports (`wxlake jobs helpers`), write their result as
#   Parquet partitioned by run_date as wxlake does, and the results are compared
#   row for row. Each engine runs --repeat times (default 3); best, median, worst and
#   their spread are printed.
# - Before timing it prints the load and refuses (exit 3) a busy machine or a lake that
#   is changing (benches/quiet.py: stop `wxlake serve` and any ingest or job on the lake,
#   let the machine settle), unless --force.
set -euo pipefail
cd "$(dirname "$0")/.."

DAYS=90
STATIONS=""
LAKE=""
REPEAT=3
FORCE=()
while [ $# -gt 0 ]; do
    case "$1" in
        --days) DAYS="$2"; shift 2 ;;
        --stations) STATIONS="$2"; shift 2 ;;
        --lake) LAKE="$2"; shift 2 ;;
        --repeat) REPEAT="$2"; shift 2 ;;
        --force) FORCE=(--force); shift ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

. benches/bench_env.sh
bench_venv duckdb deltalake polars
bench_binary
bench_lake forecasts

WORK="$(mktemp -d "${TMPDIR:-/tmp}/wxlake-jobs-bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# Run dates present in the lake, for the helper tables.
RANGE=$(partition_range "$LAKE/forecasts" run_date)
[ -n "$RANGE" ] || { echo "no run_date= partitions under $LAKE/forecasts" >&2; exit 1; }
read -r FIRST LAST <<< "$RANGE"
jobs_cmd helpers --out "$WORK/helpers" --from "$FIRST" --to "$LAST" 2>/dev/null

exec "$VENV/bin/python" benches/jobs.py --lake "$LAKE" --helpers "$WORK/helpers" --work "$WORK" \
    --repeat "$REPEAT" "${FORCE[@]}" --jobs-cmd "${WXLAKE_JOBS:-$WXLAKE jobs}"
