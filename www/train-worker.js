// The demo's training worker: the Trainer (lib/trainer.js) with its own
// skiff instance and device, served to the page through skiff-ml/worker.
// The page (main.js) only draws: it calls the handlers below and shows the
// events the trainer sends ('update' after every logged window and state
// change, 'eval', 'checkpoint', 'failed').
//
// A worker has no import map: skiff is imported by the path the demo's
// server gives the package (as an app without a bundler would).
import * as skiff from '/web/index.js';
import { serve, transfer } from '/web/worker.js';
import { loadMnist } from './lib/mnist.js';
import { Trainer } from './lib/trainer.js';

let trainer = null;
let data = null;

/** An error as data the page can rebuild: a SkiffError's op and kind, or the page's own kind ('diverged'). */
const errorData = (e) => ({ message: e?.message ?? String(e), name: e?.name ?? 'Error', op: e?.op, kind: e?.kind });

const { emit } = serve(skiff, {
  /** Loads the digits (once) and builds the model of `config`, or restores `checkpoint`. */
  async build({ config, checkpoint = null, compiled = false }) {
    data ??= await loadMnist();
    trainer ??= new Trainer(data, hooks);
    await trainer.stop({ drain: false }); // the old model's last losses are not waited for
    trainer.build(config, checkpoint);
    trainer.compiled = compiled;
    return trainer.snapshot();
  },

  /**
   * A model file the user picked: built fresh for `config`, then loaded,
   * keeping the step and epoch the file says it was saved at.
   */
  async load({ config, bytes, step = 0, epoch = 0, compiled = false }) {
    await trainer.stop({ drain: false });
    trainer.build(config);
    trainer.compiled = compiled;
    trainer.model.loadStateDict(bytes);
    trainer.step = step;
    trainer.epoch = epoch;
    return trainer.snapshot();
  },

  /** The test set's loss, accuracy and predictions (also sent as an 'eval' event). */
  async evaluate() {
    return trainer.evaluate();
  },

  /** Starts the training loop; it runs until pause() (or an error, sent as 'failed'). */
  start() {
    trainer.start();
    return trainer.snapshot();
  },

  /**
   * Stops after the step in flight ('update' says so at once), evaluates
   * the model where it stopped, and checkpoints there, so a reload resumes
   * exactly here.
   */
  async pause() {
    await trainer.stop();
    if (trainer.state === 'failed') return trainer.snapshot();
    if (trainer.history.testAcc.at(-1)?.[0] !== trainer.step) await trainer.evaluate();
    await trainer.checkpoint();
    return trainer.snapshot();
  },

  /**
   * A checkpoint now (sent as a 'checkpoint' event): a hidden tab, a model
   * file loaded. The snapshot's checkpointStep is this checkpoint's, even
   * where the running loop checkpointed after it.
   */
  async checkpoint() {
    const { step } = await trainer.checkpoint();
    return { ...trainer.snapshot(), checkpointStep: step };
  },

  /** The model's layers: type, output shape and parameters. */
  summary: () => trainer.summary(),

  /** Settings that apply from the next step on; what had run when they took effect. */
  set({ lr, schedule, batchSize, compiled }) {
    if (lr !== undefined) trainer.lr = lr;
    if (schedule !== undefined) trainer.schedule = schedule;
    if (batchSize !== undefined) trainer.batchSize = batchSize;
    if (compiled !== undefined) trainer.compiled = compiled;
    const jit = trainer.jitStep;
    return { step: trainer.step, calls: jit.captures + jit.replays, compiled: trainer.compiled };
  },

  /** Moves training to the cpu (after a GPU failure, or for a software GPU). */
  async useCpu() {
    if (trainer) {
      await trainer.stop({ drain: false });
      trainer.release();
    }
    return skiff.init({ device: 'cpu' });
  },

  async firstLayer() {
    const w = await trainer.firstLayer();
    return transfer(w, [w.values.buffer]);
  },

  async stateDict() {
    const bytes = await trainer.model.stateDict();
    return transfer(bytes, [bytes.buffer]);
  },

  /** For the tests: what the trainer's optimizer really uses, and the worker's live tensors. */
  optimizerLr: () => trainer.optimizer.lr,
  memory: () => skiff.memory(),
  /** For the tests (the test build only): loses the worker's GPU device. */
  loseDevice: () => skiff.testing.loseDevice(),
});

const hooks = {
  onLog: (log) => emit('update', { snapshot: trainer.snapshot(), samplesPerSec: log.samplesPerSec }),
  onState: () => trainer && emit('update', { snapshot: trainer.snapshot() }),
  onEval: (result) => emit('eval', { result, snapshot: trainer.snapshot() }),
  // Copied, not moved: the trainer keeps its last checkpoint to continue from after a GPU failure.
  onCheckpoint: (cp) => emit('checkpoint', cp),
  onError: (e) => emit('failed', { error: errorData(e), snapshot: trainer.snapshot() }),
};
