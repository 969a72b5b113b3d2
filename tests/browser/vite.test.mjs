// Bundler test: tests/browser/vite-app (a user's app importing 'skiff-ml') is
// copied to a temporary directory whose node_modules/skiff-ml holds what the
// package publishes (package.json and its "files"), built with Vite's JS
// API, then served and run in Chromium (cpu pass).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'vite';
import { PASSES, REPO, assertBuilt, openSession } from './lib/browser.mjs';
import { installPackage } from './lib/package.mjs';

describe('vite: a bundled app (cpu pass)', { timeout: 180_000 }, () => {
  let dir;
  let dist;
  let s;
  before(async () => {
    assertBuilt({ wrapper: true });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-vite-'));
    const app = path.join(REPO, 'tests/browser/vite-app');
    for (const f of ['index.html', 'main.js', 'package.json']) fs.copyFileSync(path.join(app, f), path.join(dir, f));
    installPackage(dir);
    dist = path.join(dir, 'dist');
  });
  after(async () => {
    await s?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('vite build', async () => {
    await build({
      root: dir,
      configFile: false,
      logLevel: 'warn',
      build: { outDir: dist, emptyOutDir: true },
    });
    const assets = fs.readdirSync(path.join(dist, 'assets'));
    assert.ok(
      assets.some((f) => f.endsWith('.wasm')),
      `the .wasm is emitted as an asset: ${assets.join(', ')}`,
    );
    assert.ok(
      assets.some((f) => f.endsWith('.js')),
      `a JS bundle: ${assets.join(', ')}`,
    );
  });

  test('the built app runs in Chromium', async () => {
    assert.ok(fs.existsSync(path.join(dist, 'index.html')), 'vite build ran');
    s = await openSession(PASSES.cpu, { root: dist, pagePath: '/index.html' });
    await s.page.waitForFunction(() => window.__result !== undefined, null, { timeout: 60_000 });
    const r = await s.page.evaluate(() => window.__result);
    s.checkErrors();
    assert.equal(r.error, undefined, `the app failed: ${r.error}`);
    assert.equal(r.device, 'cpu');
    assert.match(String(r.reason), /webgpu|navigator\.gpu/i);
    assert.deepEqual(r.y, [-1, -1], 'A x');
    assert.deepEqual(r.g, [-8, -12], 'd/dx |A x|^2 = 2 A^T A x');
    const served = s.server.requests.filter(([status]) => status !== 200);
    assert.deepEqual(served, [], 'every request was served');
  });
});
