// The size of the published .wasm files (`npm run build`, pkg/): every user
// downloads one of them, and size creeps in unnoticed (the registry's test
// cases were once compiled into the published build). Each file must stay
// within BUDGET, raw and gzipped (Node's zlib at level 9, which comes out a
// few KB above `gzip -9`; roughly what a server's compression gives).
//
// BUDGET is MEASURED plus a margin of about 3%: room for ordinary changes and
// compiler updates, while a regression of the kind seen before (test cases or
// the name section shipped again: about 7% and 9% of today's file) fails. A
// change that grows the package on purpose raises both numbers in the same
// commit and says why in its message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { PUBLISHED_PKG_DIR, assertBuilt } from './lib/browser.mjs';

/** Bytes of the larger of the two builds when the budget was last set. */
const MEASURED = { raw: 2_577_962, gzip: 909_776 };
/** The most each published .wasm may weigh. */
const BUDGET = { raw: 2_655_000, gzip: 937_000 };

const FILES = ['skiff_bg.wasm', 'skiff_relaxed_bg.wasm'];

test('each published .wasm stays within the size budget', () => {
  assertBuilt({ published: true });
  const over = [];
  for (const name of FILES) {
    const bytes = fs.readFileSync(path.join(PUBLISHED_PKG_DIR, name));
    const size = { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
    for (const kind of ['raw', 'gzip']) {
      if (size[kind] > BUDGET[kind]) over.push(`pkg/${name} is ${size[kind]} bytes ${kind}, over its budget of ${BUDGET[kind]}`);
    }
  }
  assert.deepEqual(
    over,
    [],
    `measured ${JSON.stringify(MEASURED)} when the budget was set (tests/browser/wasm-size.test.mjs). ` +
      'Find what grew with `twiggy top` on a build that keeps its names (npm run build:test); ' +
      'a SKIFF_WASM_PROFILE=dev build is larger and is not what the budget is for',
  );
});
