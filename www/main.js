// The demo page: wires the controls, charts, sample grid, weight images and
// drawing pad to the training worker (train-worker.js, through
// lib/remote.js), and recovers from errors. Training never runs on this
// thread: the page draws, and predicts the drawing pad's digit with its own
// skiff on the cpu and the weights of the worker's latest checkpoint.
import * as skiff from 'skiff-ml';
import { createChart } from './lib/charts.js';
import { DrawPad } from './lib/draw.js';
import { drawDigit, drawWeights, probabilityBars } from './lib/images.js';
import { loadMnist } from './lib/mnist.js';
import { clearLatest, download, loadLatest, readProgress, saveLatest, withProgress } from './lib/store.js';
import { MODELS, OPTIMIZERS, SCHEDULES, modelOf } from './lib/trainer.js';
import { Predictor, RemoteTrainer } from './lib/remote.js';
import { collapsedError, explain, fileError } from './lib/errors.js';
import { confusion, worstMistakes } from './lib/results.js';

const $ = (id) => document.getElementById(id);
const GRID_SIZE = 24;
const SOFTWARE_ADAPTER = /swiftshader|llvmpipe|lavapipe/i;

const ui = {
  model: $('model'),
  optimizer: $('optimizer'),
  lr: $('lr'),
  batch: $('batch'),
  schedule: $('schedule'),
  compiled: $('compiled'),
  train: $('train'),
  reset: $('reset'),
  status: $('status'),
  download: $('download'),
  upload: $('upload'),
};
for (const [key, m] of Object.entries(MODELS)) ui.model.add(new Option(m.label, key));
for (const [key, o] of Object.entries(OPTIMIZERS)) ui.optimizer.add(new Option(o.label, key));
for (const [key, o] of Object.entries(SCHEDULES)) ui.schedule.add(new Option(o.label, key));

const charts = {
  loss: createChart($('chart-loss'), {
    title: 'Loss',
    yLabel: 'cross-entropy',
    series: [
      { key: 'trainLoss', label: 'train', color: '#2563eb' },
      { key: 'testLoss', label: 'test', color: '#ea580c' },
    ],
  }),
  acc: createChart($('chart-acc'), {
    title: 'Accuracy',
    yLabel: 'accuracy',
    percent: true,
    series: [
      { key: 'trainAcc', label: 'train', color: '#2563eb' },
      { key: 'testAcc', label: 'test', color: '#ea580c' },
    ],
  }),
};

// What the tests (and curious users, in the console) can look at.
const demo = { skiff, trainer: null, predictor: new Predictor(), pad: null, backend: null, evals: 0, lastEval: null, errors: [], lastPrediction: null };
window.__demo = demo;

function readConfig() {
  return {
    model: ui.model.value,
    optimizer: ui.optimizer.value,
    lr: Number(ui.lr.value),
    schedule: ui.schedule.value,
    batchSize: Number(ui.batch.value),
  };
}

function showScheduleHint() {
  $('schedule-hint').textContent = `Rate schedule: ${SCHEDULES[ui.schedule.value].hint}.`;
}

function showConfig(config) {
  ui.model.value = config.model;
  ui.optimizer.value = config.optimizer;
  ui.lr.value = String(config.lr);
  ui.schedule.value = SCHEDULES[config.schedule] ? config.schedule : 'constant';
  ui.batch.value = String(config.batchSize);
  showScheduleHint();
}

const fmt = (v, digits = 3) => (v == null || !Number.isFinite(v) ? '–' : v.toFixed(digits));
const pct = (v) => (v == null ? '–' : `${(100 * v).toFixed(1)}%`);
const last = (series) => (series.length ? series[series.length - 1][1] : null);

function setStatus(text) {
  ui.status.textContent = text;
}

const isSoftware = (info) => SOFTWARE_ADAPTER.test(`${info.adapter?.name} ${info.adapter?.architecture}`);

/** The worker's backend in the masthead. `software`: the software adapter the cpu was chosen over. */
function showBackend(info, note = '', software = null) {
  demo.backend = info;
  const badge = $('backend');
  const detail = $('backend-detail');
  if (info.device === 'webgpu') {
    badge.textContent = 'WebGPU';
    badge.className = 'badge gpu';
    detail.textContent = info.adapter?.name || 'GPU adapter';
    // A software rasteriser (e.g. SwiftShader, when a browser has no usable
    // GPU) runs both models far slower than the wasm cpu backend does.
    if (isSoftware(info)) {
      const link = Object.assign(document.createElement('a'), { href: '?device=cpu', textContent: 'the cpu fallback' });
      detail.append(' (a software GPU: ', link, ' is faster here)');
    }
  } else if (software) {
    badge.textContent = 'cpu fallback';
    badge.className = 'badge cpu';
    const link = Object.assign(document.createElement('a'), { href: '?device=webgpu', textContent: 'use WebGPU anyway' });
    detail.replaceChildren(
      `WebGPU here is ${software}, a software GPU, slower than the cpu for these models: training runs on the cpu (`,
      link,
      ')',
    );
  } else {
    badge.textContent = 'cpu fallback';
    badge.className = 'badge cpu';
    detail.textContent = note || info.reason || 'WebAssembly on the cpu (as requested)';
  }
}

const msText = (ms) => `${ms.toFixed(ms < 10 ? 2 : 1)} ms/step`;

/** "compiled 3.10 ms/step, eager 4.02 ms/step: 1.30× faster compiled", the current mode first. */
function showSpeed() {
  const t = demo.trainer;
  const el = $('stat-ms');
  const ms = { eager: t.msPerStep('eager'), compiled: t.msPerStep('compiled') };
  const [mode, other] = t.compiled ? ['compiled', 'eager'] : ['eager', 'compiled'];
  const pieces = [`${mode} ${ms[mode] == null ? 'measuring…' : msText(ms[mode])}`];
  if (ms[other] != null) pieces.push(`${other} ${msText(ms[other])}`);
  if (ms.eager != null && ms.compiled != null) {
    const ratio = ms.eager / ms.compiled;
    pieces.push(`${ratio >= 1 ? `${ratio.toFixed(2)}× faster` : `${(1 / ratio).toFixed(2)}× slower`} compiled`);
  }
  if (t.step === 0 && ms.eager == null && ms.compiled == null) el.textContent = '–';
  else {
    // Each piece a nowrap span with its separator, so a narrow card wraps between pieces.
    const spans = pieces.map((text, i) =>
      Object.assign(document.createElement('span'), { textContent: text + (i < pieces.length - 1 ? [',', ':'][i] : '') }),
    );
    el.replaceChildren(...spans.flatMap((span, i) => (i ? [' ', span] : [span])));
  }
  for (const m of ['eager', 'compiled']) {
    if (ms[m] == null) delete el.dataset[m];
    else el.dataset[m] = String(ms[m]);
  }
}

/** The compiled step's program: its kernels per step and how many calls captured or replayed. */
function showProgram() {
  const step = demo.trainer.jitStep;
  const el = $('stat-jit');
  const { kernels, captures, replays } = step ?? { kernels: 0, captures: 0, replays: 0 };
  Object.assign(el.dataset, { kernels: String(kernels), captures: String(captures), replays: String(replays) });
  const n = (v, one, many) => `${v.toLocaleString('en')} ${v === 1 ? one : many}`;
  el.textContent = captures
    ? `${n(kernels, 'kernel', 'kernels')} per step, ${n(captures, 'capture', 'captures')}, ${n(replays, 'replay', 'replays')}`
    : 'not captured yet';
  el.title = step?.log.at(-1) ?? '';
}

function refreshStats() {
  const t = demo.trainer;
  const h = t.history;
  showSpeed();
  showProgram();
  $('stat-step').textContent = String(t.step);
  $('stat-epoch').textContent = String(t.epoch);
  $('stat-loss').textContent = fmt(last(h.trainLoss));
  $('stat-acc').textContent = pct(last(h.testAcc));
  charts.loss.update({ trainLoss: h.trainLoss, testLoss: h.testLoss });
  charts.acc.update({ trainAcc: h.trainAcc, testAcc: h.testAcc });
}

function refreshButtons() {
  const { state, step } = demo.trainer;
  document.body.dataset.state = state;
  const running = state === 'running';
  if (state === 'pausing') {
    ui.train.textContent = 'Pausing…';
    ui.train.disabled = true; // until the step in flight ends
    return;
  }
  ui.train.textContent = running ? 'Pause' : state === 'paused' || (state === 'idle' && step > 0) ? 'Resume' : 'Train';
  ui.train.disabled = false;
  ui.reset.disabled = false;
  ui.download.disabled = false;
  if (running) setStatus('Training… the page stays usable: draw a digit meanwhile.');
  else if (state === 'paused') setStatus(`Paused at step ${step}.`);
}

// ---- the grid of test digits and the first layer's weights --------------

const grid = [];
function buildGrid(test) {
  const container = $('samples');
  for (let i = 0; i < GRID_SIZE; i++) {
    const figure = document.createElement('figure');
    const canvas = document.createElement('canvas');
    canvas.className = 'digit';
    drawDigit(canvas, test.images.subarray(i * 784, (i + 1) * 784));
    const caption = document.createElement('figcaption');
    caption.textContent = '?';
    figure.append(canvas, caption);
    container.append(figure);
    grid.push({ figure, caption, label: test.labels[i] });
  }
}

function showPredictions(predictions) {
  let wrong = 0;
  grid.forEach((cell, i) => {
    const guess = predictions[i];
    const ok = guess === cell.label;
    if (!ok) wrong += 1;
    cell.figure.classList.toggle('wrong', !ok);
    cell.caption.textContent = ok ? String(guess) : `${guess} (is ${cell.label})`;
    cell.figure.title = ok ? `guessed ${guess}: right` : `guessed ${guess}, but it is a ${cell.label}`;
  });
  const container = $('samples');
  container.dataset.step = String(demo.trainer.step);
  container.dataset.wrong = String(wrong);
}

async function showWeights() {
  const w = await demo.trainer.firstLayer();
  drawWeights($('weights'), w.values, { rows: w.rows, cols: w.cols, count: w.count });
  const conv = demo.trainer.config.model === 'cnn';
  $('weights-title').textContent = conv ? 'First-layer filters' : 'First-layer weights';
  $('weights-hint').textContent = conv
    ? `The ${w.count} convolution filters (${w.rows}×${w.cols}) of the first layer. Red is positive, blue negative.`
    : `What ${w.count} of the 128 hidden units look for in the 28×28 input. Red is positive, blue negative.`;
  $('weights').dataset.step = String(demo.trainer.step);
}

/** The model layer by layer (tfjs-vis's modelSummary): type, output shape, parameters. */
async function showSummary() {
  const rows = await demo.trainer.summary();
  const body = $('summary').tBodies[0];
  body.replaceChildren(
    ...rows.map((r) => {
      const tr = document.createElement('tr');
      const name = Object.assign(document.createElement('td'), { textContent: `${r.type} ` });
      name.append(Object.assign(document.createElement('small'), { textContent: r.name }));
      tr.append(name, Object.assign(document.createElement('td'), { textContent: `[${r.shape.join(', ')}]` }));
      tr.append(Object.assign(document.createElement('td'), { textContent: r.params.toLocaleString('en') }));
      return tr;
    }),
  );
  const total = rows.reduce((n, r) => n + r.params, 0);
  $('summary-total').textContent = total.toLocaleString('en');
  demo.summary = { rows, total };
}

// ---- test results: confusion matrix, per-class accuracy, worst mistakes ----

let testSet = null;
function showResults(result) {
  const { matrix, perClass } = confusion(result.predictions, testSet.labels);
  const table = $('confusion');
  const head = document.createElement('tr');
  head.append(Object.assign(document.createElement('th'), { textContent: '', title: 'true digit \\ guess' }));
  for (let d = 0; d < 10; d++) head.append(Object.assign(document.createElement('th'), { textContent: String(d), scope: 'col' }));
  head.append(Object.assign(document.createElement('th'), { textContent: 'acc' }));
  const rows = matrix.map((row, t) => {
    const tr = document.createElement('tr');
    tr.append(Object.assign(document.createElement('th'), { textContent: String(t), scope: 'row' }));
    const total = row.reduce((a, b) => a + b, 0) || 1;
    row.forEach((n, g) => {
      const share = n / total;
      const td = Object.assign(document.createElement('td'), { textContent: n ? String(n) : '', title: `${n} ${t}s guessed as ${g}` });
      // Blue on the diagonal (right), red off it (wrong), by the row's share.
      td.style.background = n ? (t === g ? `rgba(37, 99, 235, ${0.15 + 0.6 * share})` : `rgba(220, 38, 38, ${0.1 + 0.9 * Math.min(1, 4 * share)})`) : '';
      tr.append(td);
    });
    tr.append(Object.assign(document.createElement('td'), { className: 'acc', textContent: pct(perClass[t]) }));
    return tr;
  });
  table.replaceChildren(head, ...rows);
  const mistakes = worstMistakes(result.predictions, result.confidence, testSet.labels, 8);
  $('mistakes').replaceChildren(
    ...mistakes.map((m) => {
      const figure = document.createElement('figure');
      figure.className = 'wrong';
      const canvas = Object.assign(document.createElement('canvas'), { className: 'digit' });
      drawDigit(canvas, testSet.images.subarray(m.index * 784, (m.index + 1) * 784));
      const caption = Object.assign(document.createElement('figcaption'), {
        textContent: `${m.guess} (${Math.round(100 * m.confidence)}%), is ${m.label}`,
      });
      figure.append(canvas, caption);
      return figure;
    }),
  );
  demo.results = { step: result.step, matrix, perClass, mistakes };
}

/**
 * Training whose test accuracy is back at chance (a model that predicts one
 * class, as SGD at a too high rate ends up) is paused and explained; so is
 * one still at chance after 300 steps.
 */
function checkCollapse(result) {
  const t = demo.trainer;
  if (t.state !== 'running' || result.acc >= 0.2) return;
  const best = Math.max(...t.history.testAcc.map(([, acc]) => acc));
  if (best < 0.5 && result.step < 300) return;
  t.stop().catch(showError);
  showError(collapsedError(result, t.config.lr, best));
}

// ---- the drawing pad ----------------------------------------------------

let predicting = false;
let predictAgain = false;
async function predictDrawing() {
  if (predicting) {
    predictAgain = true;
    return;
  }
  predicting = true;
  try {
    do {
      predictAgain = false;
      const pixels = demo.pad.toMnist();
      if (!pixels) {
        probabilityBars($('probs'), null);
        continue;
      }
      drawDigit($('pad-input'), pixels);
      const started = performance.now();
      probabilityBars($('probs'), await demo.predictor.predict(pixels));
      demo.lastPrediction = { at: performance.now(), ms: performance.now() - started, step: demo.predictor.step };
    } while (predictAgain);
  } catch (e) {
    showError(e);
  } finally {
    predicting = false;
  }
}

// ---- errors -------------------------------------------------------------

function showError(error) {
  const { title, advice, gpuProblem } = explain(error, demo.trainer?.lastCheckpoint?.step);
  demo.errors.push(error.message);
  console.warn(`skiff demo: ${error.message}`);
  $('error-title').textContent = title;
  $('error-message').textContent = error.message;
  $('error-advice').textContent = advice;
  $('error-cpu').hidden = !(gpuProblem && demo.backend?.device === 'webgpu');
  $('error').hidden = false;
  setStatus(title);
}

function hideError() {
  $('error').hidden = true;
}

/** The fresh or restored model's weights for the drawing pad (checkpoints bring them later). */
async function syncPredictor() {
  const t = demo.trainer;
  demo.predictor.load(t.config.model, await t.stateDict(), t.step);
}

/** Moves training to the cpu fallback from the last checkpoint (after a GPU failure). */
async function continueOnCpu() {
  hideError();
  const checkpoint = demo.trainer.lastCheckpoint;
  showBackend(await demo.trainer.useCpu(), 'switched to the cpu after a GPU error');
  const config = checkpoint ? { ...readConfig(), model: checkpoint.config.model, optimizer: checkpoint.config.optimizer } : readConfig();
  await demo.trainer.build(config, checkpoint);
  showConfig(demo.trainer.config);
  refreshStats();
  await demo.trainer.evaluate();
  setStatus(checkpoint ? `Continuing on the cpu from step ${checkpoint.step}.` : 'Continuing on the cpu.');
  await demo.trainer.start();
}

// ---- actions ------------------------------------------------------------

async function resetModel(config = readConfig()) {
  await demo.trainer.build(config);
  charts.loss.clear();
  charts.acc.clear();
  refreshStats();
  ui.reset.classList.remove('attention');
  setStatus(`A fresh ${MODELS[config.model].label}: press Train.`);
  await clearLatest().catch(() => {});
  await Promise.all([syncPredictor(), showSummary()]);
  await demo.trainer.evaluate();
}

function onTrainClick() {
  const t = demo.trainer;
  if (t.state === 'running') t.stop().catch(showError);
  else if (t.state !== 'pausing') {
    hideError();
    t.start().catch(showError);
  }
}

function onModeChange() {
  const t = demo.trainer;
  t.setCompiled(ui.compiled.checked).catch(showError);
  refreshStats();
  if (t.state !== 'running') {
    setStatus(t.compiled ? 'Steps will run compiled (skiff.jit).' : 'Steps will run eagerly.');
  }
}

function onConfigChange() {
  const t = demo.trainer;
  const config = readConfig();
  if (!(config.lr > 0 && config.lr < 10)) {
    ui.lr.setCustomValidity('a learning rate between 0 and 10');
    ui.lr.reportValidity();
    return;
  }
  ui.lr.setCustomValidity('');
  t.lr = config.lr;
  t.batchSize = config.batchSize;
  if (config.schedule !== t.config.schedule) t.schedule = config.schedule;
  showScheduleHint();
  if (config.model !== t.config.model || config.optimizer !== t.config.optimizer) {
    if (t.step === 0 && t.state !== 'running') resetModel(config).catch(showError);
    else {
      ui.reset.classList.add('attention');
      setStatus('Press Reset to start over with the new model or optimizer.');
    }
  }
}

async function onDownload() {
  const t = demo.trainer;
  const { step, epoch } = t;
  const bytes = withProgress(await t.stateDict(), { model: t.config.model, step, epoch });
  download(bytes, `skiff-mnist-${t.config.model}-step${step}.safetensors`);
  setStatus(`Downloaded the ${MODELS[t.config.model].label} at step ${t.step}.`);
}

async function onUpload() {
  const file = ui.upload.files[0];
  ui.upload.value = '';
  if (!file) return;
  const bytes = new Uint8Array(await file.arrayBuffer());
  let kind;
  try {
    const tensors = skiff.loadSafetensors(bytes);
    try {
      kind = modelOf(tensors);
    } finally {
      skiff.dispose(Object.values(tensors));
    }
  } catch (e) {
    throw fileError(`${file.name}: ${e.message}`);
  }
  // The step the file was saved at (its metadata, or its name as this page names downloads).
  const progress = readProgress(bytes, file.name);
  const config = { ...readConfig(), model: kind };
  await demo.trainer.load(config, bytes, progress);
  showConfig(config);
  charts.loss.clear();
  charts.acc.clear();
  refreshStats();
  await Promise.all([syncPredictor(), showSummary()]);
  await demo.trainer.evaluate();
  await demo.trainer.checkpointNow();
  const at = progress.step ? ` (saved at step ${progress.step})` : '';
  setStatus(`Loaded ${file.name}${at}: test accuracy ${pct(demo.lastEval.acc)}. Press ${progress.step ? 'Resume' : 'Train'} to keep training it.`);
}

// ---- start-up -----------------------------------------------------------

async function boot() {
  const params = new URLSearchParams(location.search);
  const wanted = params.get('device') ?? 'auto';
  ui.compiled.checked = params.get('compiled') === '1';
  const hooks = {
    onLog: (log) => {
      $('stat-speed').textContent = log.samplesPerSec == null ? $('stat-speed').textContent : Math.round(log.samplesPerSec).toLocaleString('en');
      refreshStats();
    },
    onEval: (result) => {
      demo.evals += 1;
      demo.lastEval = { step: result.step, loss: result.loss, acc: result.acc };
      showPredictions(result.predictions);
      showResults(result);
      refreshStats();
      showWeights().catch(showError);
      checkCollapse(result);
    },
    onCheckpoint: async (cp) => {
      demo.predictor.load(cp.config.model, cp.model, cp.step);
      if (!demo.pad.isEmpty()) predictDrawing();
      try {
        await saveLatest(cp);
        $('saved').textContent = `Saved in this browser at step ${cp.step}: a reload resumes from there.`;
      } catch (e) {
        $('saved').textContent = `Could not keep the model in this browser (${e?.message ?? e}); downloads still work.`;
      }
    },
    onState: refreshButtons,
    onError: showError,
  };
  // The page's own skiff (cpu: one digit at a time), the digits and the worker start together.
  const [, data, trainer] = await Promise.all([skiff.init({ device: 'cpu' }), loadMnist(), RemoteTrainer.start(wanted, hooks)]);
  demo.trainer = trainer;
  trainer.compiled = ui.compiled.checked;
  // A software GPU runs both models far slower than the wasm cpu backend
  // does (it does the GPU's work on the same cores): the cpu then, unless the
  // URL asks for WebGPU.
  const info = trainer.backend;
  if (wanted !== 'webgpu' && info.device === 'webgpu' && isSoftware(info)) {
    showBackend(await trainer.useCpu(), '', info.adapter?.name || 'a software adapter');
  } else {
    showBackend(info);
  }
  buildGrid(data.test);
  testSet = data.test;
  demo.pad = new DrawPad($('pad'), { onChange: predictDrawing, onClear: () => probabilityBars($('probs'), null) });
  probabilityBars($('probs'), null);

  const saved = await loadLatest().catch(() => undefined);
  let resumed = false;
  if (saved && MODELS[saved.config?.model] && OPTIMIZERS[saved.config?.optimizer]) {
    try {
      showConfig(saved.config);
      await trainer.build(saved.config, saved);
      resumed = true;
    } catch (e) {
      console.warn(`skiff demo: the saved model could not be restored (${e.message}); starting afresh`);
    }
  }
  if (!resumed) await trainer.build(readConfig());
  showScheduleHint();
  refreshStats();
  await Promise.all([syncPredictor(), showSummary()]);
  await trainer.evaluate();
  refreshButtons();
  setStatus(
    resumed
      ? `Resumed from step ${saved.step} (saved ${new Date(saved.savedAt).toLocaleString()}). Press ${saved.step ? 'Resume' : 'Train'} to keep training.`
      : 'Ready: press Train.',
  );

  const guard = (fn) => () => Promise.resolve().then(fn).catch(showError);
  ui.train.addEventListener('click', onTrainClick);
  ui.reset.addEventListener('click', guard(() => resetModel()));
  for (const el of [ui.model, ui.optimizer, ui.lr, ui.schedule, ui.batch]) el.addEventListener('change', onConfigChange);
  ui.compiled.addEventListener('change', onModeChange);
  ui.download.addEventListener('click', guard(onDownload));
  ui.upload.addEventListener('change', guard(onUpload));
  $('pad-clear').addEventListener('click', () => demo.pad.clear());
  $('error-dismiss').addEventListener('click', hideError);
  $('error-cpu').addEventListener('click', guard(continueOnCpu));
  // A tab hidden (switched away from, or about to close) checkpoints a running
  // model now, rather than up to CHECKPOINT_MS later. The promise (of the
  // checkpoint's step) is kept for the tests.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState !== 'hidden' || demo.trainer.state !== 'running') return;
    demo.hiddenCheckpoint = demo.trainer.checkpointNow();
    demo.hiddenCheckpoint.catch(() => {});
  });
}

// Resolves to true once the page works, false when start-up failed (shown on the page).
demo.ready = boot().then(
  () => true,
  (e) => {
    showError(e);
    document.body.dataset.state = 'failed';
    return false;
  },
);
