// tests/types/usage.ts must type-check against the package's declarations
// (web/index.d.ts through package.json "exports").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO, assertBuilt } from './lib/browser.mjs';

test('tests/types/usage.ts type-checks against web/index.d.ts', { timeout: 120_000 }, async () => {
  assertBuilt({ published: true }); // web/index.d.ts builds on pkg/skiff.d.ts
  assert.ok(fs.existsSync(path.join(REPO, 'web/index.d.ts')), 'web/index.d.ts (the package types) is missing');
  const tsc = path.join(REPO, 'node_modules/typescript/bin/tsc');
  const { code, out } = await new Promise((resolve) => {
    execFile(
      process.execPath,
      [tsc, '--noEmit', '-p', 'tests/types/tsconfig.json', '--pretty', 'false'],
      { cwd: REPO, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
  assert.equal(code, 0, `tsc --noEmit -p tests/types/tsconfig.json failed:\n${out}`);
});
