// The package's two .wasm builds (scripts/build-wasm.sh): the entry points
// load the relaxed-SIMD build where the engine validates relaxed SIMD
// (Chromium) and the SIMD128 baseline elsewhere (Node 20), or the one
// init({ relaxedSimd }) insists on. Each build's cpu products must match an
// f64 triple loop within the rounding bound (tests/browser/pages/products.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PASSES, PKG_DIR, REPO, assertBuilt, openSession } from './lib/browser.mjs';
import { installPackage } from './lib/package.mjs';

const PRODUCTS = pathToFileURL(path.join(REPO, 'tests/browser/pages/products.js')).href;

/** Every product within its rounding bound (worst error / bound at most 1). */
function assertProducts(results, build) {
  assert.equal(results.length, 7);
  for (const r of results) {
    assert.ok(r.worst <= 1, `${build}: ${JSON.stringify(r.a)} x ${JSON.stringify(r.b)} (transposed ${r.ta}/${r.tb}): error ${r.worst} x the bound`);
  }
}

test('Chromium loads the relaxed-SIMD build, or the baseline on request; both multiply right', { timeout: 120_000 }, async () => {
  assertBuilt({ wrapper: true });
  for (const relaxedSimd of [undefined, false, true]) {
    const s = await openSession(PASSES.cpu);
    try {
      const r = await s.page.evaluate(async (relaxedSimd) => {
        const skiff = await import('/web/index.js');
        const { checkProducts } = await import('/tests/browser/pages/products.js');
        const info = await skiff.init({ device: 'cpu', relaxedSimd });
        // A later init cannot swap the build it loaded.
        const swap = await skiff.init({ device: 'cpu', relaxedSimd: info.wasmSimd !== 'relaxed' }).then(
          () => 'resolved',
          (e) => `${e.kind} ${e.message}`,
        );
        // A wrong type is an argument error, loaded or not.
        const bad = await skiff.init({ device: 'cpu', relaxedSimd: 1 }).then(
          () => 'resolved',
          (e) => `${e.kind} ${e.message}`,
        );
        return { wasmSimd: info.wasmSimd, same: skiff.backendInfo().wasmSimd, swap, bad, products: await checkProducts(skiff) };
      }, relaxedSimd);
      s.checkErrors();
      const want = relaxedSimd === false ? 'simd128' : 'relaxed';
      assert.equal(r.wasmSimd, want, `relaxedSimd: ${relaxedSimd}`);
      assert.equal(r.same, want);
      assert.match(r.swap, /^value init: relaxedSimd: (true|false), but an earlier init\(\) loaded the (relaxed|simd128) build, which stays$/);
      assert.equal(r.bad, 'argument init: relaxedSimd must be a boolean, got the number 1');
      assertProducts(r.products, want);
    } finally {
      await s.close();
    }
  }
});

/** Runs `body` (an async module body with `skiff` imported) in a Node child with `flags`; its JSON output. */
function inNode(pkgDir, body, flags = []) {
  const script = `
    const skiff = await import(${JSON.stringify(pathToFileURL(path.join(pkgDir, 'web/node.js')).href)});
    const { checkProducts } = await import(${JSON.stringify(PRODUCTS)});
    const outcome = (p) => p.then(() => 'resolved', (e) => e.kind + ' ' + e.message);
    ${body}
  `;
  return JSON.parse(execFileSync(process.execPath, [...flags, '--input-type=module', '-e', script], { encoding: 'utf8' }));
}

test('Node: the baseline where relaxed SIMD is off, the relaxed build where it is on; bad options', { timeout: 120_000 }, () => {
  assertBuilt({ wrapper: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-simd-'));
  try {
    const pkgDir = installPackage(tmp);
    // Node 20's V8 has relaxed SIMD behind a flag: off by default, on with it.
    const plain = inNode(
      pkgDir,
      `
      const errors = [
        await outcome(skiff.init({ relaxedSimd: 'yes' })),
        await outcome(skiff.init({ relaxedSimd: false, wasm: new Uint8Array(8) })),
        await outcome(skiff.init({ relaxedSimd: true })),
      ];
      const info = await skiff.init();
      console.log(JSON.stringify({ errors, wasmSimd: info.wasmSimd, products: await checkProducts(skiff) }));
      `,
      ['--no-experimental-wasm-relaxed-simd'],
    );
    assert.match(plain.errors[0], /^argument init: relaxedSimd must be a boolean, got the string "yes"$/);
    assert.match(plain.errors[1], /^argument init: relaxedSimd picks one of the package's two \.wasm builds; a `wasm` given is loaded as it is/);
    assert.match(plain.errors[2], /^value init: relaxedSimd: true, but this engine has no relaxed SIMD/);
    assert.equal(plain.wasmSimd, 'simd128');
    assertProducts(plain.products, 'simd128');

    const relaxed = inNode(
      pkgDir,
      `
      const info = await skiff.init();
      console.log(JSON.stringify({ wasmSimd: info.wasmSimd, products: await checkProducts(skiff) }));
      `,
      ['--experimental-wasm-relaxed-simd'],
    );
    assert.equal(relaxed.wasmSimd, 'relaxed');
    assertProducts(relaxed.products, 'relaxed');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('the package ships both builds', () => {
  assertBuilt();
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
  for (const file of ['skiff_bg.wasm', 'skiff_relaxed_bg.wasm', 'skiff_relaxed_bg.wasm.base64.js']) {
    assert.ok(manifest.files.includes(`pkg/${file}`), `package.json "files" lists pkg/${file}`);
    assert.ok(fs.existsSync(path.join(PKG_DIR, file)), `${file} is built`);
  }
  // They differ: the relaxed one has f32x4.relaxed_madd (0xfd 0x85 0x02), the baseline none.
  const count = (file) => {
    const bytes = fs.readFileSync(path.join(PKG_DIR, file));
    let n = 0;
    for (let i = 0; i + 2 < bytes.length; i++) if (bytes[i] === 0xfd && bytes[i + 1] === 0x85 && bytes[i + 2] === 0x02) n++;
    return n;
  };
  assert.ok(count('skiff_relaxed_bg.wasm') > 0, 'the relaxed build uses relaxed_madd');
});
