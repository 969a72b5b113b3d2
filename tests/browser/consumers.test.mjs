// The package as its users get it: `npm pack`, then `npm install <tarball>`
// into new projects (tests/browser/consumers/), each running the README's
// example unchanged: Node (ESM and CommonJS), a page without a bundler, Vite's
// dev server and `vite build` on a `npm create vite` project with no config,
// and webpack 5 with no config in production and development mode; and the
// guide's Web Worker example (docs/workers.md) under Vite.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createServer } from 'vite';
import webpack from 'webpack';
import { PASSES, REPO, assertBuilt } from './lib/browser.mjs';
import { asCommonJs, assertLearnedXor, makeProject, packPackage, readmeExample, workerExample, runPage } from './lib/consumer.mjs';
import { serve } from '../../scripts/lib/static-server.mjs';

let pack;
let example;
const projects = [];
const project = (...args) => {
  const dir = makeProject(pack.tarball, ...args);
  projects.push(dir);
  return dir;
};

before(() => {
  assertBuilt({ wrapper: true, published: true });
  pack = packPackage();
  example = readmeExample();
});
after(() => {
  pack?.cleanup();
  for (const dir of projects) fs.rmSync(dir, { recursive: true, force: true });
});

test('the tarball holds the package, its docs and what they show, nothing else', () => {
  const files = new Set(pack.files);
  for (const f of ['package.json', 'README.md', 'LICENSE-MIT', 'LICENSE-APACHE', 'web/index.js', 'web/dev.js', 'web/node.js',
    'web/index.d.ts', 'pkg/skiff.js', 'pkg/skiff_bg.wasm', 'pkg/skiff.d.ts', 'pkg/node.cjs', 'pkg/skiff_bg.wasm.base64.js']) {
    assert.ok(files.has(f), `the tarball lacks ${f}`);
  }
  for (const f of files) {
    assert.match(f, /^(web\/|pkg\/|docs\/|package\.json$|README\.md$|LICENSE-)/, `the tarball should not ship ${f}`);
  }
  // The README and the guide's pages ship, with the pictures they show.
  const pages = [...files].filter((f) => f.endsWith('.md'));
  assert.ok(pages.includes('docs/README.md') && pages.length > 10, `the guide ships: ${pages}`);
  let images = 0;
  for (const page of pages) {
    const text = fs.readFileSync(path.join(REPO, page), 'utf8');
    for (const [, url] of text.matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)) {
      if (/^https?:/.test(url)) continue;
      const img = path.posix.join(path.posix.dirname(page), url);
      assert.ok(files.has(img), `${page} shows ${img}, which is not in the tarball`);
      images++;
    }
  }
  assert.ok(images >= 2, 'the README and the demo page show the demo');
  // Every file the package's exports name is in the tarball.
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
  // The files are the values (conditions nest); the keys are subpaths ('./worker').
  const leaves = (v) => (typeof v === 'string' ? [v] : Object.values(v).flatMap(leaves));
  const targets = leaves(manifest.exports).map((t) => t.replace(/^\.\//, ''));
  assert.ok(targets.includes('web/worker.js') && targets.includes('web/worker.d.ts'), `the worker entry is exported: ${targets}`);
  for (const t of [...targets, manifest.main.slice(2), manifest.types.slice(2)]) {
    assert.ok(files.has(t), `package.json names ${t}, which is not in the tarball`);
  }
});

test('the published build carries no test exports (the cargo feature web-testing is off)', () => {
  // What the glue of a build with web-testing exports (npm run build:test): the registry checks,
  // the WGSL sources, loseDevice and the benchmark.
  const testOnly = ['registryCases', 'checkCase', 'caseData', 'kernelSources', 'compiledKernels', 'loseDevice', 'benchMatmul', 'forwardDigests'];
  const glue = fs.readFileSync(path.join(REPO, 'pkg/skiff.js'), 'utf8');
  const exported = new Set([...glue.matchAll(/^export (?:async )?function (\w+)/gm)].map((m) => m[1]));
  assert.ok(exported.has('layerTable') && exported.size > 20, `the glue's exports are readable (found ${exported.size})`);
  assert.deepEqual(testOnly.filter((name) => exported.has(name)), [], 'test-only exports in the published pkg/skiff.js');
  assert.match(glue, /^export const LAYER_TABLE = /m, 'npm run build wrote the layer table into the glue');
});

describe('Node', () => {
  const run = (dir) =>
    execFileSync(process.execPath, ['main.js'], { cwd: dir, encoding: 'utf8', timeout: 60_000 }).trim().split('\n');

  test('ES module: import * as skiff from "skiff-ml"', () => {
    const dir = project(null, {
      'package.json': JSON.stringify({ name: 'node-esm-app', private: true, type: 'module' }),
      'main.js': example,
    });
    assertLearnedXor(run(dir), 'cpu');
  });

  test('CommonJS: require("skiff-ml")', () => {
    const dir = project(null, {
      'package.json': JSON.stringify({ name: 'node-cjs-app', private: true }),
      'main.js': asCommonJs(example),
    });
    assertLearnedXor(run(dir), 'cpu');
  });
});

describe('a page without a bundler (import map, cpu pass)', { timeout: 120_000 }, () => {
  test('trains', async () => {
    const dir = project('plain', { 'main.js': example });
    const server = await serve(dir);
    try {
      assertLearnedXor(await runPage(PASSES.cpu, `${server.url}/index.html`), 'cpu');
    } finally {
      await server.close();
    }
  });
});

/**
 * `vite build` in `dir`: the CLI in its own process, as `npm run build` runs
 * it (this process's NODE_ENV is 'development' once a dev server ran in it).
 * Returns the files under dist/assets.
 */
function viteBuild(dir) {
  const env = { ...process.env };
  delete env.NODE_ENV;
  execFileSync(process.execPath, [path.join(REPO, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], {
    cwd: dir,
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return fs.readdirSync(path.join(dir, 'dist/assets'));
}

describe('Vite 6 (npm create vite, no config)', { timeout: 240_000 }, () => {
  let dir;
  before(() => {
    dir = project('vite', { 'src/main.js': example });
  });

  test('dev server (WebGPU pass): the pre-bundled package finds its wasm', async () => {
    const server = await createServer({ root: dir, logLevel: 'warn', server: { host: '127.0.0.1', port: 0 } });
    try {
      await server.listen();
      assertLearnedXor(await runPage(PASSES.webgpu, server.resolvedUrls.local[0]), 'webgpu');
      const deps = path.join(dir, 'node_modules/.vite/deps');
      assert.ok(
        fs.readdirSync(deps).some((f) => f.startsWith('skiff-ml')),
        'Vite pre-bundled skiff-ml (the case that lost the .wasm)',
      );
    } finally {
      await server.close();
    }
  });

  test('vite build (cpu pass): the wasm is an asset, not inlined', async () => {
    const assets = viteBuild(dir);
    assert.ok(assets.some((f) => f.endsWith('.wasm')), `the .wasm is emitted as an asset: ${assets}`);
    for (const f of assets.filter((a) => a.endsWith('.js'))) {
      const size = fs.statSync(path.join(dir, 'dist/assets', f)).size;
      assert.ok(size < 1_000_000, `${f} is ${size} bytes: the production bundle must not inline the wasm`);
    }
    const server = await serve(path.join(dir, 'dist'));
    try {
      assertLearnedXor(await runPage(PASSES.cpu, `${server.url}/index.html`), 'cpu');
    } finally {
      await server.close();
    }
  });
});

describe('Vite 6, training in a Web Worker (the guide\'s example, docs/workers.md, no config)', { timeout: 240_000 }, () => {
  let dir;
  before(() => {
    const { page, worker } = workerExample();
    dir = project('vite', { 'src/main.js': page, 'src/train-worker.js': worker });
  });

  test('dev server (WebGPU pass): the worker trains on its own device', async () => {
    const server = await createServer({ root: dir, logLevel: 'warn', server: { host: '127.0.0.1', port: 0 } });
    try {
      await server.listen();
      assertLearnedXor(await runPage(PASSES.webgpu, server.resolvedUrls.local[0]), 'webgpu');
    } finally {
      await server.close();
    }
  });

  test('vite build (cpu pass): the worker is bundled with skiff, its wasm an asset', async () => {
    const assets = viteBuild(dir);
    assert.ok(assets.some((f) => f.startsWith('train-worker') && f.endsWith('.js')), `the worker is its own bundle: ${assets}`);
    assert.ok(assets.some((f) => f.endsWith('.wasm')), `the .wasm is an asset: ${assets}`);
    const server = await serve(path.join(dir, 'dist'));
    try {
      assertLearnedXor(await runPage(PASSES.cpu, `${server.url}/index.html`), 'cpu');
    } finally {
      await server.close();
    }
  });
});

describe('webpack 5 (no config)', { timeout: 240_000 }, () => {
  /** `webpack --mode <mode>` in `dir`: what the CLI does without a config file. */
  async function bundle(dir, mode) {
    const compiler = webpack({ mode, context: dir, output: { path: path.join(dir, 'dist') } });
    const stats = await new Promise((resolve, reject) => compiler.run((e, s) => (e ? reject(e) : resolve(s))));
    await new Promise((resolve) => compiler.close(resolve));
    assert.ok(!stats.hasErrors(), stats.toString('errors-only'));
    return fs.readdirSync(path.join(dir, 'dist'));
  }

  for (const [mode, pass] of [['production', PASSES.webgpu], ['development', PASSES.cpu]]) {
    test(`${mode} mode (${pass.name} pass)`, async () => {
      const dir = project('webpack', { 'src/index.js': example });
      const out = await bundle(dir, mode);
      assert.ok(out.includes('main.js'), `dist/: ${out}`);
      if (mode === 'production') assert.ok(out.some((f) => f.endsWith('.wasm')), `the .wasm is an asset: ${out}`);
      const server = await serve(path.join(dir, 'dist'));
      try {
        assertLearnedXor(await runPage(pass, `${server.url}/index.html`), pass.gpu ? 'webgpu' : 'cpu');
      } finally {
        await server.close();
      }
    });
  }
});
