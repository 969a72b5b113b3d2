// Bad arguments and options through the JS surface: each must throw a JS
// Error whose message names the op (as the user called it, or skiff's op
// name) and the bad value or option. Several are regression tests of
// binding bugs: traps (`unreachable`) on sizes a JS number can hold but
// wasm32 cannot allocate, numbers silently truncated or coerced, misspelt
// options silently ignored. Returns { count, failures }.
//
// No skiff import: the module under test is passed in (browser and Node).

import { checker } from './checks.js';

export const errorScenarios = {
  async badArguments(skiff) {
    const { tensor, nn, optim, testing } = skiff;
    const c = checker();
    const x = tensor([
      [1, 2],
      [3, 4],
    ]);
    const img = skiff.zeros([1, 1, 4, 4]);
    const w = skiff.zeros([1, 1, 2, 2]);
    const param = () => tensor([1, 2], { requiresGrad: true });
    const sgd = new optim.SGD([param()], { lr: 0.1 });
    const cases = [
      // ---- creation: checked integers and numbers, sizes wasm32 can hold
      ['linspace steps -1 (was a trap)', () => skiff.linspace(0, 1, -1), /^linspace:/, /steps/, /-1/],
      ['linspace steps 2.5 (was truncated)', () => skiff.linspace(0, 1, 2.5), /^linspace:/, /2\.5/],
      ['eye(-1) (was a 4294967295-row tensor)', () => skiff.eye(-1), /^eye:/, /-1/],
      ['eye(70000) (was a trap)', () => skiff.eye(70000), /^eye:/, /70000/],
      ['arange(0, 1e12) (was a trap)', () => skiff.arange(0, 1e12), /^arange:/, /1000000000000/],
      ["arange(0, '5') (was coerced)", () => skiff.arange(0, '5'), /^arange:/, /end/, /"5"/],
      ['randint high 2.5 (was truncated)', () => skiff.randint(0, 2.5, [3]), /^randint:/, /high/, /2\.5/],
      ["full([2], 'a') (was NaN)", () => skiff.full([2], 'a'), /^full:/, /value/, /"a"/],
      ['full([2]) without a value (was NaN)', () => skiff.full([2]), /^full:/, /value/, /undefined/],
      ['zeros(1e9) as a number (was a trap)', () => skiff.zeros(1e9), /^zeros:/, /1000000000/],
      ["manualSeed('5') (was coerced)", () => skiff.manualSeed('5'), /^manualSeed:/, /"5"/],
      ["requiresGrad_('no') (was coerced)", () => tensor([1]).requiresGrad_('no'), /^requiresGrad_:/, /"no"/],
      ["tensor option requiresGrad 'no'", () => tensor([1], { requiresGrad: 'no' }), /^tensor:/, /requiresGrad/, /"no"/],
      ['tensor option requires_grad (was ignored)', () => tensor([1], { requires_grad: true }), /^tensor:/, /"requires_grad"/],
      ["tensor options 'float32' (was ignored)", () => tensor([1], 'float32'), /^tensor:/, /options must be an object/],
      ['zeros option dytpe (was ignored)', () => skiff.zeros([2], { dytpe: 'int32' }), /^zeros:/, /"dytpe"/],
      ['init option devcie (was ignored)', () => skiff.init({ devcie: 'cpu' }), /^init:/, /"devcie"/],
      ['needsInputGrad(-1) (was coerced)', () => new skiff.FunctionCtx().needsInputGrad(-1), /^needsInputGrad:/, /-1/],
      // ---- misspelt options of Tensor methods (were ignored)
      ['sum keepDim', () => x.sum(1, { keepDim: true }), /^sum:/, /"keepDim"/, /keepdim/],
      ['conv2d strides', () => img.conv2d(w, null, { strides: 2 }), /^conv2d:/, /"strides"/],
      ['maxPool2d dilatoin', () => img.maxPool2d(2, { dilatoin: 1 }), /^maxPool2d:/, /"dilatoin"/],
      ['crossEntropy label_smoothing', () => x.crossEntropy(tensor(new Int32Array([0, 1])), { label_smoothing: 0.1 }), /^crossEntropy:/, /"label_smoothing"/],
      ['backward retain_graph', () => param().sum().backward(undefined, { retain_graph: true }), /^backward:/, /"retain_graph"/],
      ['grad create_graph', () => skiff.grad(param().sum(), param(), { create_graph: true }), /^grad:/, /"create_graph"/],
      ['unfold strides', () => skiff.unfold(img, 2, { strides: 2 }), /^unfold:/, /"strides"/],
      // ---- bad option values
      ["max keepdim 'y'", () => x.max(1, { keepdim: 'y' }), /^max:/, /keepdim/, /"y"/],
      ['var with correction and unbiased', () => x.var(1, { correction: 1, unbiased: true }), /^var:/, /correction/, /unbiased/],
      ["sum('a')", () => x.sum('a'), /^sum:/, /axes/, /"a"/],
      ["gelu approximate 'fast'", () => x.gelu({ approximate: 'fast' }), /^gelu:/, /"fast"/],
      ["crossEntropy reduction 'avg'", () => x.crossEntropy(tensor(new Int32Array([0, 1])), { reduction: 'avg' }), /^crossEntropy:/, /"avg"/],
      ['maxPool2d ceilMode', () => img.maxPool2d(2, { ceilMode: true }), /^maxPool2d:/, /ceilMode/],
      ['avgPool2d countIncludePad false', () => img.avgPool2d(2, { countIncludePad: false }), /^avgPool2d:/, /countIncludePad/],
      ['conv2d groups 2.5', () => img.conv2d(w, null, { groups: 2.5 }), /^conv2d:/, /groups/, /2\.5/],
      ["fold stride 'a'", () => skiff.fold(skiff.zeros([1, 4, 4]), 3, 2, { stride: 'a' }), /^fold:/, /stride/, /"a"/],
      ['layerNorm(-1)', () => x.layerNorm(-1), /^layerNorm:/, /normalizedShape/, /-1/],
      ['dropout(2)', () => x.dropout(2), /^dropout:/, /\b2\b/],
      ["indexAdd alpha 'x'", () => x.indexAdd(0, tensor(new Int32Array([0])), skiff.ones([1, 2]), { alpha: 'x' }), /^indexAdd:/, /alpha/, /"x"/],
      ['where with a float condition', () => skiff.where(tensor([1, 0]), 1, 2), /^where:/, /bool/],
      ['tidy(5)', () => skiff.tidy(5), /^tidy:/, /function/],
      ['Function without backward', () => new skiff.Function({ forward: (ctx, a) => a }), /^Function:/, /backward/],
      // ---- nn
      ['Linear option bais', () => new nn.Linear(2, 3, { bais: false }), /^Linear:/, /"bais"/],
      ['Conv2d padding -1', () => new nn.Conv2d(1, 1, 3, { padding: -1 }), /^Conv2d:/, /padding/, /-1/],
      ["GELU approximate 'x'", () => new nn.GELU({ approximate: 'x' }), /^GELU:/, /"x"/],
      ['BatchNorm1d momentum 2 (named a Rust struct)', () => new nn.BatchNorm1d(4, { momentum: 2 }), /^BatchNorm1d:/, /momentum/, /\b2\b/],
      ['BatchNorm2d(0)', () => new nn.BatchNorm2d(0), /^BatchNorm2d:/, /numFeatures/, /\b0\b/],
      ['MultiheadAttention(4, 3) (named embed_dim)', () => new nn.MultiheadAttention(4, 3), /^MultiheadAttention:/, /embedDim 4/, /numHeads 3/],
      ['MultiheadAttention dropout 1', () => new nn.MultiheadAttention(4, 2, { dropout: 1 }), /^MultiheadAttention:/, /dropout/, /\b1\b/],
      ['Conv2d stride 0 (was built)', () => new nn.Conv2d(1, 1, 3, { stride: 0 }), /^Conv2d:/, /stride/, /\[0, 0\]/],
      ['Conv2d dilation [1, 0] (was built)', () => new nn.Conv2d(1, 1, 3, { dilation: [1, 0] }), /^Conv2d:/, /dilation/, /\[1, 0\]/],
      ['Conv2d groups 2 of 3 channels', () => new nn.Conv2d(3, 4, 3, { groups: 2 }), /^Conv2d:/, /groups 2/, /in_channels 3/],
      ['MaxPool2d padding 2 of kernel 2 (was built)', () => new nn.MaxPool2d(2, { padding: 2 }), /^MaxPool2d:/, /padding \[2, 2\]/, /half of kernel/],
      ['BatchNorm1d eps 0 (was built)', () => new nn.BatchNorm1d(4, { eps: 0 }), /^BatchNorm1d:/, /eps/, /\b0\b/],
      ['LayerNorm eps -1 (was built)', () => new nn.LayerNorm(4, { eps: -1 }), /^LayerNorm:/, /eps/, /-1/],
      ['CrossEntropyLoss labelSmoothing 2', () => new nn.CrossEntropyLoss({ labelSmoothing: 2 }), /^CrossEntropyLoss:/, /labelSmoothing/, /\b2\b/],
      ["MSELoss reduction 'avg'", () => new nn.MSELoss({ reduction: 'avg' }), /^MSELoss:/, /"avg"/],
      ["train('x')", () => new nn.ReLU().train('x'), /^train:/, /"x"/],
      ['get on a layer', () => new nn.ReLU().get(0), /^Module\.get:/, /ReLU/],
      ["kaimingUniform_ mode 'fan'", () => nn.init.kaimingUniform_(skiff.zeros([2, 2]), { mode: 'fan' }), /^kaimingUniform_:/, /"fan"/],
      ["calculateGain('selu')", () => nn.init.calculateGain('selu'), /^calculateGain:/, /"selu"/],
      ['normal_ std -1', () => nn.init.normal_(skiff.zeros([2]), { std: -1 }), /^normal_:/, /-1/],
      ['loadSafetensors of 3 bytes', () => skiff.loadSafetensors(new Uint8Array([1, 2, 3])), /^(loadSafetensors|safetensors):/, /header/],
      ['saveSafetensors of a number', () => skiff.saveSafetensors({ a: 5 }), /^saveSafetensors:/, /a/],
      // ---- optim
      ['Adam betas [0.9]', () => new optim.Adam([param()], { betas: [0.9] }), /^Adam:/, /betas/],
      ['Adam of a non-leaf (was accepted)', () => new optim.Adam([param().mul(2)]), /^Adam:/, /non-leaf/],
      ['SGD of a tensor without grad (was accepted)', () => new optim.SGD([tensor([1, 2])], { lr: 0.1 }), /^SGD:/, /does not require grad/],
      ['grad = an int32 tensor (was stored)', () => (param().grad = tensor(new Int32Array([1, 2]))), /^grad:/, /int32|i32/, /f32|float32/],
      ['grad of another shape', () => (param().grad = tensor([1, 2, 3])), /^grad:/, /\[3\]/, /\[2\]/],
      // A cpu gradient for a WebGPU tensor (the WebGPU pass only).
      ...(skiff.getDefaultDevice() === 'webgpu'
        ? [['grad = a cpu tensor on a WebGPU tensor (was stored)', () => (param().grad = tensor([1, 2], { device: 'cpu' })), /^grad:/, /on cpu/]]
        : []),
      ['SGD option learningRate', () => new optim.SGD([param()], { learningRate: 1 }), /^SGD:/, /"learningRate"/],
      ["setOption('momentun')", () => sgd.setOption('momentun', 0.9), /^setOption:/, /"momentun"/],
      ["lr = 'x'", () => (sgd.lr = 'x'), /^lr:/, /"x"/],
      ['StepLR stepSize 0 (no value, snake_case)', () => new optim.StepLR(sgd, { stepSize: 0 }), /^StepLR:/, /stepSize/, /\b0\b/],
      ['StepLR without stepSize', () => new optim.StepLR(sgd, {}), /^StepLR:/, /stepSize is required/],
      ['ExponentialLR gamma -1', () => new optim.ExponentialLR(sgd, { gamma: -1 }), /^ExponentialLR:/, /gamma/, /-1/],
      ['CosineAnnealingLR warmupSteps 3 of 2 (was CosineAnnealing, warmup_steps)', () => new optim.CosineAnnealingLR(sgd, { totalSteps: 2, warmupSteps: 3 }), /^CosineAnnealingLR:/, /warmupSteps \(3\)/, /totalSteps \(2\)/],
      ['CosineAnnealingLR without totalSteps', () => new optim.CosineAnnealingLR(sgd, {}), /^CosineAnnealingLR:/, /totalSteps is required/],
      ['OneCycleLR pctStart 2 (was pct_start)', () => new optim.OneCycleLR(sgd, { maxLr: 1, totalSteps: 10, pctStart: 2 }), /^OneCycleLR:/, /pctStart/, /\b2\b/],
      ['clipGradNorm maxNorm -1 (was clip_grad_norm_, max_norm)', () => skiff.clipGradNorm([param()], -1), /^clipGradNorm:/, /maxNorm/, /-1/],
      ['clipGradNorm normType 0', () => skiff.clipGradNorm([param()], 1, { normType: 0 }), /^clipGradNorm:/, /normType/, /\b0\b/],
      ['clipGradValue -1 (was clip_grad_value_)', () => skiff.clipGradValue([param()], -1), /^clipGradValue:/, /clipValue/, /-1/],
      // ---- testing
      ["caseData('nope', 0)", () => testing.caseData('nope', 0), /^caseData:/, /"nope"/],
      ["caseData('neg', 99)", () => testing.caseData('neg', 99), /^caseData:/, /99/],
      ["caseData sample 'transposed'", () => testing.caseData('neg', 0, { sample: 'transposed' }), /^caseData:/, /"transposed"/],
      ["checkCase gpu 'yes'", () => testing.checkCase('neg', 0, { gpu: 'yes' }), /^checkCase:/, /gpu/, /"yes"/],
    ];
    for (const [label, fn, ...patterns] of cases) await c.throws(label, fn, ...patterns);
    // Last, as it switched recording off before the fix.
    await c.throws("setGradEnabled('no') (switched recording off)", () => skiff.setGradEnabled('no'), /^setGradEnabled:/, /"no"/);
    c.equal('grad mode is still on after the bad setGradEnabled', skiff.isGradEnabled(), true);
    skiff.setGradEnabled(true);
    return c.report();
  },
};
