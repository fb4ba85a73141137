// Bad inputs made from real fixtures in a temporary directory (never committed): what a user
// may drop by mistake next to good files. Each entry says what the page must show for it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, FIXTURES } from './harness.mjs';

const nsys = (f) => path.join(FIXTURES, 'nsys', f);

/** Deterministic junk (xorshift), so a failure can be replayed byte for byte. */
function junk(n, seed) {
  const out = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/**
 * Writes the bad files into a new temporary directory; returns `{dir, files}` where each file
 * is `{path, expect}`: `expect` is `'error'` (the file is refused with a message) or a regular
 * expression its notes must match (the file loads with a warning).
 */
export function makeBadFiles() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ncclscope-bad-'));
  const files = [];
  const write = (name, bytes, expect) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, bytes);
    files.push({ path: p, expect });
  };
  const db = fs.readFileSync(nsys('GindaChen-nsys-ai_mfu_2gpu_after.sqlite'));
  // Cut in the middle: the schema page is intact, the kernel table's pages are gone.
  write('truncated.sqlite', db.subarray(0, Math.floor(db.length * 0.4)), 'error');
  // A valid header and first page, then garbage where every other page should be.
  const pageSize = db.readUInt16BE(16) === 1 ? 65536 : db.readUInt16BE(16);
  write('corrupt.sqlite', Buffer.concat([db.subarray(0, pageSize), junk(db.length - pageSize, 7)]), 'error');
  // Only the 16-byte magic string of SQLite, then text.
  write('looks-like.sqlite', Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.from('not a database, just text\n'.repeat(40))]), 'error');
  // A real file that is not SQLite at all, renamed.
  write('renamed.sqlite', fs.readFileSync(path.join(ROOT, 'package.json')), 'error');
  // A real export of a run without NCCL: it loads, with a warning.
  write('no-nccl.sqlite', fs.readFileSync(nsys('NVIDIA-Fuser_report1_64ee035d.sqlite')), /no NCCL kernels/);
  // Binary junk named like a log.
  write('junk.log', junk(256 * 1024, 11), 'error');
  // 200 KiB of a job's own output and no NCCL line: text, but not a log.
  write('pip-output.txt', preamble(200 * 1024), 'error');
  return { dir, files };
}

/** `n` bytes of what a job prints before NCCL does: pip's progress, a config dump, a traceback. */
export function preamble(n) {
  const lines = [];
  let size = 0;
  for (let i = 0; size < n; i++) {
    const chunk = `Collecting package-${i}==1.${i}.0\n  Downloading package_${i}-1.${i}.0.whl (1.2 MB)\n`
      + `config.model.layers.${i}.hidden_size: 4096\n`
      + `Traceback (most recent call last):\n  File "train.py", line ${i}, in <module>\n`;
    lines.push(chunk);
    size += chunk.length;
  }
  return Buffer.from(lines.join(''));
}

/**
 * Writes `log` (a real fixture) after 200 KiB of preamble into `dir`, named `name`: a log whose
 * first NCCL line is far past the 64 KiB head a file is first recognised by.
 */
export function writeLateLog(dir, log, name = 'train-stdout.log') {
  const p = path.join(dir, name);
  fs.writeFileSync(p, Buffer.concat([preamble(200 * 1024), fs.readFileSync(log)]));
  return p;
}
