#!/usr/bin/env bash
# The accuracy jobs (accuracy_pairs, model_accuracy, accuracy_trends,
# accuracy_daily_detail): `wxlake jobs run <job>` against DuckDB computing the same tables
# from the same Parquet files, in the same run.
#
#   benches/accuracy_vs_duckdb.sh [--days N] [--stations A,B,...] [--lake DIR] [--repeat N]
#                                 [--duck-chunk-days N] [--force]
#
# - Python tools live in a virtualenv under target/bench-venv (pip install duckdb).
# - The lake: --lake DIR if given (used as is; it must hold forecast_daily, daily_extremes
#   and nws_hourly), else target/bench-lake-<days>d[-<n>st], built once with `wxlake demo`
#   (which ingests and runs every job; 90 days x 70 stations takes a while and ~GBs).
# - wxlake: target/release/wxlake. It is built (cargo build --release) only when it is
#   missing or WXLAKE_BUILD=1; WXLAKE_SKIP_BUILD=1 never builds. WXLAKE=path uses another
#   binary; WXLAKE_JOBS="cmd" replaces `wxlake jobs` by a command taking `--lake URL`
#   then the jobs subcommand.
# - DuckDB runs a port of the four sql/*.sql files (benches/accuracy.py lists the
#   DataFusion -> DuckDB translations) with the stations table wxlake exports
#   (`wxlake jobs helpers`), writes zstd Parquet partitioned as the jobs declare, and the
#   four results are compared row for row on their keys. accuracy_pairs: wxlake runs
#   every daily_extremes date in the chunks jobs/accuracy_pairs.toml declares; DuckDB
#   runs the whole range in one go unless --duck-chunk-days N. Each engine runs --repeat times (default 3); best and
#   median per step and in total (with the totals' worst and spread) are printed. The
#   wxlake runs republish the lake's derived accuracy tables (idempotent).
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
DUCK_CHUNK_DAYS=0
while [ $# -gt 0 ]; do
    case "$1" in
        --days) DAYS="$2"; shift 2 ;;
        --stations) STATIONS="$2"; shift 2 ;;
        --lake) LAKE="$2"; shift 2 ;;
        --repeat) REPEAT="$2"; shift 2 ;;
        --force) FORCE=(--force); shift ;;
        --duck-chunk-days) DUCK_CHUNK_DAYS="$2"; shift 2 ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

. benches/bench_env.sh
bench_venv duckdb deltalake
bench_binary
bench_lake derived/forecast_daily derived/daily_extremes nws_hourly

WORK="$(mktemp -d "${TMPDIR:-/tmp}/wxlake-accuracy-bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# The helper tables (only `stations` is used here); any date range will do.
RANGE=$(partition_range "$LAKE/derived/daily_extremes" date)
[ -n "$RANGE" ] || { echo "no date= partitions under $LAKE/derived/daily_extremes" >&2; exit 1; }
read -r FIRST LAST <<< "$RANGE"
jobs_cmd helpers --out "$WORK/helpers" --from "$FIRST" --to "$LAST" >/dev/null 2>&1

"$VENV/bin/python" benches/accuracy.py --lake "$LAKE" --helpers "$WORK/helpers" --work "$WORK" \
    --repeat "$REPEAT" "${FORCE[@]}" --duck-chunk-days "$DUCK_CHUNK_DAYS" --jobs-cmd "${WXLAKE_JOBS:-$WXLAKE jobs}"
