// Shared harness of the browser tests: the two passes (WebGPU on SwiftShader,
// and cpu with WebGPU hidden), Chromium through playwright-core, a static
// server over the repo root, and capture of every page console error and
// uncaught exception (each fails the test during which it happened).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../../../scripts/lib/static-server.mjs';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const CHROMIUM = process.env.SKIFF_CHROMIUM ?? '/usr/bin/chromium';
// The build the suites load as /pkg/ (and install for Node): the test build,
// `npm run build:test` into pkg-test/, whose wasm has the exports behind the
// cargo feature web-testing (`testing.*`). SKIFF_TEST_PKG_DIR serves another
// wasm-bindgen output instead (e.g. SKIFF_PKG_DIR=/tmp/pkg-dev
// SKIFF_WASM_PROFILE=dev npm run build:test).
export const PKG_DIR = process.env.SKIFF_TEST_PKG_DIR ? path.resolve(process.env.SKIFF_TEST_PKG_DIR) : path.join(REPO, 'pkg-test');
// The published build (`npm run build`): what `npm pack` ships, what the
// consumer projects install and the type tests read.
export const PUBLISHED_PKG_DIR = path.join(REPO, 'pkg');

// TOOLCHAIN.md: without the networking flags Chromium floods the closed network.
const BASE_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const WEBGPU_ARGS = ['--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader'];

// Hides WebGPU from the page and its workers, as on a browser without it.
const HIDE_WEBGPU = `
  for (const C of [globalThis.Navigator, globalThis.WorkerNavigator]) {
    if (C && 'gpu' in C.prototype) delete C.prototype.gpu;
  }
  if (globalThis.navigator && 'gpu' in globalThis.navigator) {
    throw new Error('test harness: could not hide navigator.gpu');
  }
`;

/** The two passes every browser suite runs. */
export const PASSES = {
  webgpu: { name: 'webgpu', gpu: true, args: [...BASE_ARGS, ...WEBGPU_ARGS], initScript: null },
  cpu: { name: 'cpu', gpu: false, args: BASE_ARGS, initScript: HIDE_WEBGPU },
};

/**
 * Throws the "build first" error when the test build (with `published`, pkg/;
 * with `wrapper`, also web/) is missing.
 */
export function assertBuilt({ wrapper = false, published = false } = {}) {
  const dir = published ? PUBLISHED_PKG_DIR : PKG_DIR;
  const wasm = path.join(dir, 'skiff_bg.wasm');
  if (!fs.existsSync(wasm) || !fs.existsSync(path.join(dir, 'skiff.js'))) {
    const how = published ? 'npm run build' : process.env.SKIFF_TEST_PKG_DIR ? 'the build SKIFF_TEST_PKG_DIR names' : 'npm run build:test';
    throw new Error(`${wasm} is missing: run ${how} first`);
  }
  if (wrapper && !fs.existsSync(path.join(REPO, 'web/index.js'))) {
    throw new Error('web/index.js (the JS wrapper) is missing');
  }
}

/**
 * Starts a server over `root` (default: the repo root, or `mounts`, URL
 * prefix -> directory) and Chromium for `pass` (page size `viewport`), and
 * opens `pagePath`. Resolves to a session:
 *   page, url, server, browser,
 *   call(fn, ...args): runs `window.__suite[fn](...args)` in the page,
 *   checkErrors(): throws (and clears) when the page logged a console error
 *     or threw an uncaught exception since the last check,
 *   close().
 */
export async function openSession(
  pass,
  { root = REPO, pagePath = '/tests/browser/pages/index.html', mounts = null, viewport = null } = {},
) {
  if (!mounts) mounts = root === REPO && PKG_DIR !== path.join(REPO, 'pkg') ? { '/pkg/': PKG_DIR } : {};
  const server = await serve(root, { mounts });
  let browser;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: pass.args });
  } catch (e) {
    await server.close();
    throw e;
  }
  const context = await browser.newContext(viewport ? { viewport } : {});
  if (pass.initScript) await context.addInitScript({ content: pass.initScript });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') {
      const loc = msg.location();
      errors.push(`console.error: ${msg.text()}${loc?.url ? ` (${loc.url}:${loc.lineNumber})` : ''}`);
    }
  });
  page.on('pageerror', (e) => errors.push(`uncaught exception: ${e.stack || e.message}`));
  page.on('crash', () => errors.push('the page crashed'));
  page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()} (${r.failure()?.errorText})`));

  const session = {
    pass,
    page,
    browser,
    server,
    url: server.url + pagePath,
    errors,
    checkErrors() {
      if (errors.length) {
        const list = errors.splice(0);
        throw new Error(`the page reported ${list.length} error(s):\n  ${list.join('\n  ')}`);
      }
    },
    async call(fn, ...args) {
      let result;
      let failure = null;
      try {
        result = await page.evaluate(
          ([f, a]) => {
            if (!window.__suite) throw new Error('the test page did not load (window.__suite is unset)');
            if (typeof window.__suite[f] !== 'function') throw new Error(`the test page exports no ${f}()`);
            return window.__suite[f](...a);
          },
          [fn, args],
        );
      } catch (e) {
        // Keep the page's message; drop playwright's "page.evaluate: " prefix.
        // (and the page-side stack, which playwright appends to the message).
        // The first frame in the test pages, if any, says where the page failed.
        const [head, ...frames] = String(e.message)
          .replace(/^page\.evaluate: (Error: )?/, '')
          .split(/\n\s+at /);
        const ours = frames.find((f) => f.includes('/tests/browser/pages/'));
        const msg = head.trimEnd() + (ours ? `\n    at ${ours.split('\n')[0]}` : '');
        failure = new Error(msg);
        failure.stack = failure.message;
      }
      if (errors.length) {
        const list = errors.splice(0);
        const msg = `the page reported ${list.length} error(s):\n  ${list.join('\n  ')}`;
        throw new Error(failure ? `${failure.message}\n${msg}` : msg);
      }
      if (failure) throw failure;
      return result;
    },
    async close() {
      await browser.close().catch(() => {});
      await server.close();
    },
  };
  try {
    await page.goto(session.url, { waitUntil: 'load' });
  } catch (e) {
    await session.close();
    throw e;
  }
  return session;
}

/**
 * Loads the page module `modulePath` (an absolute URL path) into the
 * session's page as `window.__suite` and runs its `setup(passName)` if any.
 */
export async function loadSuite(session, modulePath) {
  await session.page.evaluate(async (p) => {
    window.__suite = await import(p);
  }, modulePath);
  session.checkErrors();
}

