// tests/types/cjs/usage.cts (a CommonJS TypeScript project: require()) must
// type-check against the package's CommonJS declarations (pkg/node.d.cts,
// written by npm run build from web/index.d.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { REPO, assertBuilt } from './lib/browser.mjs';

test('tests/types/cjs/usage.cts type-checks through require()', { timeout: 120_000 }, async () => {
  assertBuilt({ published: true });
  const tsc = path.join(REPO, 'node_modules/typescript/bin/tsc');
  const args = [tsc, '--noEmit', '-p', 'tests/types/cjs/tsconfig.json', '--pretty', 'false', '--traceResolution'];
  const { code, out } = await new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: REPO, maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      resolve({ code: err ? (err.code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
  const errors = out.split('\n').filter((l) => /error TS/.test(l));
  assert.equal(code, 0, `tsc failed:\n${errors.join('\n')}`);
  assert.match(out, /Module name 'skiff-ml' was successfully resolved to '[^']*\/pkg\/node\.d\.cts'/);
});
