// A copy of the package as `npm install` leaves it in node_modules/skiff-ml:
// package.json plus the files its "files" list names (pkg/ taken from
// PKG_DIR, so a development build can stand in for pkg/).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PKG_DIR, REPO } from './browser.mjs';

/** Writes `<dir>/node_modules/skiff-ml`; returns its path. */
export function installPackage(dir) {
  const pkgDir = path.join(dir, 'node_modules/skiff-ml');
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
  fs.mkdirSync(pkgDir, { recursive: true });
  fs.copyFileSync(path.join(REPO, 'package.json'), path.join(pkgDir, 'package.json'));
  for (const entry of manifest.files) {
    const from = entry.startsWith('pkg/') ? path.join(PKG_DIR, entry.slice(4)) : path.join(REPO, entry);
    assert.ok(fs.existsSync(from), `package.json "files" names ${entry}, which does not exist`);
    fs.cpSync(from, path.join(pkgDir, entry), { recursive: true });
  }
  return pkgDir;
}

/**
 * The package's Node entry, as a Node test imports it: the package's own
 * name (it resolves to itself through its "exports") when PKG_DIR is pkg/,
 * else an installed copy of a development build (SKIFF_TEST_PKG_DIR) in a
 * temporary folder. Returns `{ skiff, entry, cleanup }` (`entry`: the URL
 * imported, for a child process to import too).
 */
export async function importForNode(prefix) {
  if (PKG_DIR === path.join(REPO, 'pkg')) {
    return { skiff: await import('skiff-ml'), entry: import.meta.resolve('skiff-ml'), cleanup: () => {} };
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const entry = pathToFileURL(path.join(installPackage(tmp), 'web/node.js')).href;
  const skiff = await import(entry);
  return { skiff, entry, cleanup: () => fs.rmSync(tmp, { recursive: true, force: true }) };
}
