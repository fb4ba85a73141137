// A tiny static file server for dist/, on loopback only. Used by `scripts/serve` and by the
// browser tests, which start their own instance on a free port (port 0) so that a leftover
// server can never answer for them.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.wasm': 'application/wasm', '.css': 'text/css', '.json': 'application/json',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.sqlite': 'application/octet-stream',
  '.log': 'text/plain; charset=utf-8', '.gz': 'application/gzip',
};

/** Serves `root` under `prefix` (default "/"); resolves to {server, url}. */
export function serveDir(root, port = 0, prefix = '/') {
  const absRoot = path.resolve(root);
  const server = http.createServer((req, res) => {
    let urlPath = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (!urlPath.startsWith(prefix)) { res.writeHead(404); res.end(); return; }
    urlPath = urlPath.slice(prefix.length - 1);
    let file = path.join(absRoot, path.normalize(urlPath));
    if (!file.startsWith(absRoot)) { res.writeHead(403); res.end(); return; }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    fs.readFile(file, (err, data) => {
      if (err) { res.writeHead(404); res.end('not found'); return; }
      res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream' });
      res.end(data);
    });
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: p } = server.address();
      resolve({ server, url: `http://127.0.0.1:${p}${prefix}` });
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [root = 'dist', port = '8080'] = process.argv.slice(2);
  serveDir(root, Number(port)).then(({ url }) => console.log(`serving ${root} at ${url}`))
    .catch((e) => { console.error(`cannot serve on port ${port}: ${e.message}`); process.exit(2); });
}
