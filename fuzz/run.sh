#!/usr/bin/env bash
# Runs the NCCL log parser fuzz target for a bounded time; installs what is missing first.
#   fuzz/run.sh [seconds]        (default 60)
# Exits non-zero when libFuzzer finds a crash (the input is left in fuzz/artifacts/parse_log/).
# Seeds the corpus from the real fixtures when they are present (NCCLSCOPE_REAL_FIXTURES, else
# the shared checkout next to the workspace).
set -euo pipefail

secs="${1:-60}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "run.sh: installing the nightly toolchain" >&2
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "run.sh: installing cargo-fuzz" >&2
    cargo install --locked cargo-fuzz
fi

corpus="$here/corpus/parse_log"
mkdir -p "$corpus"
fixtures="${NCCLSCOPE_REAL_FIXTURES:-$here/../../shared/fixtures/real}/nccl"
if [ -d "$fixtures" ]; then
    # Whole fixtures are too long for libFuzzer's max_len: seed with 60-line slices.
    for f in "$fixtures"/*.log; do
        [ -e "$f" ] || continue
        base="$(basename "$f" .log)"
        split -l 60 -d -a 3 "$f" "$corpus/seed_${base}_"
    done
fi

cargo +nightly fuzz run parse_log "$corpus" -- \
    -max_total_time="$secs" -max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
