// Random draws in wasm give the native build's exact bits. A random fill is a
// kernel spec whose element i depends only on its seed and i, computed from
// IEEE basic operations (no libm), so the cpu natively, the cpu in wasm and a
// GPU agree bit for bit. tests/core/creation_specs.rs pins the native draws to
// these fingerprints (FNV-1a over each value's bits); here the wasm build
// (the package in Node) must reproduce them.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertBuilt } from './lib/browser.mjs';
import { importForNode } from './lib/package.mjs';

// The same table as KNOWN_ANSWERS in tests/core/creation_specs.rs.
const KNOWN_ANSWERS = {
  'randn f64': 0x66953ccbbe4eae84n,
  'rand f32': 0x034a08855b1ca875n,
  randint: 0xc5ff94313bdad23bn,
  'randn f32': 0x03348b410d22d1a8n,
};

const MASK = (1n << 64n) - 1n;

/** FNV-1a over 64-bit words (each a value's bit pattern, zero-extended). */
function fingerprint(words) {
  let h = 0xcbf29ce484222325n;
  for (const w of words) h = ((h ^ w) * 0x100000001b3n) & MASK;
  return h;
}

const bits64 = (a) => Array.from(new BigUint64Array(a.buffer, a.byteOffset, a.length));
const bits32 = (a) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length), (w) => BigInt(w));

describe('random draws in wasm match the native build bit for bit', { timeout: 120_000 }, () => {
  let skiff;
  let cleanup = () => {};
  before(async () => {
    assertBuilt({ wrapper: true });
    ({ skiff, cleanup } = await importForNode('skiff-random-'));
    await skiff.init({ device: 'cpu' });
  });
  after(() => cleanup());

  test('manualSeed(2025), then randn f64, rand f32, randint, randn f32', async () => {
    skiff.manualSeed(2025);
    const n = [1 << 16];
    const z = await skiff.randn(n, { dtype: 'float64' }).data();
    const r = await skiff.rand(n).data();
    const i = await skiff.randint(-1000, 1000, n).data();
    const u = await skiff.randn(n).data();
    assert.ok(z instanceof Float64Array && r instanceof Float32Array && i instanceof Int32Array);
    const got = {
      'randn f64': fingerprint(bits64(z)),
      'rand f32': fingerprint(bits32(r)),
      randint: fingerprint(bits32(i)),
      'randn f32': fingerprint(bits32(u)),
    };
    for (const [name, want] of Object.entries(KNOWN_ANSWERS)) {
      assert.equal(got[name], want, `${name}: fingerprint 0x${got[name].toString(16)}`);
    }
  });
});
