// Consumer projects for tests/browser/consumers.test.mjs: the package packed
// by `npm pack` and installed by `npm install` into a temporary project, the
// README's example (or the guide's worker example) as the project's code,
// and a Chromium page whose console is read like a user reads the devtools.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM, REPO } from './browser.mjs';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/**
 * `npm pack` of the repository (pkg/, the published build, as built: the
 * scripts are skipped, the suite runs after `npm run build`) into a temporary
 * folder. Returns `{ tarball, files, cleanup }`; `files` lists the tarball's paths.
 */
export function packPackage() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-pack-'));
  const out = execFileSync(NPM, ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], {
    cwd: REPO,
    encoding: 'utf8',
  });
  const [info] = JSON.parse(out);
  return {
    tarball: path.join(dir, info.filename),
    files: info.files.map((f) => f.path),
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * A new project in a temporary folder: the fixture `template` (a folder under
 * tests/browser/consumers/, or null), then `files` (path -> text), then
 * `npm install <tarball>` as a user would (offline: the package has no
 * dependencies). Returns the folder.
 */
export function makeProject(tarball, template, files = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-consumer-'));
  if (template) fs.cpSync(path.join(REPO, 'tests/browser/consumers', template), dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  // The bundlers are driven through their JS APIs from the repository's
  // node_modules: leave the template's devDependencies out of this install.
  const manifest = path.join(dir, 'package.json');
  if (fs.existsSync(manifest)) {
    const m = JSON.parse(fs.readFileSync(manifest, 'utf8'));
    delete m.devDependencies;
    fs.writeFileSync(manifest, JSON.stringify(m, null, 2));
  }
  execFileSync(NPM, ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  assert.ok(fs.existsSync(path.join(dir, 'node_modules/skiff-ml/package.json')), 'npm installed skiff-ml');
  return dir;
}

// The whole programs the docs show, found by their first line (tests/core/readme.rs
// checks that every ```js block of the docs is one of these or an excerpt).
const XOR_EXAMPLE = { page: 'README.md', first: '// main.js: an MLP learns XOR, trained with Adam.' };
const WORKER_EXAMPLE = {
  page: 'docs/workers.md',
  worker: '// train-worker.js: skiff in a dedicated worker, with its own device.',
  main: '// main.js (the page): starts the worker, shows what it reports, predicts with its weights.',
};

/** The ```js block of `page` whose first line is `first`. */
function jsBlock(page, first) {
  const text = fs.readFileSync(path.join(REPO, page), 'utf8');
  const block = [...text.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.startsWith(`${first}\n`));
  assert.ok(block, `${page} has no \`\`\`js block starting with ${first}`);
  return block;
}

/** The README's `main.js` example (the ```js block that trains XOR). */
export function readmeExample() {
  return jsBlock(XOR_EXAMPLE.page, XOR_EXAMPLE.first);
}

/** The guide's Web Worker example (docs/workers.md): `{ page, worker }` (main.js and train-worker.js). */
export function workerExample() {
  return { page: jsBlock(WORKER_EXAMPLE.page, WORKER_EXAMPLE.main), worker: jsBlock(WORKER_EXAMPLE.page, WORKER_EXAMPLE.worker) };
}

/** The example as CommonJS: the README says to swap the import for require(). */
export function asCommonJs(example) {
  const from = "import * as skiff from 'skiff-ml';";
  assert.ok(example.includes(from), `the README example starts with ${from}`);
  return example.replace(from, "const skiff = require('skiff-ml');");
}

/**
 * Checks what the example printed (lines in order): the backend, four falling
 * losses, the XOR predictions and the size of the state dict.
 */
export function assertLearnedXor(lines, device) {
  const text = lines.join('\n');
  assert.match(lines[0] ?? '', new RegExp(`^skiff on ${device}: `), `first line:\n${text}`);
  const losses = lines.map((l) => l.match(/^step \d+: loss ([\d.]+)$/)).filter(Boolean).map((m) => Number(m[1]));
  assert.equal(losses.length, 4, `four logged losses in:\n${text}`);
  assert.ok(losses[0] > 0.5 && losses[3] < 0.05, `the loss falls from ~0.69 below 0.05: ${losses}`);
  assert.ok(lines.includes('predictions: 0, 1, 1, 0'), `XOR learned:\n${text}`);
  const dict = lines.map((l) => l.match(/^state dict: (\d+) bytes$/)).find(Boolean);
  assert.ok(dict && Number(dict[1]) > 16 * 2 * 4, `a state dict with the weights:\n${text}`);
}

/**
 * Opens `url` in headless Chromium (`pass` from PASSES) and resolves to the
 * page's console.log lines once one starts with `until`. Any console error,
 * uncaught exception or failed request rejects, with what the page said.
 */
export async function runPage(pass, url, { until = 'state dict:', timeout = 90_000 } = {}) {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: pass.args });
  try {
    const context = await browser.newContext();
    if (pass.initScript) await context.addInitScript({ content: pass.initScript });
    const page = await context.newPage();
    const lines = [];
    const errors = [];
    let done;
    const finished = new Promise((resolve) => {
      done = resolve;
    });
    page.on('console', (msg) => {
      if (msg.type() === 'error') {
        errors.push(`console.error: ${msg.text()}`);
        done();
      } else if (msg.type() === 'log') {
        lines.push(msg.text());
        if (msg.text().startsWith(until)) done();
      }
    });
    page.on('pageerror', (e) => {
      errors.push(`uncaught exception: ${e.stack || e.message}`);
      done();
    });
    page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()} (${r.failure()?.errorText})`));
    page.on('response', (r) => {
      if (r.status() >= 400) errors.push(`HTTP ${r.status()}: ${r.url()}`);
    });
    await page.goto(url, { waitUntil: 'load' });
    let timer;
    const timedOut = new Promise((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeout);
    });
    const outcome = await Promise.race([finished, timedOut]);
    clearTimeout(timer);
    if (errors.length || outcome === 'timeout') {
      const why = outcome === 'timeout' ? [`no "${until}" line within ${timeout} ms`] : [];
      throw new Error(`${url}:\n  ${[...why, ...errors].join('\n  ')}\nconsole:\n  ${lines.join('\n  ')}`);
    }
    return lines;
  } finally {
    await browser.close();
  }
}
