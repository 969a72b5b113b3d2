// The training side of the demo: the two models, the loop (which yields to
// the event loop after every step, so calls and aborts get in between two
// steps), the test-set evaluation, and checkpoints. It runs in the demo's
// worker (www/train-worker.js); the page imports only MODELS, OPTIMIZERS and
// modelOf from here. skiff is imported by its path: a worker has no import map.
//
// GPU readbacks are what stall a WebGPU pipeline, so the loop reads the
// losses of LOG_EVERY steps in one readback, and evaluates (one more readback)
// every EVAL_EVERY steps. Every step's tensors live in a sync tidy(): an
// async scope would also collect the tensors the drawing pad creates while
// the loop awaits.
//
// The step runs eagerly or compiled (`compiled`): skiff.jit captures it on its
// first call (a fresh Adam's first step is captured again on the second call,
// as it creates the optimizer's state) and replays the program afterwards
// without entering JS. The program reads the learning rate at every call, and
// a batch of another size, or an optimizer whose state was loaded, makes it
// capture again by itself; only a new model or optimizer object (build())
// needs a new compiled function. Eager and compiled steps update the same
// model and optimizer, so the mode can change between any two steps.
import * as skiff from '/web/index.js';
import { gather } from './mnist.js';
import { divergedError } from './errors.js';
import { StepSpeed, StepWindow } from './speed.js';

export const LOG_EVERY = 10;
export const EVAL_EVERY = 50;
// A running loop also checkpoints when this long has passed since the last
// one, so a reload or a crash while training loses at most this much.
export const CHECKPOINT_MS = 2000;
// Digits per evaluation chunk: a pause waits for at most one chunk, so it stays
// short, yet each chunk is large enough that yielding between chunks costs little.
const EVAL_CHUNK = 250;

const { nn, optim } = skiff;

/** The models the page offers; `first` names the first layer's weight. */
export const MODELS = {
  mlp: {
    label: 'MLP (784-128-10)',
    build: () => new nn.Sequential(new nn.Linear(784, 128), new nn.ReLU(), new nn.Linear(128, 10)),
    inputShape: (n) => [n, 784],
    first: { key: '0.weight', count: 16, rows: 28, cols: 28 },
  },
  cnn: {
    label: 'CNN (2 conv layers)',
    build: () =>
      new nn.Sequential(
        new nn.Conv2d(1, 8, 5, { padding: 2 }),
        new nn.ReLU(),
        new nn.MaxPool2d(2),
        new nn.Conv2d(8, 16, 5, { padding: 2 }),
        new nn.ReLU(),
        new nn.MaxPool2d(2),
        new nn.Flatten(),
        new nn.Linear(16 * 7 * 7, 10),
      ),
    inputShape: (n) => [n, 1, 28, 28],
    first: { key: '0.weight', count: 8, rows: 5, cols: 5 },
  },
};

export const OPTIMIZERS = {
  adam: { label: 'Adam', build: (params, lr) => new optim.Adam(params, { lr }) },
  sgd: { label: 'SGD, momentum 0.9', build: (params, lr) => new optim.SGD(params, { lr, momentum: 0.9 }) },
};

/**
 * Learning-rate schedules: the factor on the chosen rate at `step`. A
 * function of the step alone, so a resumed run continues its schedule
 * exactly (no scheduler state to checkpoint).
 */
export const SCHEDULES = {
  constant: { label: 'Constant', hint: 'the chosen rate throughout', factor: () => 1 },
  step: { label: 'Step decay', hint: 'halved every 500 steps', factor: (step) => 0.5 ** Math.floor(step / 500) },
  cosine: {
    label: 'Cosine',
    hint: 'down to 0 over 2,000 steps, then held at 1%',
    factor: (step) => (step >= 2000 ? 0.01 : 0.5 * (1 + Math.cos((Math.PI * step) / 2000))),
  },
};

/** The rate `config` schedules for `step`. */
export const scheduledLr = (config, step) => config.lr * SCHEDULES[config.schedule ?? 'constant'].factor(step);

/** Which of MODELS a state dict ({ name: Tensor }) belongs to, or an Error saying why none. */
export function modelOf(tensors) {
  const w = tensors['0.weight'];
  const shape = w ? JSON.stringify(w.shape) : 'missing';
  if (shape === '[128,784]') return 'mlp';
  if (shape === '[8,1,5,5]') return 'cnn';
  throw new Error(
    `this file is not a model of this page: its "0.weight" is ${shape}, expected [128,784] (MLP) or [8,1,5,5] (CNN)`,
  );
}

// Lets queued messages (the page's calls) run between steps. A MessageChannel
// message is not clamped to 4 ms like a nested setTimeout(0).
const channel = new MessageChannel();
const waiting = [];
channel.port1.onmessage = () => waiting.shift()?.();
const yieldToQueue = () => new Promise((resolve) => (waiting.push(resolve), channel.port2.postMessage(0)));

/** The training step over `model` and `optimizer`: returns [loss, number correct]. */
function stepOf(model, optimizer) {
  return (input, labels) => {
    optimizer.zeroGrad();
    const logits = model.forward(input);
    const loss = logits.crossEntropy(labels);
    loss.backward();
    optimizer.step();
    return [loss.detach(), skiff.noGrad(() => logits.argmax(1).eq(labels).float().sum())];
  };
}

function shuffled(n) {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

export class Trainer {
  /**
   * data: loadMnist()'s { train, test }. hooks: onLog({ step, loss, acc,
   * samplesPerSec }), onEval({ step, loss, acc, predictions }),
   * onCheckpoint(cp), onState(state), onError(error); each optional.
   */
  constructor(data, hooks = {}) {
    this.data = data;
    this.hooks = hooks;
    this.state = 'idle'; // idle | running | paused | failed
    this.loop = Promise.resolve();
    this.stopRequested = false;
    this.model = null;
    this.optimizer = null;
    this.compiled = false; // run the step through skiff.jit (takes effect at the next step)
    this.eagerStep = null; // stepOf(model, optimizer)
    this.jitStep = null; // skiff.jit(eagerStep), made with the model and optimizer
    this.speed = new StepSpeed(); // kept across builds: a measured workload stays measured
    this.lastCheckpoint = null;
    this.checkpointedAt = performance.now();
    this.testCache = null; // the test set as device tensors: { device, chunks: [{ x, y }] }
  }

  /**
   * Builds a fresh model (config: { model, optimizer, lr, batchSize }), or
   * restores `checkpoint`. Call stop() first when training.
   */
  build(config, checkpoint = null) {
    if (this.state === 'running') throw new Error('build: stop() the training first');
    this.release();
    this.config = { ...config };
    this.model = MODELS[config.model].build();
    // The optimizer keeps its own references: the handles can go at once.
    const params = this.model.parameters();
    this.optimizer = OPTIMIZERS[config.optimizer].build(params, config.lr);
    skiff.dispose(params);
    this.eagerStep = stepOf(this.model, this.optimizer);
    this.jitStep = skiff.jit(this.eagerStep);
    this.step = 0;
    this.epoch = 0;
    this.order = [];
    this.history = { trainLoss: [], trainAcc: [], testLoss: [], testAcc: [] };
    if (checkpoint) {
      this.model.loadStateDict(checkpoint.model);
      if (checkpoint.optimizer) this.optimizer.loadStateDict(checkpoint.optimizer);
      this.step = checkpoint.step ?? 0;
      this.epoch = checkpoint.epoch ?? 0;
      if (checkpoint.history) this.history = structuredClone(checkpoint.history);
      this.lastCheckpoint = checkpoint;
    } else {
      this.lastCheckpoint = null;
    }
    this.setState('idle');
  }

  /** Frees the model, the optimizer state, the compiled step's programs and the cached test set. */
  release() {
    // The programs hold the parameters and optimizer state they captured.
    this.jitStep?.clear();
    this.model?.free();
    this.optimizer?.free();
    this.model = this.optimizer = this.eagerStep = this.jitStep = null;
    this.dropTestCache();
  }

  setState(state) {
    this.state = state;
    this.hooks.onState?.(state);
  }

  set lr(value) {
    this.config.lr = value;
    if (this.optimizer) this.optimizer.lr = scheduledLr(this.config, this.step);
  }

  set schedule(value) {
    this.config.schedule = value;
    if (this.optimizer) this.optimizer.lr = scheduledLr(this.config, this.step);
  }

  set batchSize(value) {
    this.config.batchSize = value;
  }

  /** Which speeds are compared: the same model, optimizer, batch size and device. */
  workload() {
    const { model, optimizer, batchSize } = this.config;
    return `${model}|${optimizer}|${batchSize}|${skiff.getDefaultDevice()}`;
  }

  /** The median ms per step of `mode` ('eager' or 'compiled') on the current workload, or null. */
  msPerStep(mode) {
    return this.speed.msPerStep(this.workload(), mode);
  }

  /** Starts training in the background; it runs until stop() (or an error, reported through onError). */
  start() {
    if (this.state === 'running' || !this.model) return this.loop;
    this.stopRequested = false;
    this.setState('running');
    this.loop = this.run();
    return this.loop;
  }

  /**
   * Asks the loop to stop after the current step; resolves once it has
   * (state 'paused') and, with `drain` (the default), once the readbacks of
   * its last steps arrived and were logged. Without `drain` it resolves as
   * soon as no more steps run (what a Reset needs: the old steps' losses
   * then go to the old curves, and nowhere else).
   */
  async stop({ drain = true } = {}) {
    if (this.state !== 'running') return drain ? this.loop : undefined;
    this.stopRequested = true;
    this.wakeStop?.();
    await (drain ? this.loop : this.loopExited);
  }

  async run() {
    const pending = []; // per step: [loss, correct] tensors, read LOG_EVERY at a time
    let pendingSamples = 0; // their batches' sizes added up (the batch size may change between steps)
    let timing = new StepWindow(performance.now());
    // A readback waits for every step queued on the GPU before it (hundreds
    // of ms on a software adapter): a pause does not wait for it to stop.
    const stopping = new Promise((resolve) => (this.wakeStop = resolve));
    let exited;
    this.loopExited = new Promise((resolve) => (exited = resolve));
    const draining = [];
    const { history } = this; // a Reset replaces it: this loop's late errors are then no one's
    try {
      while (!this.stopRequested) {
        const mode = this.compiled ? 'compiled' : 'eager';
        const captures = this.jitStep.captures;
        pending.push(this.trainStep());
        pendingSamples += this.config.batchSize;
        timing.add({ mode, workload: this.workload(), samples: this.config.batchSize, captured: this.jitStep.captures !== captures });
        this.step += 1;
        if (pending.length >= LOG_EVERY) {
          // The readback waits for the GPU, so the time is taken after it.
          const timed = timing;
          const flushing = this.flush(pending, pendingSamples, () => this.timeWindow(timed));
          pendingSamples = 0;
          timing = new StepWindow(performance.now());
          await Promise.race([flushing, stopping]);
          if (this.stopRequested) {
            draining.push(flushing);
            break;
          }
          await flushing;
          // A pause during the evaluation abandons it: the pause evaluates
          // and checkpoints where it stopped (a Reset needs neither).
          const evaluated = this.step % EVAL_EVERY < LOG_EVERY && (await this.evaluate({ stopping }));
          if (this.stopRequested) break;
          if (evaluated || performance.now() - this.checkpointedAt >= CHECKPOINT_MS) await this.checkpoint();
          timing = new StepWindow(performance.now());
        }
        await yieldToQueue();
      }
      this.setState('paused');
      exited();
      if (pending.length) draining.push(this.flush(pending, pendingSamples, () => ({ samplesPerSec: null })));
      await Promise.all(draining);
    } catch (e) {
      skiff.dispose(pending.flat());
      exited();
      if (history !== this.history) return;
      this.setState('failed');
      this.hooks.onError?.(e);
    }
  }

  nextBatch() {
    const n = this.data.train.count;
    const b = Math.min(this.config.batchSize, n);
    if (this.order.length < b) {
      if (this.step > 0) this.epoch += 1;
      this.order = shuffled(n);
    }
    return gather(this.data.train, this.order.splice(0, b));
  }

  /** The speed of a finished window; a clean one is recorded for its mode. */
  timeWindow(timing) {
    const ms = performance.now() - timing.start;
    const clean = timing.clean();
    if (clean) this.speed.record(clean.workload, clean.mode, ms, timing.steps);
    return { samplesPerSec: timing.samples / (ms / 1000) };
  }

  /** One optimisation step, eager or compiled; returns its [loss, number correct] as kept tensors. */
  trainStep() {
    const { x, y } = this.nextBatch();
    const shape = MODELS[this.config.model].inputShape(y.length);
    const step = this.compiled ? this.jitStep : this.eagerStep;
    // A compiled step reads the rate at every call: a schedule recaptures nothing.
    this.optimizer.lr = scheduledLr(this.config, this.step);
    return skiff.tidy(() => step(skiff.tensor(x, { shape }), skiff.tensor(y, { dtype: 'int32' })));
  }

  /**
   * Reads the pending steps' losses in one readback and reports their mean,
   * on the curves of the model they trained (a Reset may have come since).
   */
  async flush(pending, samples, speed) {
    const steps = pending.splice(0);
    const { history, step, epoch } = this;
    const stacked = skiff.tidy(() => skiff.stack(steps.map(([loss, correct]) => skiff.stack([loss, correct]))));
    skiff.dispose(steps.flat());
    const values = await stacked.data();
    stacked.dispose();
    const { samplesPerSec } = speed();
    let loss = 0;
    let correct = 0;
    for (let i = 0; i < steps.length; i++) {
      loss += values[2 * i];
      correct += values[2 * i + 1];
    }
    loss /= steps.length;
    const acc = correct / samples;
    if (history !== this.history) return; // rebuilt meanwhile: these steps trained a model that is gone
    if (!Number.isFinite(loss)) {
      throw divergedError(loss, this.config.lr);
    }
    history.trainLoss.push([step, loss]);
    history.trainAcc.push([step, acc]);
    this.hooks.onLog?.({ step, epoch, loss, acc, samplesPerSec });
  }

  dropTestCache() {
    if (this.testCache) skiff.dispose(this.testCache.chunks.flatMap((c) => [c.x, c.y]));
    this.testCache = null;
  }

  /** The test set as tensors on the current device, uploaded once. */
  testChunks() {
    const device = skiff.getDefaultDevice();
    if (this.testCache?.device !== device) {
      this.dropTestCache();
      const { test } = this.data;
      const chunks = [];
      for (let start = 0; start < test.count; start += EVAL_CHUNK) {
        const idx = Array.from({ length: Math.min(EVAL_CHUNK, test.count - start) }, (_, i) => start + i);
        const { x, y } = gather(test, idx);
        const shape = MODELS[this.config.model].inputShape(idx.length);
        chunks.push({ x: skiff.keep(skiff.tensor(x, { shape })), y: skiff.keep(skiff.tensor(y, { dtype: 'int32' })) });
      }
      this.testCache = { device, model: this.config.model, chunks };
    }
    return this.testCache.chunks;
  }

  /**
   * Loss, accuracy and every prediction on the held-out test set. The chunks
   * are computed one at a time with a yield between them, so a pause or a
   * call gets in (the CNN takes most of a second on the cpu). With
   * `stopping` (a promise that settles when a pause or Reset is asked for),
   * such a request abandons it (null), also while its readback waits for the
   * GPU: on a software adapter that is every chunk's forward pass (about 160
   * ms for the MLP on SwiftShader), which a Reset must not wait for.
   */
  async evaluate({ stopping = null } = {}) {
    if (this.testCache && this.testCache.model !== this.config.model) this.dropTestCache();
    const chunks = this.testChunks();
    const parts = [];
    for (const { x, y } of chunks) {
      parts.push(
        skiff.tidy(() =>
          skiff.noGrad(() => {
            const logits = this.model.forward(x);
            return [logits.crossEntropy(y, { reduction: 'sum' }), logits.argmax(1), logits.softmax(1).max(1)];
          }),
        ),
      );
      await yieldToQueue();
      if (stopping && this.stopRequested) {
        skiff.dispose(parts.flat());
        return null;
      }
    }
    // Two readbacks for the whole set (each stalls a GPU pipeline): the
    // predictions, and the loss followed by each prediction's probability.
    const [floats, predictions] = skiff.tidy(() => [
      skiff.cat([skiff.stack(parts.map(([l]) => l)).sum().reshape([1]), ...parts.map(([, , c]) => c)]),
      skiff.cat(parts.map(([, p]) => p)),
    ]);
    skiff.dispose(parts.flat());
    const reading = Promise.all([floats.data(), predictions.data()]);
    // The tensors go once their readbacks are done, whoever still waits for them.
    reading.finally(() => skiff.dispose([floats, predictions])).catch(() => {});
    const abandoned = stopping && (await Promise.race([reading.then(() => false), stopping.then(() => true)]));
    if (abandoned) return null;
    const [floatValues, predValues] = await reading;
    const { test } = this.data;
    let correct = 0;
    for (let i = 0; i < test.count; i++) if (predValues[i] === test.labels[i]) correct += 1;
    const result = {
      step: this.step,
      loss: floatValues[0] / test.count,
      acc: correct / test.count,
      predictions: predValues,
      confidence: floatValues.subarray(1),
    };
    this.history.testLoss.push([this.step, result.loss]);
    this.history.testAcc.push([this.step, result.acc]);
    this.hooks.onEval?.(result);
    return result;
  }

  /** Class probabilities for one 28x28 image (784 floats in [0, 1]); null while no model is built. */
  async predict(pixels) {
    if (!this.model) return null;
    const probs = skiff.tidy(() =>
      skiff.noGrad(() => {
        const x = skiff.tensor(pixels, { shape: MODELS[this.config.model].inputShape(1) });
        return this.model.forward(x).softmax(1);
      }),
    );
    try {
      return await probs.data();
    } finally {
      probs.dispose();
    }
  }

  /**
   * What the page shows of the trainer, as plain data: progress, curves,
   * the compiled step's program and the measured speeds.
   */
  snapshot() {
    const jit = this.jitStep;
    return {
      state: this.state,
      step: this.step,
      epoch: this.epoch,
      config: { ...this.config },
      compiled: this.compiled,
      device: skiff.getDefaultDevice(),
      history: this.history,
      jit: jit ? { captures: jit.captures, replays: jit.replays, kernels: jit.kernels, log: [...jit.log] } : null,
      ms: { eager: this.msPerStep('eager'), compiled: this.msPerStep('compiled') },
      checkpointStep: this.lastCheckpoint?.step ?? null,
    };
  }

  /**
   * The model layer by layer, as tfjs-vis and Keras summarise one: name,
   * type, output shape (N: the batch) and parameters, from a forward pass of
   * one zero image.
   */
  summary() {
    const spec = MODELS[this.config.model];
    const layers = this.model.children();
    try {
      return skiff.tidy(() =>
        skiff.noGrad(() => {
          let x = skiff.zeros(spec.inputShape(1));
          return layers.map(([name, layer]) => {
            x = layer.forward(x);
            return { name, type: layer.typeName, shape: ['N', ...x.shape.slice(1)], params: layer.numParameters };
          });
        }),
      );
    } finally {
      for (const [, layer] of layers) layer.free(); // the handles; the model keeps its layers
    }
  }

  /** The first layer's weights (MLP units or CNN filters), for display. */
  async firstLayer() {
    const spec = MODELS[this.config.model].first;
    const params = this.model.namedParameters();
    try {
      const weight = params.find(([name]) => name === spec.key)[1];
      const values = await weight.data();
      return { ...spec, values: values.subarray(0, spec.count * spec.rows * spec.cols) };
    } finally {
      skiff.dispose(params.map(([, t]) => t));
    }
  }

  /** Model and optimizer state as safetensors, with the progress; reported through onCheckpoint. */
  async checkpoint() {
    // Taken between two steps: the progress is read with the weights' readback
    // requested, before any later step (the page may ask while the loop runs).
    const progress = { config: { ...this.config }, step: this.step, epoch: this.epoch, history: structuredClone(this.history) };
    this.checkpointedAt = performance.now();
    const [model, optimizer] = await Promise.all([this.model.stateDict(), this.optimizer.stateDict()]);
    this.lastCheckpoint = { ...progress, model, optimizer, savedAt: Date.now() };
    await this.hooks.onCheckpoint?.(this.lastCheckpoint);
    return this.lastCheckpoint;
  }
}
