# Sourced by the scripts: puts the pinned tools first on PATH. wasm-opt must come from npm's
# binaryen (Debian's produces wasm that Chromium rejects), so node_modules/.bin goes first.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$root/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export TRUNK_SKIP_VERSION_CHECK=true
