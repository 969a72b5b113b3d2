#!/usr/bin/env node
// Serves the live-training demo page (www/) on 127.0.0.1 and prints its URL.
// `npm start` runs this after building the wasm and converting the MNIST data.
// The URL layout (shared with the browser tests through demoMounts):
//   /                 www/                 the page
//   /web/, /pkg/      the skiff npm package (JS wrapper, wasm-bindgen output)
//   /data/mnist/      the IDX files of `npm run data`
//   /vendor/uplot/    uPlot's ES module and stylesheet (charts)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from './lib/static-server.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The URL prefixes the page expects, mapped to directories of `repo`. */
export function demoMounts(repo = REPO, pkgDir = path.join(repo, 'pkg')) {
  return {
    '/web/': path.join(repo, 'web'),
    '/pkg/': pkgDir,
    '/data/mnist/': path.join(repo, 'data', 'mnist'),
    '/vendor/uplot/': path.join(repo, 'node_modules', 'uplot', 'dist'),
  };
}

/** Files the page cannot work without, with the command that makes each. */
export function missingFiles(repo = REPO, pkgDir = path.join(repo, 'pkg')) {
  const need = [
    [path.join(pkgDir, 'skiff_bg.wasm'), 'npm run build'],
    [path.join(repo, 'data', 'mnist', 'train-images-idx3-ubyte'), 'npm run data'],
    [path.join(repo, 'node_modules', 'uplot', 'dist', 'uPlot.esm.js'), 'npm install'],
  ];
  return need.filter(([file]) => !fs.existsSync(file)).map(([file, cmd]) => `${path.relative(repo, file)} (run ${cmd})`);
}

/** Starts the server; tries `port`, then any free port when it is taken. */
export async function serveDemo({ repo = REPO, pkgDir, port = 0 } = {}) {
  const root = path.join(repo, 'www');
  const mounts = demoMounts(repo, pkgDir);
  try {
    return await serve(root, { mounts, port });
  } catch (e) {
    if (e.code !== 'EADDRINUSE' || port === 0) throw e;
    return serve(root, { mounts, port: 0 });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const missing = missingFiles();
  if (missing.length) {
    console.error(`The demo needs files that are missing:\n  ${missing.join('\n  ')}`);
    process.exit(1);
  }
  const port = Number(process.env.PORT ?? 8080);
  const server = await serveDemo({ port });
  console.log(`\nskiff demo: ${server.url}/\n(open it in a browser with WebGPU, e.g. Chrome or Edge; Ctrl-C stops the server)\n`);
  const stop = () => server.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
