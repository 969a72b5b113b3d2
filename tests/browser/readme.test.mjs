// The README's JavaScript example must run as written: it is extracted from
// README.md (the <script type="module"> block), pointed at the Node entry of
// the package, and run in a child Node process; it must learn XOR.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO, assertBuilt } from './lib/browser.mjs';

test('the README example runs in Node and learns XOR', () => {
  assertBuilt({ wrapper: true });
  const readme = fs.readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const block = readme.match(/<script type="module">\n([\s\S]*?)<\/script>/);
  assert.ok(block, 'README.md has no <script type="module"> example');
  const from = "'./node_modules/skiff-ml/web/index.js'";
  assert.ok(block[1].includes(from), `the example should import ${from}`);
  const code = block[1].replace(from, JSON.stringify(path.join(REPO, 'web/node.js')));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-readme-'));
  const file = path.join(dir, 'example.mjs');
  fs.writeFileSync(file, code);
  try {
    const out = execFileSync(process.execPath, [file], { encoding: 'utf8', timeout: 60_000 });
    const lines = out.trim().split('\n');
    assert.match(lines[0], /^cpu WebGPU is not available/, `first line: ${lines[0]}`);
    const losses = lines.filter((l) => /^\d+ [\d.e-]+$/.test(l)).map((l) => Number(l.split(' ')[1]));
    assert.equal(losses.length, 4, `four logged losses in:\n${out}`);
    assert.ok(losses[0] > 0.5 && losses[3] < 0.05, `the loss should fall from ~0.69 below 0.05: ${losses}`);
    assert.equal(lines.at(-1), '[ 0, 1, 1, 0 ]', `predictions: ${lines.at(-1)}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
