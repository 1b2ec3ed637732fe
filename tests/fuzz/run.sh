#!/usr/bin/env bash
# Bounded libFuzzer run of every decoder target (issue 15 item 20); CI runs it after
# `cargo test`. Builds the targets, seeds each corpus from the real source responses,
# fuzzes FUZZ_SECONDS per target (default 60), two targets at a time, and prints the
# executions per target. Exits non-zero on a crash, naming the input that caused it.
#
#   tests/fuzz/run.sh                       # every target, 60 s each
#   FUZZ_SECONDS=10 tests/fuzz/run.sh mos   # some targets, shorter
#
# Replay a crash: tests/fuzz/target/x86_64-unknown-linux-gnu/debug/<target> <input>.
#
# FUZZ_BUILD_FLAGS (default `--dev --sanitizer none`) go to `cargo fuzz build`. The default
# is an unoptimised build with debug assertions and overflow checks, no AddressSanitizer:
# the decoders are safe Rust, and an optimised, instrumented arrow + parquet takes most of
# CI's 10-minute fuzz budget to compile. For long runs: FUZZ_BUILD_FLAGS=-O (release, ASan).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"

seconds="${FUZZ_SECONDS:-60}"
jobs="${FUZZ_JOBS:-2}"
# Longer inputs are truncated: the real files reach 750 KB, and 16 KB already holds many
# records while keeping executions fast.
max_len="${FUZZ_MAX_LEN:-16384}"
all=(metar onemin climate_report dsm forecast_rows forecast_parquet open_meteo mos nws_hourly)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all[@]}"); fi

# cargo-fuzz passes -Z flags to rustc; the stable toolchain accepts them with this.
export RUSTC_BOOTSTRAP=1
unset CARGO_TARGET_DIR
start=$SECONDS
build_flags="${FUZZ_BUILD_FLAGS:---dev --sanitizer none}"
# shellcheck disable=SC2086 # flags are words
(cd "$root" && cargo fuzz build --fuzz-dir tests/fuzz $build_flags)
echo "fuzz build: $((SECONDS - start)) s"
case " $build_flags " in
    *" --dev "* | *" -D "*) profile=debug ;;
    *) profile=release ;;
esac
bin="$here/target/x86_64-unknown-linux-gnu/$profile"

# Seeds: the repo's real responses (and ../shared/data/real when present), copied at run
# time (corpus/ is not committed), plus the small hand-written ones in seeds/<target>/.
real_dirs=("$root/data/real")
[ -d "$root/../shared/data/real" ] && real_dirs+=("$root/../shared/data/real")
seed_globs() {
    case "$1" in
        metar) echo "metar/*.tsv metar/*.csv metar/*.json metar/pyiem_collectives/* lcd/*.csv forecast/nws_api/*metar*.json" ;;
        onemin) echo "metar/IEM_KCVG_2024-03-01_routine.tsv" ;;
        climate_report) echo "cli/*" ;;
        dsm) echo "dsm/*" ;;
        open_meteo) echo "forecast/openmeteo_*.json" ;;
        mos) echo "forecast/mos/*" ;;
        nws_hourly) echo "forecast/nws_hourly_*.json forecast/nws_api/*forecast_hourly*.json" ;;
        *) echo "" ;;
    esac
}
for t in "${targets[@]}"; do
    [ -x "$bin/$t" ] || { echo "unknown target '$t' (targets: ${all[*]})" >&2; exit 2; }
    mkdir -p "corpus/$t" "artifacts/$t" logs
    for dir in "${real_dirs[@]}"; do
        for g in $(seed_globs "$t"); do
            for f in "$dir"/$g; do [ -f "$f" ] && cp -n "$f" "corpus/$t/" || true; done
        done
    done
    [ -d "seeds/$t" ] && cp -n seeds/"$t"/* "corpus/$t/"
done

run_one() {
    local t="$1"
    local rc=0
    "$bin/$t" "corpus/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
        -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"logs/$t.log" 2>&1 || rc=$?
    local execs
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "logs/$t.log" | tail -1)
    if [ "$rc" -eq 0 ]; then
        printf '%-17s %10s executions in %s s: ok\n' "$t" "${execs:-?}" "$seconds"
    else
        local input
        input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "logs/$t.log" | tail -1)
        printf '%-17s %10s executions: CRASH (exit %s), input tests/fuzz/%s, log tests/fuzz/logs/%s.log\n' \
            "$t" "${execs:-?}" "$rc" "${input:-?}" "$t"
        grep -m3 -E "panicked at|ERROR: libFuzzer|SUMMARY" "logs/$t.log" | sed 's/^/    /' || true
    fi
    return "$rc"
}

failed=0
running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n || failed=1
        running=$((running - 1))
    fi
    run_one "$t" &
    running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
done
echo "fuzz total: $((SECONDS - start)) s"
exit "$failed"
