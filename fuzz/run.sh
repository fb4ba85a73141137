#!/usr/bin/env bash
# Runs the NCCL log parser fuzz target for a bounded time; installs what is missing first.
#   fuzz/run.sh [seconds]        (default 60)
# Seeds the corpus from the real fixtures when they are present (NCCLSCOPE_REAL_FIXTURES, else
# the shared checkout next to the workspace) and from the committed regression inputs
# (crates/ingest/nccl/tests/fuzz-regressions/).
#
# Every crash, timeout, out-of-memory or leak input libFuzzer finds (now, or left in
# fuzz/artifacts/parse_log/ by an earlier run) that is not yet among the regression inputs is
# copied there as fuzz-<kind>-<sha1>, and the script exits non-zero: commit the input with the
# fix, and `cargo test -p ingest-nccl --test fuzz_regressions` replays it from then on.
set -euo pipefail

secs="${1:-60}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
regressions="$(cd "$here/../crates/ingest/nccl/tests/fuzz-regressions" && pwd)"
artifacts="$here/artifacts/parse_log"
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
mkdir -p "$corpus" "$artifacts"
fixtures="${NCCLSCOPE_REAL_FIXTURES:-$here/../../shared/fixtures/real}/nccl"
if [ -d "$fixtures" ]; then
    # Whole fixtures are too long for libFuzzer's max_len: seed with 60-line slices.
    for f in "$fixtures"/*.log; do
        [ -e "$f" ] || continue
        base="$(basename "$f" .log)"
        split -l 60 -d -a 3 "$f" "$corpus/seed_${base}_"
    done
fi

# The regression inputs are not seeds: `cargo test -p ingest-nccl --test fuzz_regressions`
# replays them (natively, at full speed), and some inflate to megabytes, which the sanitized
# build parses twice per run: as seeds they took most of a bounded run (25 instead of ~125 runs
# a second).
status=0
cargo +nightly fuzz run parse_log "$corpus" -- \
    -max_total_time="$secs" -max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    || status=$?

# Keep what the fuzzer ever found: a copy of each finding whose bytes are not a regression
# input already.
new=()
for f in "$artifacts"/crash-* "$artifacts"/timeout-* "$artifacts"/oom-* "$artifacts"/leak-*; do
    [ -f "$f" ] || continue
    known=0
    for r in "$regressions"/*; do
        if cmp -s "$f" "$r"; then
            known=1
            break
        fi
    done
    [ "$known" = 1 ] && continue
    name="$(basename "$f")"
    cp "$f" "$regressions/fuzz-$name"
    new+=("crates/ingest/nccl/tests/fuzz-regressions/fuzz-$name")
done

if [ "${#new[@]}" -gt 0 ]; then
    echo "run.sh: the fuzzer found ${#new[@]} failing input(s), now regression inputs:" >&2
    printf '  %s\n' "${new[@]}" >&2
    echo "run.sh: fix the parser, check with 'cargo test -p ingest-nccl --test fuzz_regressions'," >&2
    echo "        and commit the input(s) with the fix." >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "run.sh: cargo fuzz failed (status $status) without leaving a new input" >&2
fi
exit "$status"
