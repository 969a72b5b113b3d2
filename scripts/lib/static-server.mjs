// A tiny read-only static HTTP server for the browser tests and the demo: GET/HEAD only,
// bound to 127.0.0.1 (on a free port unless one is asked for), no directory
// listings, no paths outside `root` and its mounts. The tests start and stop
// one per file; `npm start` serves the demo page with it.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.cjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.safetensors': 'application/octet-stream',
};

/**
 * Serves `root` read-only. `mounts` maps URL prefixes ('/pkg/') to other
 * directories; `port` 0 (the default) picks a free one. Resolves to `{ url, port, close(), requests }`, where
 * `requests` lists `[status, path]` of every request (for debugging 404s:
 * Chromium reports them as console errors, which fail the tests).
 */
export async function serve(root, { mounts = {}, port: wanted = 0 } = {}) {
  root = path.resolve(root);
  const requests = [];
  const server = http.createServer((req, res) => {
    const reply = (status, body, type = 'text/plain; charset=utf-8') => {
      requests.push([status, req.url]);
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(405, 'read-only server\n');
    let rel;
    try {
      rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      return reply(400, 'bad url\n');
    }
    if (rel.includes('\0')) return reply(400, 'bad url\n');
    let base = root;
    for (const [prefix, dir] of Object.entries(mounts)) {
      if (rel.startsWith(prefix)) {
        base = path.resolve(dir);
        rel = '/' + rel.slice(prefix.length);
        break;
      }
    }
    let file = path.resolve(base, '.' + rel);
    if (file !== base && !file.startsWith(base + path.sep)) return reply(403, 'outside the served root\n');
    fs.stat(file, (err, st) => {
      if (!err && st.isDirectory()) {
        file = path.join(file, 'index.html');
        try {
          st = fs.statSync(file);
        } catch (e) {
          err = e;
        }
      }
      if (err || !st.isFile()) return reply(404, `not found: ${rel}\n`);
      const type = MIME[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
      requests.push([200, req.url]);
      res.writeHead(200, { 'content-type': type, 'content-length': st.size, 'cache-control': 'no-store' });
      if (req.method === 'HEAD') return res.end();
      fs.createReadStream(file).pipe(res);
    });
  });
  // Keep-alive sockets would hold close() open until they time out.
  const sockets = new Set();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(wanted, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
