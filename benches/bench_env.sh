# Shared setup of the engine-comparison benchmarks (jobs_vs_duckdb.sh,
# accuracy_vs_duckdb.sh), sourced after their option parsing (DAYS, STATIONS, LAKE).
#
#   bench_venv PKG...        virtualenv target/bench-venv with the Python packages (a
#                            package that fails to install is reported, not fatal, unless
#                            it is the first)
#   bench_binary             WXLAKE (default target/release/wxlake), built when missing or
#                            WXLAKE_BUILD=1, never with WXLAKE_SKIP_BUILD=1
#   bench_lake DIR...        LAKE (default target/bench-lake-<days>d[-<n>st]) as an absolute
#                            path, built with `wxlake demo` unless every DIR exists in it
#   jobs_cmd ARGS...         `wxlake --lake file://LAKE jobs ARGS`, or WXLAKE_JOBS="cmd"
#                            taking `--lake URL` then ARGS
#   partition_range DIR KEY  "FIRST LAST": the smallest and largest KEY=value of the
#                            partition directories under DIR (any depth); nothing if none

VENV=target/bench-venv

bench_venv() {
    if [ ! -x "$VENV/bin/python" ]; then
        python3 -m venv "$VENV"
    fi
    local first=1
    for pkg in "$@"; do
        if ! "$VENV/bin/python" -c "import $pkg" 2>/dev/null; then
            if [ "$first" = 1 ]; then
                "$VENV/bin/pip" install -q "$pkg"
            else
                "$VENV/bin/pip" install -q "$pkg" || echo "$pkg did not install; continuing without it" >&2
            fi
        fi
        first=0
    done
}

bench_binary() {
    WXLAKE="${WXLAKE:-target/release/wxlake}"
    if [ -z "${WXLAKE_SKIP_BUILD:-}" ] && { [ -n "${WXLAKE_BUILD:-}" ] || [ ! -x "$WXLAKE" ]; }; then
        cargo build --release --bin wxlake >&2
    fi
}

bench_lake() {
    if [ -z "$LAKE" ]; then
        local suffix=""
        if [ -n "$STATIONS" ]; then
            suffix="-$(echo "$STATIONS" | tr ',' '\n' | wc -l | tr -d ' ')st"
        fi
        LAKE="target/bench-lake-${DAYS}d${suffix}"
    fi
    local missing=""
    for d in "$@"; do
        [ -d "$LAKE/$d" ] || missing=1
    done
    if [ -n "$missing" ]; then
        echo "building demo lake $LAKE ($DAYS days${STATIONS:+, stations $STATIONS})" >&2
        mkdir -p "$LAKE"
        "$WXLAKE" --lake "file://$(cd "$LAKE" && pwd)" demo --days "$DAYS" ${STATIONS:+--stations "$STATIONS"} >&2
    fi
    LAKE="$(cd "$LAKE" && pwd)"
}

jobs_cmd() {
    if [ -n "${WXLAKE_JOBS:-}" ]; then
        $WXLAKE_JOBS --lake "file://$LAKE" "$@"
    else
        "$WXLAKE" --lake "file://$LAKE" jobs "$@"
    fi
}

# Reads the whole listing (no `sort | head`: under `set -o pipefail` the writer of a long
# listing dies of SIGPIPE when head exits early, and the script with it, exit 141).
partition_range() {
    find "$1" -type d -name "$2=*" -printf '%f\n' | cut -d= -f2 | sort -u | awk 'NR == 1 { first = $0 } { last = $0 } END { if (NR) print first, last }'
}
