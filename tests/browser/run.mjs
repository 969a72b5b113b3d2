#!/usr/bin/env node
// Runs the browser, Node, bundler and type suites (the same as
// `node --test tests/browser/`) with the spec reporter, after checking that
// pkg/ was built. Extra arguments go to `node --test`, e.g.
//   node tests/browser/run.mjs --test-name-pattern=autodiff
//   node tests/browser/run.mjs tests/browser/cpu.test.mjs
import { spawnSync } from 'node:child_process';
import { REPO, assertBuilt } from './lib/browser.mjs';

try {
  assertBuilt();
} catch (e) {
  console.error(e.message);
  process.exit(1);
}
const args = process.argv.slice(2);
const files = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-'));
const r = spawnSync(
  process.execPath,
  ['--test', '--test-reporter=spec', ...flags, ...(files.length ? files : ['tests/browser/'])],
  { cwd: REPO, stdio: 'inherit' },
);
process.exit(r.status ?? 1);
