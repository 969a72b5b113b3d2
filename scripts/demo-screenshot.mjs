#!/usr/bin/env node
// Regenerates the README's picture of the demo page (docs/demo.png): serves
// www/ like `npm start`, trains the MLP for a while in headless Chromium (whose
// only WebGPU adapter is SwiftShader, so the page trains on the cpu, as it
// would for a visitor without a GPU), draws a digit on the pad and takes a
// screenshot.
// Needs what the browser tests need (npm run build, npm run data, chromium).
import path from 'node:path';
import { PASSES, PKG_DIR, REPO, openSession } from '../tests/browser/lib/browser.mjs';
import { demoMounts } from './serve-demo.mjs';

const STEPS = Number(process.env.STEPS ?? 300);
const out = path.join(REPO, 'docs', 'demo.png');
const s = await openSession(PASSES.webgpu, {
  root: path.join(REPO, 'www'),
  mounts: demoMounts(REPO, PKG_DIR),
  pagePath: '/',
  viewport: { width: 1280, height: 860 },
});
try {
  const { page } = s;
  if (!(await page.evaluate(() => window.__demo.ready))) throw new Error(await page.textContent('#error-message'));
  await page.click('#train');
  await page.waitForFunction((n) => window.__demo.trainer.step >= n, STEPS, { timeout: 600_000 });
  await page.click('#train');
  await page.waitForFunction(() => window.__demo.trainer.state === 'paused');
  // A "3" drawn on the pad, as a visitor would.
  const box = await page.locator('#pad').boundingBox();
  const at = ([fx, fy]) => [box.x + fx * box.width, box.y + fy * box.height];
  await page.mouse.move(...at([0.33, 0.25]));
  await page.mouse.down();
  for (const p of [[0.5, 0.2], [0.64, 0.3], [0.55, 0.45], [0.45, 0.5], [0.58, 0.55], [0.66, 0.68], [0.52, 0.8], [0.33, 0.75]]) {
    await page.mouse.move(...at(p), { steps: 8 });
  }
  await page.mouse.up();
  await page.waitForFunction(() => document.getElementById('probs').dataset.top !== '');
  await page.screenshot({ path: out, fullPage: true });
  s.checkErrors();
  console.log(`wrote ${path.relative(REPO, out)} (step ${await page.evaluate(() => window.__demo.trainer.step)})`);
} finally {
  await s.close();
}
