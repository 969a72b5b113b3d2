// The page's side of the training worker (www/train-worker.js): a
// RemoteTrainer that mirrors the worker's Trainer from the snapshots it sends
// (so the page reads step, state, history, ... synchronously, as it read the
// Trainer when training ran on the page), and a Predictor that answers the
// drawing pad on the page's own skiff, with the weights of the latest
// checkpoint, so a prediction never waits for a training step.
import * as skiff from 'skiff-ml';
import { SkiffWorker } from 'skiff-ml/worker';
import { MODELS } from './trainer.js';

/** The worker's error, rebuilt: a SkiffError with its op and kind, or an Error with the page's own kind. */
function rebuild(data) {
  if (data.name === 'SkiffError') return new skiff.SkiffError(data.message, { op: data.op, kind: data.kind });
  return Object.assign(new Error(data.message), { kind: data.kind });
}

export class RemoteTrainer {
  /** Starts the worker with skiff on `device`; hooks as the Trainer's: onLog, onEval, onCheckpoint, onState, onError. */
  static async start(device, hooks) {
    const worker = new Worker(new URL('../train-worker.js', import.meta.url), { type: 'module', name: 'skiff trainer' });
    return new RemoteTrainer(await SkiffWorker.start(worker, { device }), hooks);
  }

  constructor(worker, hooks) {
    this.worker = worker;
    this.backend = worker.backend;
    this.hooks = hooks;
    this.state = 'idle';
    this.step = 0;
    this.epoch = 0;
    this.config = null;
    this.compiled = false;
    this.device = null;
    this.history = { trainLoss: [], trainAcc: [], testLoss: [], testAcc: [] };
    this.jitStep = null; // { captures, replays, kernels, log }
    this.ms = { eager: null, compiled: null };
    this.lastCheckpoint = null;
    this.modeSwitch = null; // the last set({ compiled }): resolves to what had run when it took effect
    this.paused = null; // the last stop(): resolves once the worker evaluated and checkpointed
    this.saving = Promise.resolve(); // the onCheckpoint hook of the last checkpoint (the page keeps it)
    worker.on('update', ({ snapshot, samplesPerSec }) => {
      this.apply(snapshot);
      if (samplesPerSec !== undefined) hooks.onLog?.({ samplesPerSec });
      else hooks.onState?.(this.state);
    });
    worker.on('eval', ({ result, snapshot }) => {
      this.apply(snapshot);
      hooks.onEval?.(result);
    });
    worker.on('checkpoint', (cp) => {
      this.lastCheckpoint = cp;
      // A wait for the save only waits: a failure is logged (as an unawaited
      // rejection was before), not passed to the pause that waits.
      this.saving = Promise.resolve(hooks.onCheckpoint?.(cp)).catch((e) => console.error('skiff demo: keeping a checkpoint failed', e));
    });
    worker.on('failed', ({ error, snapshot }) => {
      this.apply(snapshot);
      hooks.onState?.(this.state);
      hooks.onError?.(rebuild(error));
    });
  }

  apply(snapshot) {
    // A snapshot taken before a compiled switch must not undo it on the page.
    const { compiled, ...rest } = snapshot;
    Object.assign(this, rest);
    this.jitStep = snapshot.jit;
    if (this.pendingCompiled === undefined) this.compiled = compiled;
  }

  msPerStep(mode) {
    return this.ms[mode];
  }

  async call(method, arg) {
    const snapshot = await this.worker.call(method, arg);
    this.apply(snapshot);
    this.hooks.onState?.(this.state);
    return snapshot;
  }

  /** A fresh model for `config`, or `checkpoint` restored. */
  build(config, checkpoint = null) {
    this.lastCheckpoint = checkpoint;
    return this.call('build', { config, checkpoint, compiled: this.compiled });
  }

  /** A model file's weights for `config`, at the step and epoch it was saved at. */
  load(config, bytes, { step = 0, epoch = 0 } = {}) {
    return this.call('load', { config, bytes, step, epoch, compiled: this.compiled });
  }

  evaluate() {
    return this.worker.call('evaluate');
  }

  /**
   * The worker's answer to `method` once the page's onCheckpoint is done with
   * the checkpoints sent before it (their events arrive first), so a reload
   * after it resumes there.
   */
  async callAndSave(method) {
    const snapshot = await this.call(method);
    await this.saving;
    return snapshot;
  }

  /** A checkpoint of the current model now (sent back as an onCheckpoint, and kept); resolves to its step. */
  async checkpointNow() {
    return (await this.callAndSave('checkpoint')).checkpointStep;
  }

  /** Training starts in the worker; the page shows it at once. */
  start() {
    if (this.state === 'running') return Promise.resolve();
    this.state = 'running';
    this.hooks.onState?.(this.state);
    return this.call('start');
  }

  /**
   * Pauses after the step in flight (the state turns 'paused' then); the
   * worker then evaluates and checkpoints there, and the promise (also kept
   * as `paused`) resolves once it has and the page kept the checkpoint.
   */
  stop() {
    if (this.state !== 'running') return this.paused ?? Promise.resolve();
    this.state = 'pausing';
    this.hooks.onState?.(this.state);
    this.paused = this.callAndSave('pause');
    return this.paused;
  }

  /** A config value, on the page at once and in the worker from its next step. */
  setting(key, value) {
    this.config[key] = value;
    this.worker.call('set', { [key]: value }).catch((e) => this.hooks.onError?.(e));
  }

  set lr(value) {
    this.setting('lr', value);
  }

  set schedule(value) {
    this.setting('schedule', value);
  }

  summary() {
    return this.worker.call('summary');
  }

  set batchSize(value) {
    this.setting('batchSize', value);
  }

  /** Eager or compiled from the worker's next step on. */
  setCompiled(value) {
    this.compiled = value;
    this.pendingCompiled = value;
    this.modeSwitch = this.worker.call('set', { compiled: value }).finally(() => {
      if (this.pendingCompiled === value) this.pendingCompiled = undefined;
    });
    return this.modeSwitch;
  }

  firstLayer() {
    return this.worker.call('firstLayer');
  }

  stateDict() {
    return this.worker.call('stateDict');
  }

  /** Moves the worker to the cpu; what init() reports there. */
  useCpu() {
    return this.worker.call('useCpu');
  }

  // For the tests: the worker's own view.
  optimizerLr() {
    return this.worker.call('optimizerLr');
  }

  memory() {
    return this.worker.call('memory');
  }

  loseDevice() {
    return this.worker.call('loseDevice');
  }
}

/** The drawing pad's model: the page's own skiff (on the cpu) with the weights of the last checkpoint. */
export class Predictor {
  constructor() {
    this.model = null;
    this.kind = null;
    this.step = null;
  }

  /** Takes the weights (safetensors) of a `kind` model ('mlp' or 'cnn') at `step`. */
  load(kind, bytes, step) {
    if (this.kind !== kind) {
      this.model?.free();
      this.model = MODELS[kind].build();
      this.kind = kind;
    }
    this.model.loadStateDict(bytes);
    this.step = step;
  }

  /** Class probabilities for one 28x28 image (784 floats in [0, 1]); null before any weights. */
  async predict(pixels) {
    if (!this.model) return null;
    const probs = skiff.tidy(() =>
      skiff.noGrad(() => this.model.forward(skiff.tensor(pixels, { shape: MODELS[this.kind].inputShape(1) })).softmax(1)),
    );
    try {
      return await probs.data();
    } finally {
      probs.dispose();
    }
  }
}
