// init({ wasm }): where the .wasm comes from when the entry point's default
// does not hold. Something that is not WebAssembly (an index.html fallback,
// wrong bytes, a missing file) is an init error saying what came back, and
// init can then be retried with the right source.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PASSES, PUBLISHED_PKG_DIR, REPO, assertBuilt, openSession } from './lib/browser.mjs';

test('Node: wrong bytes, a missing file, then the real bytes', () => {
  // web/node.js from the repository: its glue is pkg/'s, so the right bytes are pkg/'s too.
  assertBuilt({ wrapper: true, published: true });
  // A child process: a module instance loads its wasm once.
  const script = `
    import { readFileSync } from 'node:fs';
    const skiff = await import(${JSON.stringify(pathToFileURL(path.join(REPO, 'web/node.js')).href)});
    const errors = [];
    for (const wasm of [new Uint8Array([1, 2, 3, 4]), '/nonexistent/skiff_bg.wasm', 42]) {
      await skiff.init({ wasm }).then(
        () => errors.push('resolved'),
        (e) => errors.push(e instanceof skiff.SkiffError && e.op === 'init' ? e.kind + ' ' + e.message : 'not a SkiffError: ' + e),
      );
    }
    const info = await skiff.init({ wasm: readFileSync(${JSON.stringify(path.join(PUBLISHED_PKG_DIR, 'skiff_bg.wasm'))}) });
    console.log(JSON.stringify({ errors, device: info.device, values: await skiff.tensor([1, 2]).add(1).array() }));
  `;
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }));
  assert.match(out.errors[0], /^value init: wasm \(the bytes passed\) is not WebAssembly: it starts with bytes 01 02 03 04$/);
  assert.match(out.errors[1], /^value init: reading \/nonexistent\/skiff_bg\.wasm failed: ENOENT/);
  assert.match(out.errors[2], /^argument init: wasm must be a URL .* got number$/);
  assert.equal(out.device, 'cpu');
  assert.deepEqual(out.values, [2, 3]);
});

test('Chromium: a URL that answers with HTML, then the default location', async () => {
  assertBuilt({ wrapper: true });
  const s = await openSession(PASSES.cpu);
  try {
    const r = await s.page.evaluate(async () => {
      const skiff = await import('/web/index.js');
      const error = await skiff.init({ wasm: '/tests/browser/pages/index.html' }).then(
        () => 'resolved',
        (e) => e.message,
      );
      const info = await skiff.init({ device: 'cpu' });
      return { error, device: info.device, values: await skiff.tensor([1, 2]).add(1).array() };
    });
    s.checkErrors();
    assert.match(r.error, /^init: \/tests\/browser\/pages\/index\.html is not WebAssembly: it starts with an HTML page/);
    assert.match(r.error, /a bundler copied skiff's JavaScript without its \.wasm/);
    assert.equal(r.device, 'cpu');
    assert.deepEqual(r.values, [2, 3]);
  } finally {
    await s.close();
  }
});
