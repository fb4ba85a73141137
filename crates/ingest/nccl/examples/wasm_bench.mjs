// Times the wasm parser (see wasm_bench.rs): node wasm_bench.mjs PKG_DIR FILE [rounds].
// Prints the best round, in MB/s, like parse_bench's native figures.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";

const [pkg, file, rounds = "5"] = process.argv.slice(2);
const { Bench } = createRequire(import.meta.url)(join(resolve(pkg), "wasm_bench.js"));
const bytes = readFileSync(file);
const bench = new Bench(bytes);
let best = Infinity;
let ops = 0;
for (let i = 0; i < Number(rounds); i++) {
  const t = performance.now();
  ops = bench.parse(1 << 20);
  best = Math.min(best, (performance.now() - t) / 1000);
}
const mb = bytes.length / 1e6;
console.log(`${file}: ${mb.toFixed(1)} MB, ${ops} ops`);
console.log(`parser, wasm (node ${process.version})  ${(mb / best).toFixed(0)} MB/s  (${best.toFixed(3)} s)`);
