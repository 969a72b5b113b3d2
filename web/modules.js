// nn layers and containers, optimizers and schedules, and the free functions
// over them: thin constructors over the Rust factories (src/web/nn, src/web/optim).

import * as raw from '../pkg/skiff.js';
import { ready } from './state.js';

/**
 * A constructor-like function: `new nn.Linear(4, 2)` (and plain `nn.Linear(4, 2)`)
 * returns the object the Rust factory builds.
 */
function ctor(name, factory) {
  // A `function` (not a method shorthand) so that `new` works; returning an
  // object from it makes that object the result of `new`.
  return {
    [name]: function (...args) {
      ready(name);
      return factory(...args);
    },
  }[name];
}

/**
 * `ctor` for layers: the new layer's parameters are moved to the default
 * device (what init chose), as tensor() places new tensors there.
 */
function layer(name, factory) {
  return ctor(name, (...args) => {
    const m = factory(...args);
    if (raw.getDefaultDevice() !== 'cpu') m.to(raw.getDefaultDevice());
    return m;
  });
}

if (!Array.isArray(raw.LAYER_TABLE)) {
  throw new Error('skiff: pkg/skiff.js has no LAYER_TABLE (a wasm-bindgen output not made by npm run build): run npm run build');
}

/**
 * The layer and container constructors, one per row of the layer table
 * (src/web/nn/layers.rs), which npm run build writes into pkg/skiff.js. A
 * `rest` row takes its modules as one array or as separate arguments:
 * Sequential([a, b]) or Sequential(a, b), as in PyTorch.
 */
const layers = Object.fromEntries(
  raw.LAYER_TABLE.map(({ name, factory, rest }) => {
    const make = rest
      ? (...a) => raw.Module[factory](a.length === 1 && Array.isArray(a[0]) ? a[0] : a)
      : (...a) => raw.Module[factory](...a);
    return [name, layer(name, make)];
  }),
);

/** Layers, containers, losses and weight init, with PyTorch's class names. */
export const nn = {
  ...layers,
  CrossEntropyLoss: ctor('CrossEntropyLoss', (...a) => raw.Loss.crossEntropyLoss(...a)),
  NLLLoss: ctor('NLLLoss', (...a) => raw.Loss.nllLoss(...a)),
  MSELoss: ctor('MSELoss', (...a) => raw.Loss.mseLoss(...a)),
  L1Loss: ctor('L1Loss', (...a) => raw.Loss.l1Loss(...a)),
  BCEWithLogitsLoss: ctor('BCEWithLogitsLoss', (...a) => raw.Loss.bceWithLogitsLoss(...a)),
  init: {
    calculateGain: (...a) => raw.calculateGain(...a),
    kaimingUniform_: (...a) => raw.initKaimingUniform_(...a),
    kaimingNormal_: (...a) => raw.initKaimingNormal_(...a),
    xavierUniform_: (...a) => raw.initXavierUniform_(...a),
    xavierNormal_: (...a) => raw.initXavierNormal_(...a),
    uniform_: (...a) => raw.initUniform_(...a),
    normal_: (...a) => raw.initNormal_(...a),
    constant_: (...a) => raw.initConstant_(...a),
    zeros_: (...a) => raw.initZeros_(...a),
    ones_: (...a) => raw.initOnes_(...a),
  },
  utils: {
    /** Scales gradients so their joint norm is at most maxNorm; returns the norm as a tensor (no readback). */
    clipGradNorm_: (...a) => raw.clipGradNorm(...a),
    clipGradValue_: (...a) => raw.clipGradValue(...a),
  },
};

/** Optimizers and learning-rate schedules, with PyTorch's class names. */
export const optim = {
  SGD: ctor('SGD', (...a) => raw.Optimizer.sgd(...a)),
  Adam: ctor('Adam', (...a) => raw.Optimizer.adam(...a)),
  AdamW: ctor('AdamW', (...a) => raw.Optimizer.adamw(...a)),
  RMSprop: ctor('RMSprop', (...a) => raw.Optimizer.rmsprop(...a)),
  Adagrad: ctor('Adagrad', (...a) => raw.Optimizer.adagrad(...a)),
  lrScheduler: {},
};
optim.StepLR = ctor('StepLR', (...a) => raw.LrScheduler.stepLR(...a));
optim.ExponentialLR = ctor('ExponentialLR', (...a) => raw.LrScheduler.exponentialLR(...a));
optim.CosineAnnealingLR = ctor('CosineAnnealingLR', (...a) => raw.LrScheduler.cosineAnnealing(...a));
optim.OneCycleLR = ctor('OneCycleLR', (...a) => raw.LrScheduler.oneCycleLR(...a));
Object.assign(optim.lrScheduler, {
  StepLR: optim.StepLR,
  ExponentialLR: optim.ExponentialLR,
  CosineAnnealingLR: optim.CosineAnnealingLR,
  OneCycleLR: optim.OneCycleLR,
});

/** Stacks tensors along a new dim (default 0). */
export const stack = (...a) => raw.stack(...a);
/** Serialises named tensors to safetensors bytes (awaits GPU reads). */
export const saveSafetensors = (...a) => raw.saveSafetensors(...a);
/** Named tensors from safetensors bytes. */
export const loadSafetensors = (...a) => raw.loadSafetensors(...a);
export const clipGradNorm = (...a) => raw.clipGradNorm(...a);
export const clipGradValue = (...a) => raw.clipGradValue(...a);

