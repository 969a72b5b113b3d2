// The live-training demo page (www/), tested as a user would use it, once per
// pass (demo-webgpu.test.mjs, demo-cpu.test.mjs): it is served with the same
// URL layout as `npm start`, then trained, drawn on, saved, reloaded and
// broken. Every test also fails on a page console error.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { PASSES, PKG_DIR, REPO, assertBuilt, openSession } from './browser.mjs';
import { demoMounts, missingFiles } from '../../../scripts/serve-demo.mjs';

export const ARTIFACTS = path.join(REPO, 'target', 'browser-artifacts');
// Enough MLP steps for > 80% test accuracy with Adam at lr 0.001, batch 64
// (about 90% after 100 steps); an evaluation runs every 50 steps.
const STEPS = 150;
const T = { timeout: 180_000 };

/** The safetensors header of `bytes`: { name: { dtype, shape } }. */
function safetensorsHeader(bytes) {
  const n = Number(Buffer.from(bytes).readBigUInt64LE(0));
  const header = JSON.parse(Buffer.from(bytes.subarray(8, 8 + n)).toString('utf8'));
  delete header.__metadata__;
  return header;
}

export function defineDemoPass(passName) {
  const pass = PASSES[passName];
  describe(`demo page (${pass.name} pass)`, { timeout: 900_000 }, () => {
    let s;
    let page;
    const demo = (fn, arg) => page.evaluate(fn, arg);
    const state = () =>
      demo(() => {
        const d = window.__demo;
        return { step: d.trainer.step, state: d.trainer.state, evals: d.evals, lastEval: d.lastEval, history: d.trainer.history };
      });
    const ready = async () => {
      assert.equal(await demo(() => window.__demo.ready), true, `the page started: ${await page.textContent('#status')}`);
    };
    /** The elements of the Train card that stick out of it (labels and stats cut off or spilling over), as names. */
    const outsideControls = () =>
      demo(() => {
        const card = document.querySelector('.controls').getBoundingClientRect();
        return [...document.querySelectorAll('.controls *')]
          .filter((e) => e.getClientRects().length && e.getBoundingClientRect().right > card.right + 0.5)
          .map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}: "${e.textContent.slice(0, 40)}"`);
      });
    /**
     * The selects of the Train card whose longest option does not fit the
     * box (its text measured in the select's font against the width left by
     * the padding and the drop-down arrow), as "id: option".
     */
    const cutSelects = () =>
      demo(() => {
        const ctx = document.createElement('canvas').getContext('2d');
        const cut = [];
        for (const sel of document.querySelectorAll('.controls select')) {
          const cs = getComputedStyle(sel);
          ctx.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
          const room = sel.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20; // the arrow
          for (const o of sel.options) if (ctx.measureText(o.text).width > room) cut.push(`${sel.id}: ${o.text}`);
        }
        return cut;
      });
    /** Clicks Train and waits until `steps` steps and the evaluation after them have run, then pauses. */
    const trainFor = async (steps) => {
      const evals = (await state()).evals;
      await page.click('#train');
      await page.waitForFunction(
        ([n, e]) => window.__demo.trainer.step >= n && window.__demo.evals > e + (n >= 50 ? 0 : -1),
        [steps, evals],
        { timeout: 150_000, polling: 100 },
      );
      await page.click('#train');
      await page.waitForFunction(() => window.__demo.trainer.state === 'paused', null, { timeout: 60_000 });
      // The worker evaluates and checkpoints where it paused. What the page
      // says it kept, as the pause resolves:
      return demo(async () => {
        await window.__demo.trainer.paused;
        return document.getElementById('saved').textContent;
      });
    };

    before(async () => {
      assertBuilt({ wrapper: true });
      const missing = missingFiles(REPO, PKG_DIR);
      if (missing.length) throw new Error(`the demo needs: ${missing.join(', ')}`);
      fs.mkdirSync(ARTIFACTS, { recursive: true });
      s = await openSession(pass, {
        root: path.join(REPO, 'www'),
        mounts: demoMounts(REPO, PKG_DIR),
        // SwiftShader is slower than the cpu, so the page trains on the cpu
        // unless asked for WebGPU (checked last, on '/').
        pagePath: pass.gpu ? '/?device=webgpu' : '/',
        viewport: { width: 1280, height: 900 },
      });
      page = s.page;
    });
    after(() => s?.close());

    test('loads with no console errors and names its backend', T, async () => {
      await ready();
      const badge = await page.textContent('#backend');
      const detail = await page.textContent('#backend-detail');
      if (pass.gpu) {
        assert.equal(badge, 'WebGPU');
        assert.match(detail, /swiftshader/i, 'the adapter name');
        assert.match(detail, /software GPU: the cpu fallback is faster here/, 'the hint for a software adapter');
      } else {
        assert.equal(badge, 'cpu fallback');
        assert.match(detail, /navigator\.gpu/, 'the reason for the fallback');
      }
      // The untrained model is already evaluated: the grid shows its guesses.
      assert.equal(await page.locator('#samples figure').count(), 24);
      assert.equal(await page.getAttribute('#samples', 'data-step'), '0');
      assert.equal((await state()).state, 'idle');
      assert.equal(await page.textContent('#train'), 'Train');
      s.checkErrors();
    });

    test(`a short MLP run (${STEPS} steps) makes the loss fall and the test accuracy pass 80%`, T, async () => {
      const before = await state();
      assert.ok(before.lastEval.acc < 0.3, `an untrained model is near chance: ${before.lastEval.acc}`);
      const chartPoints = async (id) => Number(await page.getAttribute(`#${id} [data-points]`, 'data-points'));
      const pointsBefore = await chartPoints('chart-loss');
      await trainFor(STEPS);
      const after = await state();
      const losses = after.history.trainLoss.map(([, v]) => v);
      const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
      assert.ok(losses.length >= STEPS / 10, `a loss every 10 steps: ${losses.length}`);
      assert.ok(mean(losses.slice(-3)) < 0.5 * mean(losses.slice(0, 3)), `the loss falls: ${losses.map((v) => v.toFixed(3))}`);
      assert.ok(after.lastEval.step >= STEPS, `evaluated after step ${STEPS}: ${after.lastEval.step}`);
      assert.ok(after.lastEval.acc > 0.8, `test accuracy ${after.lastEval.acc}`);
      assert.equal(after.history.testAcc.at(-1)[1], after.lastEval.acc);
      // What the page shows follows: stats, charts, grid, weights.
      assert.equal(await page.textContent('#stat-acc'), `${(100 * after.lastEval.acc).toFixed(1)}%`);
      assert.match(await page.textContent('#stat-speed'), /^[\d,]+$/, 'samples per second');
      assert.ok((await chartPoints('chart-loss')) > pointsBefore + STEPS / 10, 'the loss chart grew');
      assert.ok((await chartPoints('chart-acc')) > STEPS / 10, 'the accuracy chart grew');
      assert.equal(await page.getAttribute('#samples', 'data-step'), String(after.lastEval.step));
      const wrong = Number(await page.getAttribute('#samples', 'data-wrong'));
      assert.equal(await page.locator('#samples figure.wrong').count(), wrong);
      assert.ok(wrong <= 8, `${wrong} of 24 grid digits wrong at ${after.lastEval.acc} accuracy`);
      assert.equal(await page.getAttribute('#weights', 'data-step'), String(after.lastEval.step));
      assert.equal(await page.textContent('#train'), 'Resume');
      // The model summary: each layer's output shape and parameters.
      const summary = await demo(() => window.__demo.summary);
      assert.deepEqual(
        summary.rows.map((r) => [r.type, r.shape.join(','), r.params]),
        [['Linear', 'N,128', 784 * 128 + 128], ['ReLU', 'N,128', 0], ['Linear', 'N,10', 128 * 10 + 10]],
      );
      assert.equal(await page.textContent('#summary-total'), (784 * 128 + 128 + 128 * 10 + 10).toLocaleString('en'));
      // The confusion matrix and per-class accuracy of the same evaluation, and its worst mistakes.
      const results = await demo(() => window.__demo.results);
      assert.equal(results.step, after.lastEval.step);
      const counted = results.matrix.flat().reduce((a, b) => a + b, 0);
      const right = results.matrix.reduce((n, row, i) => n + row[i], 0);
      assert.equal(counted, 2000, 'every test digit counted once');
      assert.equal(right / 2000, after.lastEval.acc, 'the diagonal is the accuracy');
      assert.equal(await page.locator('#confusion tr').count(), 11);
      assert.equal(await page.locator('#confusion td.acc').count(), 10);
      assert.equal(results.mistakes.length, 8);
      assert.ok(results.mistakes.every((m, i) => m.guess !== m.label && (!i || m.confidence <= results.mistakes[i - 1].confidence)));
      const captions = await page.locator('#mistakes figcaption').allTextContents();
      assert.equal(captions[0], `${results.mistakes[0].guess} (${Math.round(100 * results.mistakes[0].confidence)}%), is ${results.mistakes[0].label}`);
      await page.screenshot({ path: path.join(ARTIFACTS, `demo-${pass.name}.png`), fullPage: true });
      s.checkErrors();
    });

    test('the Compiled switch trains through skiff.jit, reports its program and speed, and hands back to eager mid-run', T, async () => {
      const program = () =>
        demo(() => {
          const { jitStep } = window.__demo.trainer;
          const el = document.getElementById('stat-jit');
          return {
            captures: jitStep.captures,
            replays: jitStep.replays,
            kernels: jitStep.kernels,
            log: jitStep.log,
            shown: { text: el.textContent, ...el.dataset },
          };
        });
      /** Clicks the switch; the worker applies it between two steps and says what had run by then. */
      const toggle = () =>
        demo(() => {
          document.getElementById('compiled').click();
          return window.__demo.trainer.modeSwitch;
        });
      const waitSteps = (n) => page.waitForFunction((k) => window.__demo.trainer.step >= k, n, { timeout: 150_000, polling: 50 });
      const pause = async () => {
        await page.click('#train');
        await page.waitForFunction(() => window.__demo.trainer.state === 'paused', null, { timeout: 60_000 });
        await demo(() => window.__demo.trainer.paused); // the last steps' losses are logged
      };

      // Switched on before Reset: the fresh model gets a fresh compiled step.
      assert.equal(await page.isChecked('#compiled'), false, 'eager by default');
      await page.check('#compiled');
      await page.click('#reset');
      await page.waitForFunction(() => window.__demo.trainer.step === 0 && window.__demo.lastEval.step === 0);
      assert.deepEqual((await program()).shown, { text: 'not captured yet', kernels: '0', captures: '0', replays: '0' });

      // 100 compiled steps from scratch learn as the eager run above does.
      await trainFor(100);
      const compiledRun = await state();
      const losses = compiledRun.history.trainLoss.map(([, v]) => v);
      const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
      assert.ok(mean(losses.slice(-3)) < 0.5 * mean(losses.slice(0, 3)), `the loss falls: ${losses.map((v) => v.toFixed(3))}`);
      assert.ok(compiledRun.lastEval.acc > 0.8, `test accuracy ${compiledRun.lastEval.acc} after ${compiledRun.lastEval.step} steps`);
      const p1 = await program();
      // Every step went through the compiled function: a fresh Adam's first
      // call is captured and not kept (it creates the optimizer's state), the
      // second captures the steady step, every later one replays it.
      assert.equal(p1.captures + p1.replays, compiledRun.step, 'every step ran compiled');
      assert.equal(p1.captures, 2, `captures: ${p1.log}`);
      assert.match(p1.log[0], /call 1: captured/);
      assert.ok(p1.kernels > 20, `kernels per step of an Adam step of a 2-layer MLP: ${p1.kernels}`);
      assert.deepEqual(p1.shown, {
        text: `${p1.kernels} kernels per step, 2 captures, ${p1.replays} replays`,
        kernels: String(p1.kernels),
        captures: '2',
        replays: String(p1.replays),
      });
      assert.match(await page.textContent('#stat-ms'), /^compiled \d+\.\d+ ms\/step/);
      assert.ok(Number(await page.getAttribute('#stat-ms', 'data-compiled')) > 0, 'a compiled speed was measured');

      // Switched off mid-run: the same model and optimizer go on eagerly from the same step.
      await page.click('#train');
      await waitSteps(compiledRun.step + 15);
      const off = await toggle();
      assert.equal(off.compiled, false);
      assert.equal(off.calls, off.step, 'compiled up to the switch');
      await waitSteps(off.step + 60);
      await page.waitForFunction((n) => window.__demo.lastEval.step > n, off.step, { timeout: 60_000 });
      await pause();
      const eagerRun = await state();
      const p2 = await program();
      assert.equal(p2.captures + p2.replays, off.calls, 'no compiled call after the switch');
      // One curve from step 0: a point every 10 steps, and one at each pause.
      const steps = eagerRun.history.trainLoss.map(([step]) => step);
      const gaps = steps.map((step, i) => step - (i ? steps[i - 1] : 0));
      assert.ok(gaps.every((g) => g > 0 && g <= 10) && steps.at(-1) === eagerRun.step, `one curve up to step ${eagerRun.step}: ${steps}`);
      const eagerLosses = eagerRun.history.trainLoss.filter(([step]) => step > off.step + 10).map(([, v]) => v);
      assert.ok(eagerLosses.length >= 5 && mean(eagerLosses) < 0.5 * mean(losses.slice(0, 3)), `eager steps go on from the trained model: ${eagerLosses}`);
      assert.ok(eagerRun.lastEval.acc > 0.8, `test accuracy ${eagerRun.lastEval.acc}`);
      // Both modes measured on this model, optimizer, batch size and device: the current one first.
      assert.match(await page.textContent('#stat-ms'), /^eager \d+\.\d+ ms\/step, compiled \d+\.\d+ ms\/step: \d+\.\d\d× (faster|slower) compiled$/);
      for (const width of [1280, 375]) {
        await page.setViewportSize({ width, height: 900 });
        assert.deepEqual(await outsideControls(), [], `the switch and the speeds fit their card at ${width}px`);
        assert.deepEqual(await cutSelects(), [], `every option fits its select at ${width}px`);
      }
      await page.setViewportSize({ width: 1280, height: 900 });

      // Back on: the kept program still fits (same parameters, same optimizer
      // state), so it replays with no new capture; the learning rate is read
      // at every call, a new batch size captures again, and the old one is
      // still cached.
      const on = await toggle();
      assert.equal(on.compiled, true);
      await page.fill('#lr', '0.0005');
      await page.dispatchEvent('#lr', 'change');
      await page.click('#train');
      await waitSteps(on.step + 15);
      await page.selectOption('#batch', '32');
      const at32 = (await state()).step;
      await waitSteps(at32 + 15);
      await page.selectOption('#batch', '64');
      const at64 = (await state()).step;
      await waitSteps(at64 + 15);
      await pause();
      const p3 = await program();
      const end = (await state()).step;
      assert.equal(p3.captures + p3.replays, off.calls + (end - on.step), 'compiled again from the switch on');
      assert.equal(p3.captures, 3, `one more capture, for batch 32: ${p3.log}`);
      assert.match(p3.log.at(-1), /\[32, 784\]/, 'the log says why');
      assert.equal(await demo(() => window.__demo.trainer.optimizerLr()), 0.0005);
      const lastLosses = (await state()).history.trainLoss.slice(-3).map(([, v]) => v);
      assert.ok(lastLosses.every((v) => Number.isFinite(v) && v < 0.5 * mean(losses.slice(0, 3))), `still trained: ${lastLosses}`);

      // Left eager, at the first learning rate, for the tests below.
      await page.fill('#lr', '0.001');
      await page.dispatchEvent('#lr', 'change');
      await page.uncheck('#compiled');
      s.checkErrors();
    });

    test('drawing a stroke while the model trains shows class probabilities', T, async () => {
      // Training yields to the page between steps: drawing works meanwhile.
      await page.click('#train');
      const stepAtStart = (await state()).step;
      const box = await page.locator('#pad').boundingBox();
      // A "7": a bar across the top, then a stroke down to the bottom left.
      const at = (fx, fy) => [box.x + fx * box.width, box.y + fy * box.height];
      await page.mouse.move(...at(0.3, 0.25));
      await page.mouse.down();
      for (const [fx, fy] of [[0.5, 0.25], [0.7, 0.25], [0.6, 0.5], [0.5, 0.75]]) {
        await page.mouse.move(...at(fx, fy), { steps: 6 });
      }
      await page.mouse.up();
      await page.waitForFunction(() => document.getElementById('probs').dataset.top !== '', null, { timeout: 30_000 });
      const during = await state();
      assert.equal(during.state, 'running', 'still training');
      assert.ok(during.step > stepAtStart, `steps ran while drawing (${stepAtStart} -> ${during.step})`);
      await page.click('#train');
      await page.waitForFunction(() => window.__demo.trainer.state === 'paused');
      await demo(() => window.__demo.trainer.paused);
      const pcts = await page.locator('#probs .prob-pct').allTextContents();
      assert.equal(pcts.length, 10);
      const total = pcts.map((t) => parseFloat(t)).reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(total - 100) < 1.5, `probabilities sum to 100%: ${pcts}`);
      // The model sees the preprocessed 28x28 input, shown next to the bars.
      const ink = await demo(() => {
        const c = document.getElementById('pad-input');
        return c.getContext('2d').getImageData(0, 0, 28, 28).data.filter((v, i) => i % 4 === 3 && v > 0).length;
      });
      assert.ok(ink > 10, `the 28x28 input shows the stroke (${ink} pixels)`);
      await page.click('#pad-clear');
      await page.waitForFunction(() => document.getElementById('probs').dataset.top === '');
      s.checkErrors();
    });

    test('the model downloads as safetensors and loads back with the same test accuracy', T, async () => {
      const trained = await demo(() => window.__demo.trainer.evaluate().then((r) => r.acc));
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
      assert.match(download.suggestedFilename(), /^skiff-mnist-mlp-step\d+\.safetensors$/);
      const file = path.join(ARTIFACTS, `demo-${pass.name}.safetensors`);
      await download.saveAs(file);
      const bytes = fs.readFileSync(file);
      const header = safetensorsHeader(bytes);
      assert.deepEqual(Object.keys(header).sort(), ['0.bias', '0.weight', '2.bias', '2.weight']);
      // The file says where training stood.
      const savedStep = Number(download.suggestedFilename().match(/step(\d+)/)[1]);
      assert.equal(savedStep, (await state()).step);
      const n = Number(bytes.readBigUInt64LE(0));
      const meta = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')).__metadata__;
      assert.deepEqual({ model: meta['skiff.model'], step: meta['skiff.step'] }, { model: 'mlp', step: String(savedStep) });
      assert.deepEqual(header['0.weight'], { ...header['0.weight'], dtype: 'F32', shape: [128, 784] });

      await page.click('#reset');
      await page.waitForFunction(() => window.__demo.trainer.step === 0 && window.__demo.lastEval.step === 0);
      const fresh = (await state()).lastEval.acc;
      assert.ok(fresh < 0.3, `Reset starts a fresh model: ${fresh}`);
      assert.equal(await page.getAttribute('#chart-loss [data-points]', 'data-points'), '1', 'Reset clears the charts');

      await page.setInputFiles('#upload', file);
      await page.waitForFunction(() => /^Loaded /.test(document.getElementById('status').textContent), null, { timeout: 60_000 });
      const loaded = await state();
      assert.equal(loaded.lastEval.acc, trained, 'the same predictions as before the download');
      // It keeps its step, says so, and a reload resumes there.
      assert.equal(loaded.step, savedStep, 'the step the file was saved at');
      assert.match(await page.textContent('#status'), new RegExp(`\\(saved at step ${savedStep}\\).*Press Resume`));
      assert.equal(await page.textContent('#train'), 'Resume');
      assert.equal(await demo(() => window.__demo.trainer.lastCheckpoint.step), savedStep, 'checkpointed at the loaded step');
      s.checkErrors();
    });

    test('a file that is not a model is refused with a message, and the page keeps working', T, async () => {
      const before = (await state()).lastEval;
      await page.setInputFiles('#upload', { name: 'notes.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.from('not a model') });
      await page.waitForSelector('#error:not([hidden])');
      assert.match(await page.textContent('#error-message'), /notes\.safetensors/);
      assert.equal(await page.isVisible('#error-cpu'), false, 'no cpu switch for a bad file');
      await page.click('#error-dismiss');
      assert.equal(await page.isVisible('#error'), false);

      // A safetensors file of other shapes (here: of a linear layer) is named as such.
      const other = await demo(async () => {
        const { skiff } = window.__demo;
        const weight = skiff.zeros([3, 5]);
        const bytes = await skiff.saveSafetensors({ '0.weight': weight });
        weight.dispose();
        return Array.from(bytes);
      });
      await page.setInputFiles('#upload', { name: 'other.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.from(other) });
      await page.waitForSelector('#error:not([hidden])');
      assert.match(await page.textContent('#error-message'), /other\.safetensors: .*\[3,5\].*expected \[128,784\]/);
      await page.click('#error-dismiss');
      assert.deepEqual((await state()).lastEval, before, 'the model is unchanged');
      s.checkErrors();
    });

    test('a reload resumes from the checkpoint kept in IndexedDB', T, async () => {
      const live = () => demo(() => window.__demo.trainer.memory().then((m) => m.tensors));
      const tensorsBefore = await live();
      const kept = await trainFor(60);
      assert.equal(await live(), tensorsBefore, 'training and evaluating leave no tensor behind');
      const saved = await demo(() => ({ step: window.__demo.trainer.lastCheckpoint.step, history: window.__demo.trainer.history }));
      // Pause checkpoints where it stopped, not at the last multiple of 50.
      assert.equal(saved.step, (await state()).step, 'the checkpoint is at the paused step');
      // The pause resolves once the page kept that checkpoint, so a reload at once resumes there.
      assert.match(kept, new RegExp(`at step ${saved.step}:`));
      await page.reload();
      await ready();
      const resumed = await state();
      assert.equal(resumed.step, saved.step, 'the step of the last checkpoint');
      assert.match(await page.textContent('#status'), new RegExp(`^Resumed from step ${saved.step} `));
      assert.equal(await page.textContent('#train'), 'Resume');
      // The checkpoint's evaluation, repeated on the restored weights, gives the same accuracy.
      const atCheckpoint = saved.history.testAcc.find(([step]) => step === saved.step);
      assert.ok(atCheckpoint, 'the checkpoint was evaluated');
      assert.equal(resumed.lastEval.acc, atCheckpoint[1]);
      assert.deepEqual(resumed.history.trainLoss.slice(0, 3), saved.history.trainLoss.slice(0, 3), 'the curves are restored');
      s.checkErrors();
    });

    test('a tab hidden while training checkpoints at once, and a reload resumes there', T, async () => {
      await page.click('#train');
      const start = (await state()).step;
      await page.waitForFunction((n) => window.__demo.trainer.step >= n + 15, start, { timeout: 60_000 });
      // As when the user switches tabs or closes this one.
      const hiddenAt = await demo(() => {
        Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
        document.dispatchEvent(new Event('visibilitychange'));
        return window.__demo.trainer.step;
      });
      // The hidden tab's own checkpoint, not the loop's (at an evaluation, or
      // every 2 s), which may land first or just after: the page's step lags
      // the worker's.
      const saved = await demo(() => window.__demo.hiddenCheckpoint);
      assert.ok(saved >= hiddenAt, `the hidden tab checkpointed at step ${saved}, hidden at ${hiddenAt}`);
      // Give IndexedDB its write, then reload while the worker still trains.
      // (A later checkpoint of the loop's may be the one shown.)
      await page.waitForFunction((n) => Number(/at step (\d+):/.exec(document.getElementById('saved').textContent)?.[1] ?? -1) >= n, saved);
      await page.reload();
      await ready();
      const resumed = await state();
      // It resumes from the checkpoint IndexedDB holds, no older than the
      // hidden tab's. (Not bounded by a step read before the reload: the
      // worker trains on until the page unloads, and a checkpoint it sends
      // in that time may be saved and is then the right one to resume from.)
      const stored = await demo(
        () =>
          new Promise((resolve, reject) => {
            const open = indexedDB.open('skiff-demo');
            open.onerror = () => reject(open.error);
            open.onsuccess = () => {
              const db = open.result;
              const get = db.transaction('checkpoints').objectStore('checkpoints').get('latest');
              get.onerror = () => reject(get.error);
              get.onsuccess = () => {
                db.close();
                resolve(get.result?.step ?? null);
              };
            };
          }),
      );
      assert.equal(resumed.step, stored, `resumed at ${resumed.step}, the stored checkpoint is at step ${stored}`);
      assert.ok(resumed.step >= saved, `resumed at ${resumed.step}, before the hidden tab's checkpoint at ${saved}`);
      assert.match(await page.textContent('#status'), new RegExp(`^Resumed from step ${resumed.step} `));
      assert.equal(await page.textContent('#train'), 'Resume');
      s.checkErrors();
    });

    test('a learning rate schedule applies per step; SGD at lr 9 is stopped and explained', T, async () => {
      // Cosine: the rate the worker's optimizer uses follows the step.
      await page.selectOption('#schedule', 'cosine');
      assert.match(await page.textContent('#schedule-hint'), /over 2,000 steps/);
      await trainFor(20);
      const step = (await state()).step;
      const lr = await demo(() => window.__demo.trainer.optimizerLr());
      const expected = 0.001 * 0.5 * (1 + Math.cos((Math.PI * (step - 1)) / 2000));
      assert.ok(Math.abs(lr - expected) <= 1e-12, `lr ${lr} at step ${step}, expected ${expected}`);
      await page.selectOption('#schedule', 'constant');
      assert.equal(await demo(() => window.__demo.trainer.optimizerLr()), 0.001);

      // SGD at lr 9 collapses: the page pauses and says why.
      await page.selectOption('#optimizer', 'sgd');
      await page.fill('#lr', '9');
      await page.dispatchEvent('#lr', 'change');
      await page.click('#reset');
      await page.waitForFunction(() => window.__demo.trainer.config.optimizer === 'sgd' && window.__demo.lastEval?.step === 0);
      await page.click('#train');
      await page.waitForSelector('#error:not([hidden])', { timeout: 120_000 });
      assert.equal(await page.textContent('#error-title'), 'Training diverged');
      assert.match(await page.textContent('#error-advice'), /learning rate|Lower/);
      await page.waitForFunction(() => ['paused', 'failed'].includes(window.__demo.trainer.state), null, { timeout: 60_000 });
      await page.click('#error-dismiss');

      // Back to Adam at 0.001 for the tests below.
      await page.selectOption('#optimizer', 'adam');
      await page.fill('#lr', '0.001');
      await page.dispatchEvent('#lr', 'change');
      await page.click('#reset');
      await page.waitForFunction(() => window.__demo.trainer.config.optimizer === 'adam' && window.__demo.trainer.step === 0 && window.__demo.lastEval?.step === 0);
      await trainFor(10); // a trained model, which a change of model must not throw away without Reset
      s.checkErrors();
    });

    // The CNN's conv kernels take seconds per step on SwiftShader (a software
    // rasteriser), so its run is checked on the cpu pass only; the conv ops
    // themselves are checked on WebGPU by the registry parity suite.
    if (!pass.gpu) {
      test('the CNN trains too, and its first-layer filters are drawn', T, async () => {
        await page.selectOption('#model', 'cnn');
        assert.match(await page.textContent('#status'), /Reset/, 'a trained model is not thrown away without Reset');
        await page.click('#reset');
        await page.waitForFunction(() => window.__demo.trainer.config.model === 'cnn' && window.__demo.lastEval.step === 0);
        await trainFor(50);
        const { history, lastEval } = await state();
        const losses = history.trainLoss.map(([, v]) => v);
        assert.ok(losses.at(-1) < 0.6 * losses[0], `the loss falls: ${losses.map((v) => v.toFixed(3))}`);
        assert.ok(lastEval.acc > 0.5, `test accuracy after 50 steps: ${lastEval.acc}`);
        // 8 filters of 5x5 in a 3x3 grid with 1-px gaps.
        assert.deepEqual(await demo(() => [document.getElementById('weights').width, document.getElementById('weights').height]), [17, 17]);
        assert.match(await page.textContent('#weights-title'), /filters/);
        s.checkErrors();
      });
    }

    if (pass.gpu) {
      test('a lost GPU device is shown with what to do, and training continues on the cpu', T, async () => {
        await page.click('#train');
        const checkpoint = await demo(() => window.__demo.trainer.lastCheckpoint.step);
        await page.waitForFunction((n) => window.__demo.trainer.step >= n + 5, checkpoint);
        await demo(() => window.__demo.trainer.loseDevice());
        await page.waitForSelector('#error:not([hidden])', { timeout: 60_000 });
        assert.equal(await page.textContent('#error-title'), 'The GPU device was lost');
        assert.match(await page.textContent('#error-message'), /device was lost/);
        assert.match(await page.textContent('#error-advice'), /Continue on the cpu/);
        assert.equal((await state()).state, 'failed');
        await page.click('#error-cpu');
        await page.waitForFunction(() => window.__demo.trainer.state === 'running');
        assert.equal(await page.textContent('#backend'), 'cpu fallback');
        const resumedAt = await demo(() => window.__demo.lastEval.step);
        assert.ok(resumedAt >= checkpoint, `continues from the checkpoint (${checkpoint}), not from scratch`);
        await page.waitForFunction((n) => window.__demo.trainer.step >= n + 20, resumedAt, { timeout: 60_000 });
        await page.click('#train');
        await page.waitForFunction(() => window.__demo.trainer.state === 'paused');
        await demo(() => window.__demo.trainer.paused);
      await demo(() => window.__demo.trainer.paused);
        assert.equal(await demo(() => window.__demo.trainer.device), 'cpu');
        s.checkErrors();
      });
    }

    if (pass.gpu) {
      test('a software GPU (SwiftShader) gets the cpu by default, with a notice and a way back', T, async () => {
        await page.goto(`${s.server.url}/`);
        await ready();
        assert.equal(await page.textContent('#backend'), 'cpu fallback');
        const detail = await page.textContent('#backend-detail');
        assert.match(detail, /WebGPU here is .*SwiftShader.*, a software GPU, slower than the cpu for these models: training runs on the cpu/i);
        assert.equal(await page.getAttribute('#backend-detail a', 'href'), '?device=webgpu');
        assert.equal(await demo(() => window.__demo.trainer.device), 'cpu');
        s.checkErrors();
      });
    }

    /**
     * While the worker trains the current model: three seconds of animation
     * frames, the drawing pad's answer to a stroke (from its pointerup), Pause
     * (click to the loop stopped in the worker) and Reset while training
     * (click to a fresh model shown). Leaves a fresh model of the same kind.
     */
    const responsiveness = async () => {
      const untilMs = (predicate) =>
        demo(
          (src) =>
            new Promise((resolve) => {
              const done = new Function(`return (${src})()`);
              const t0 = performance.now();
              const poll = () => (done() ? resolve(performance.now() - t0) : setTimeout(poll, 1));
              window.__act();
              poll();
            }),
          predicate,
        );
      await page.click('#train');
      await page.waitForFunction(() => window.__demo.trainer.step >= 3, null, { timeout: 60_000 });

      // Frames: three seconds of requestAnimationFrame timestamps.
      const times = await demo(
        (ms) =>
          new Promise((resolve) => {
            const seen = [];
            const frame = (now) => {
              seen.push(now);
              if (now - seen[0] < ms) requestAnimationFrame(frame);
              else resolve(seen);
            };
            requestAnimationFrame(frame);
          }),
        3000,
      );
      const gaps = times.slice(1).map((v, i) => v - times[i]).sort((a, b) => a - b);
      const steps = await demo(() => window.__demo.trainer.step);

      // The drawing pad: from the stroke's pointerup to the probabilities shown.
      await demo(() => {
        window.__upAt = null;
        // Captured on the window: before the pad's own listener, which predicts at once.
        window.addEventListener('pointerup', () => (window.__upAt = performance.now()), { capture: true, once: true });
      });
      const box = await page.locator('#pad').boundingBox();
      const at = (fx, fy) => [box.x + fx * box.width, box.y + fy * box.height];
      await page.mouse.move(...at(0.5, 0.2));
      await page.mouse.down();
      for (const [fx, fy] of [[0.5, 0.4], [0.5, 0.6], [0.5, 0.8]]) await page.mouse.move(...at(fx, fy), { steps: 4 });
      await page.mouse.up();
      await page.waitForFunction(() => window.__upAt && window.__demo.lastPrediction?.at >= window.__upAt, null, { timeout: 10_000 });
      const padMs = await demo(() => window.__demo.lastPrediction.at - window.__upAt);

      await demo(() => (window.__act = () => document.getElementById('train').click()));
      const pauseMs = await untilMs("() => window.__demo.trainer.state === 'paused'");
      await demo(() => window.__demo.trainer.paused);
      await page.click('#train');
      const resumedAt = await demo(() => window.__demo.trainer.step);
      await page.waitForFunction((n) => window.__demo.trainer.step >= n + 3, resumedAt, { timeout: 60_000 });
      await demo(() => (window.__act = () => document.getElementById('reset').click()));
      const resetMs = await untilMs(
        "() => window.__demo.trainer.step === 0 && window.__demo.trainer.state === 'idle' && /^A fresh/.test(document.getElementById('status').textContent)",
      );
      await page.waitForFunction(() => window.__demo.lastEval?.step === 0 && window.__demo.evals > 0);
      await page.click('#pad-clear');
      const p95 = gaps[Math.floor(0.95 * (gaps.length - 1))];
      return { steps, frames: times.length, p95, max: gaps.at(-1), padMs, pauseMs, resetMs };
    };
    const describeRun = (r) =>
      `${r.steps} steps; frames ${r.frames} in 3 s, gap p95 ${r.p95.toFixed(1)} ms, max ${r.max.toFixed(1)} ms; ` +
      `pad ${r.padMs.toFixed(1)} ms; Pause ${r.pauseMs.toFixed(1)} ms; Reset ${r.resetMs.toFixed(1)} ms`;

    // Training runs in a worker: the page only draws. Measured on the CNN, on
    // the cpu (the worker's device on both passes here: the software GPU
    // yields to it), the bounds: frame gaps p95 <= 20 ms, Pause and
    // Reset <= 200 ms, the drawing pad's answer <= 100 ms.
    test('while the CNN trains in the worker, the page keeps its frames, and Pause, Reset and the pad answer at once', T, async (t) => {
      assert.equal(await demo(() => window.__demo.trainer.device), 'cpu');
      if ((await demo(() => window.__demo.trainer.config.model)) !== 'cnn') {
        await page.selectOption('#model', 'cnn');
        await page.click('#reset');
        await page.waitForFunction(() => window.__demo.trainer.config.model === 'cnn' && window.__demo.lastEval?.step === 0);
      }
      const r = await responsiveness();
      t.diagnostic(`CNN on the cpu worker: ${describeRun(r)}`);
      assert.ok(r.p95 <= 20, `frame gaps p95 ${r.p95.toFixed(1)} ms (max ${r.max.toFixed(1)})`);
      assert.ok(r.padMs <= 100, `the pad answered ${r.padMs.toFixed(1)} ms after the stroke`);
      assert.ok(r.pauseMs <= 200, `Pause took ${r.pauseMs.toFixed(1)} ms`);
      assert.ok(r.resetMs <= 200, `Reset took ${r.resetMs.toFixed(1)} ms`);
      s.checkErrors();
    });

    if (pass.gpu) {
      // WebGPU kept on the software adapter: its MLP steps are slow (tens of
      // ms), but they run in the worker, and SwiftShader's threads share the
      // 2 cores with the page: the page keeps its frames and answers anyway.
      test('on WebGPU (kept on SwiftShader), the MLP trains in the worker and the page keeps its frames', T, async (t) => {
        await page.goto(`${s.server.url}/?device=webgpu`);
        await ready();
        assert.equal(await page.textContent('#backend'), 'WebGPU');
        await page.selectOption('#model', 'mlp');
        await page.click('#reset');
        await page.waitForFunction(() => window.__demo.trainer.config.model === 'mlp' && window.__demo.lastEval?.step === 0);
        assert.equal(await demo(() => window.__demo.trainer.device), 'webgpu');
        const r = await responsiveness();
        t.diagnostic(`MLP on the WebGPU worker (SwiftShader): ${describeRun(r)}`);
        assert.ok(r.p95 <= 20, `frame gaps p95 ${r.p95.toFixed(1)} ms (max ${r.max.toFixed(1)})`);
        assert.ok(r.padMs <= 100, `the pad answered ${r.padMs.toFixed(1)} ms after the stroke`);
        assert.ok(r.pauseMs <= 200, `Pause took ${r.pauseMs.toFixed(1)} ms`);
        assert.ok(r.resetMs <= 200, `Reset took ${r.resetMs.toFixed(1)} ms`);
        s.checkErrors();
      });

      // The worker evaluates the test set every EVAL_EVERY steps: on
      // SwiftShader its readback waits for all eight chunks' forward passes
      // (about 160 ms for the MLP). A Reset asked for then abandons the
      // evaluation, readback included. Reset is clicked as the page hears of
      // the window that starts an evaluation, a few times over, so the
      // request reaches the worker at different points of it.
      test('on WebGPU, a Reset while the worker evaluates does not wait for the evaluation', T, async (t) => {
        const times = [];
        for (let round = 0; round < 4; round++) {
          await page.click('#train');
          times.push(
            await demo(async () => {
              const { EVAL_EVERY, LOG_EVERY } = await import('/lib/trainer.js');
              const trainer = window.__demo.trainer;
              const t0 = await new Promise((resolve) => {
                const off = trainer.worker.on('update', ({ snapshot }) => {
                  if (snapshot.state !== 'running' || snapshot.step < EVAL_EVERY || snapshot.step % EVAL_EVERY >= LOG_EVERY) return;
                  off();
                  const at = performance.now();
                  window.__evalsAtReset = window.__demo.evals;
                  document.getElementById('reset').click();
                  resolve(at);
                });
              });
              const fresh = () => trainer.step === 0 && trainer.state === 'idle' && /^A fresh/.test(document.getElementById('status').textContent);
              while (!fresh()) await new Promise((r) => setTimeout(r, 1));
              return performance.now() - t0;
            }),
          );
          // The fresh model's evaluation, before the next round trains it.
          await page.waitForFunction(() => window.__demo.lastEval?.step === 0 && window.__demo.evals > window.__evalsAtReset);
        }
        t.diagnostic(`Reset as an evaluation starts (MLP, SwiftShader): ${times.map((v) => v.toFixed(1)).join(', ')} ms`);
        for (const ms of times) assert.ok(ms <= 200, `Reset took ${ms.toFixed(1)} ms (all: ${times.map((v) => v.toFixed(1)).join(', ')})`);
        s.checkErrors();
      });
    }

    test('phone width: one column, no sideways scrolling', T, async () => {
      await page.setViewportSize({ width: 375, height: 740 });
      // The charts follow their cards' width on the next animation frame.
      await page
        .waitForFunction(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth, null, { timeout: 5000 })
        .catch(() => {});
      const layout = await demo(() => {
        const w = document.documentElement;
        const x = (sel) => Math.round(document.querySelector(sel).getBoundingClientRect().left);
        const wide = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > w.clientWidth);
        return {
          scroll: w.scrollWidth,
          width: w.clientWidth,
          wide: wide.slice(0, 5).map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`),
          lefts: ['.controls', '.charts', '.draw', '.samples', '.weights'].map(x),
          controlsBottom: document.querySelector('.controls').getBoundingClientRect().bottom,
          padBottom: document.getElementById('pad').getBoundingClientRect().bottom,
          screen: window.innerHeight,
        };
      });
      assert.ok(layout.scroll <= layout.width, `page ${layout.scroll}px wide in a ${layout.width}px window: ${layout.wide}`);
      assert.equal(new Set(layout.lefts).size, 1, `cards in one column: ${layout.lefts}`);
      assert.deepEqual(await outsideControls(), [], 'the controls fit their card');
      assert.deepEqual(await cutSelects(), [], 'every option fits its select');
      // The drawing pad comes right after the Train controls: within the next screen.
      assert.ok(
        layout.padBottom - layout.controlsBottom <= layout.screen,
        `the pad ends ${Math.round(layout.padBottom - layout.controlsBottom)} px below the controls (screen ${layout.screen} px)`,
      );
      await page.screenshot({ path: path.join(ARTIFACTS, `demo-${pass.name}-phone.png`), fullPage: true });
      await page.setViewportSize({ width: 1280, height: 900 });
      s.checkErrors();
    });
  });
}
