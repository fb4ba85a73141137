#!/usr/bin/env bash
# Wasm throughput of the parser next to native single-thread on the same file (each line printed
# is the best of two parses; the script alternates wasm and native `rounds` times):
#   crates/ingest/nccl/examples/wasm_bench.sh FILE [rounds] [profile]
# profile: wasm-release (what the page ships, opt-level "s" + LTO; default) or release.
set -euo pipefail
file=$1
rounds=${2:-5}
profile=${3:-wasm-release}
root=$(cd "$(dirname "$0")/../../../.." && pwd)
cd "$root"
source scripts/env.sh
target=${CARGO_TARGET_DIR:-$root/target}
cargo build -q --profile "$profile" --target wasm32-unknown-unknown -p ingest-nccl --example wasm_bench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
wasm-bindgen --target nodejs --out-dir "$out" \
  "$target/wasm32-unknown-unknown/$profile/examples/wasm_bench.wasm"
cargo build -q --release -p ingest-nccl --example parse_bench
# Interleaved, so that load from other work on the machine hits both alike; take the best of each.
for _ in $(seq "$rounds"); do
  node crates/ingest/nccl/examples/wasm_bench.mjs "$out" "$file" 2 | tail -1
  "$target/release/examples/parse_bench" "$file" 2 1
done
