// Bad-input corpus, part 3: nn layers (constructors, forward, hooks,
// containers, state dicts), losses, init, optimizers and schedulers,
// clipping, safetensors and the testing helpers. Fixtures: see bad-input.js.

import { T, G } from './bad-input-kit.js';

export const MODULES = [
  // ---- layer constructors
  T('nn.Linear(2, -1)', (s) => new s.nn.Linear(2, -1), 'Linear', /outFeatures/, /-1/),
  T("nn.Linear('2', 3)", (s) => new s.nn.Linear('2', 3), 'Linear', /inFeatures/, /"2"/),
  T('nn.Linear(2 ** 20, 2 ** 20)', (s) => new s.nn.Linear(2 ** 20, 2 ** 20), 'Linear', /too large/),
  T('nn.Linear bais (was ignored)', (s) => new s.nn.Linear(2, 3, { bais: false }), 'Linear', /"bais"/),
  T("nn.Linear bias 'no'", (s) => new s.nn.Linear(2, 3, { bias: 'no' }), 'Linear', /bias/, /"no"/),
  T('nn.Conv2d padding -1', (s) => new s.nn.Conv2d(1, 1, 3, { padding: -1 }), 'Conv2d', /padding/, /-1/),
  T('nn.Conv2d kernelSize [3]', (s) => new s.nn.Conv2d(1, 1, [3]), 'Conv2d', /kernelSize/),
  T('nn.Conv2d groups 2 of 3 channels', (s) => new s.nn.Conv2d(3, 4, 1, { groups: 2 }), 'Conv2d', /groups/),
  // Needs skiff's own check of the stride (a Rust-side change, src/nn).
  T('nn.Conv2d stride 0 (was built)', (s) => new s.nn.Conv2d(1, 1, 3, { stride: 0 }), 'Conv2d', /stride/),
  T('nn.MaxPool2d(0)', (s) => new s.nn.MaxPool2d(0), 'MaxPool2d', /kernel/),
  T('nn.AvgPool2d stride 0', (s) => new s.nn.AvgPool2d(2, { stride: 0 }), 'AvgPool2d', /stride/),
  T('nn.AdaptiveAvgPool2d(0)', (s) => new s.nn.AdaptiveAvgPool2d(0), 'AdaptiveAvgPool2d', /output size|outputSize/),
  T('nn.BatchNorm1d momentum 2', (s) => new s.nn.BatchNorm1d(4, { momentum: 2 }), 'BatchNorm1d', /momentum/, /\b2\b/),
  T('nn.BatchNorm2d(0)', (s) => new s.nn.BatchNorm2d(0), 'BatchNorm2d', /numFeatures/, /\b0\b/),
  T('nn.BatchNorm2d eps -1', (s) => new s.nn.BatchNorm2d(2, { eps: -1 }), 'BatchNorm2d', /eps/, /-1/),
  T('nn.LayerNorm([])', (s) => new s.nn.LayerNorm([]), 'LayerNorm', /normalizedShape|empty|shape/),
  T("nn.LayerNorm elementwiseAffine 'x'", (s) => new s.nn.LayerNorm(2, { elementwiseAffine: 'x' }), 'LayerNorm', /elementwiseAffine/, /"x"/),
  T('nn.Dropout(1.5)', (s) => new s.nn.Dropout(1.5), 'Dropout', /1\.5/),
  T("nn.Dropout('0.5')", (s) => new s.nn.Dropout('0.5'), 'Dropout', /"0.5"/),
  T('nn.Embedding(0, 2)', (s) => new s.nn.Embedding(0, 2), 'Embedding', /\[0, 2\]/),
  T('nn.Embedding(3, 2 ** 31)', (s) => new s.nn.Embedding(3, 2 ** 31), 'Embedding', /too large/),
  T("nn.Flatten({ startDim: 'a' })", (s) => new s.nn.Flatten({ startDim: 'a' }), 'Flatten', /startDim/, /"a"/),
  T('nn.Flatten(1) (options as a number)', (s) => new s.nn.Flatten(1), 'Flatten', /options must be an object/),
  T('nn.LeakyReLU negativeSlope NaN', (s) => new s.nn.LeakyReLU({ negativeSlope: NaN }), 'LeakyReLU', /negativeSlope/, /NaN/),
  T('nn.ELU alpha NaN', (s) => new s.nn.ELU({ alpha: NaN }), 'ELU', /alpha/, /NaN/),
  T('nn.PReLU numParameters 0', (s) => new s.nn.PReLU({ numParameters: 0 }), 'PReLU', /num_parameters/, /0/),
  T('nn.PReLU numParameters fractional', (s) => new s.nn.PReLU({ numParameters: 1.5 }), 'PReLU', /numParameters/, /1\.5/),
  T('nn.Unflatten two -1', (s) => new s.nn.Unflatten(1, [-1, -1]), 'Unflatten', /-1/),
  T('nn.PixelShuffle negative factor', (s) => new s.nn.PixelShuffle(-2), 'PixelShuffle', /upscaleFactor/, /-2/),
  T('nn.ZeroPad2d three numbers', (s) => new s.nn.ZeroPad2d([1, 2, 3]), 'ZeroPad2d', /left, right, top, bottom/, /3 numbers/),
  T('nn.GroupNorm(4, 6)', (s) => new s.nn.GroupNorm(4, 6), 'GroupNorm', /num_groups 4/, /6/),
  T('nn.InstanceNorm2d(0)', (s) => new s.nn.InstanceNorm2d(0), 'InstanceNorm2d', /num_features/),
  T('nn.InstanceNorm1d trackRunningStats (not supported)', (s) => new s.nn.InstanceNorm1d(2, { trackRunningStats: true }), 'InstanceNorm1d', /"trackRunningStats"/),
  T('nn.RMSNorm eps -1', (s) => new s.nn.RMSNorm(4, { eps: -1 }), 'RMSNorm', /eps/, /-1/),
  T('nn.Conv1d groups 3 of 4 channels', (s) => new s.nn.Conv1d(4, 6, 3, { groups: 3 }), 'Conv1d', /groups 3/),
  T('nn.ConvTranspose2d outputPadding 2 at stride 2', (s) => new s.nn.ConvTranspose2d(1, 1, 3, { stride: 2, outputPadding: 2 }), 'ConvTranspose2d', /output_padding/, /stride/),
  T('nn.Upsample with neither size nor scaleFactor', (s) => new s.nn.Upsample(), 'Upsample', /exactly one/),
  T('nn.Upsample size and scaleFactor', (s) => new s.nn.Upsample({ size: 4, scaleFactor: 2 }), 'Upsample', /exactly one/),
  T("nn.Upsample alignCorners with 'nearest'", (s) => new s.nn.Upsample({ scaleFactor: 2, alignCorners: true }), 'Upsample', /align_corners/, /nearest/),
  T("nn.Upsample mode 'cubic'", (s) => new s.nn.Upsample({ scaleFactor: 2, mode: 'cubic' }), 'Upsample', /mode/, /cubic/),
  T("nn.GELU approximate 'x'", (s) => new s.nn.GELU({ approximate: 'x' }), 'GELU', /"x"/),
  T("nn.Softmax('x')", (s) => new s.nn.Softmax('x'), 'Softmax', /dim/, /"x"/),
  T('nn.MultiheadAttention(4, 3)', (s) => new s.nn.MultiheadAttention(4, 3), 'MultiheadAttention', /embedDim 4/, /numHeads 3/),
  T('nn.MultiheadAttention dropout 1', (s) => new s.nn.MultiheadAttention(4, 2, { dropout: 1 }), 'MultiheadAttention', /dropout/),
  T('nn.Sequential([5])', (s) => new s.nn.Sequential([5]), 'Sequential', /modules\[0\]/, /the number 5/),
  T('nn.Sequential(a forged module)', (s, f) => new s.nn.Sequential([{ _skiffModuleId: f.lin._skiffModuleId }]), 'Sequential', /modules\[0\] must be a Module/),
  T('nn.Sequential(a freed module)', (s) => {
    const m = new s.nn.ReLU();
    m.free();
    return new s.nn.Sequential([m]);
  }, 'Sequential', /freed/),
  T('nn.ModuleList(5)', (s) => new s.nn.ModuleList(5), 'ModuleList', /array of Modules/),
  T("nn.ModuleDict({ 'a.b': relu })", (s, f) => new s.nn.ModuleDict({ 'a.b': f.relu }), 'ModuleDict', /a\.b|\./),
  T('nn.ModuleDict([[1, relu]])', (s, f) => new s.nn.ModuleDict([[1, f.relu]]), 'ModuleDict', /pair/),

  // ---- modules in use
  // ---- the sequence layers' own methods (recurrent states, transformer masks)
  T("nn.RNN nonlinearity 'sigmoid'", (s) => new s.nn.RNN(3, 4, { nonlinearity: 'sigmoid' }), 'RNN', /nonlinearity/, /sigmoid/),
  T('nn.LSTM dropout 2', (s) => new s.nn.LSTM(3, 4, { dropout: 2 }), 'LSTM', /dropout/, /\b2\b/),
  T('nn.GRU numLayers 0', (s) => new s.nn.GRU(3, 4, { numLayers: 0 }), 'GRU', /num_layers/),
  T('nn.LSTM(2 ** 14, 2 ** 14)', (s) => new s.nn.LSTM(2 ** 14, 2 ** 14), 'LSTM', /too large/),
  T('nn.LSTMCell nonlinearity (an RNNCell option)', (s) => new s.nn.LSTMCell(3, 4, { nonlinearity: 'relu' }), 'LSTMCell', /"nonlinearity"/),
  T('LSTM.forwardWithState of 2 features into 3', (s) => new s.nn.LSTM(3, 4).forwardWithState(s.ones([5, 2, 2])), 'forwardWithState', /\[5, 2, 2\]/),
  T('LSTM.forwardWithState with an h0 of the wrong batch', (s) => new s.nn.LSTM(3, 4).forwardWithState(s.ones([5, 2, 3]), [s.ones([1, 3, 4]), s.ones([1, 2, 4])]), 'forwardWithState', /h0/, /\[1, 3, 4\]/),
  T('GRU.forwardWithState with [h0, c0]', (s) => new s.nn.GRU(3, 4).forwardWithState(s.ones([5, 2, 3]), [s.ones([1, 2, 4]), s.ones([1, 2, 4])]), 'forwardWithState', /cell state/),
  T('LSTM.forwardWithState with a state of three', (s) => new s.nn.LSTM(3, 4).forwardWithState(s.ones([5, 2, 3]), [s.ones([1]), s.ones([1]), s.ones([1])]), 'forwardWithState', /h or \[h, c\]/),
  T('Linear.forwardWithState', (s) => new s.nn.Linear(2, 2).forwardWithState(s.ones([1, 2])), 'forwardWithState', /recurrent/, /Linear/),
  T('LSTM.encode', (s) => new s.nn.LSTM(3, 4).encode(s.ones([5, 2, 3])), 'encode', /TransformerEncoderLayer/, /LSTM/),
  T('nn.TransformerEncoderLayer(6, 4)', (s) => new s.nn.TransformerEncoderLayer(6, 4), 'TransformerEncoderLayer', /d_model 6/, /nhead 4/),
  T("nn.TransformerEncoderLayer activation 'tanh'", (s) => new s.nn.TransformerEncoderLayer(4, 2, { activation: 'tanh' }), 'TransformerEncoderLayer', /activation/, /tanh/),
  T('TransformerEncoderLayer.encode with a float padding mask', (s) => new s.nn.TransformerEncoderLayer(4, 2, { dimFeedforward: 8 }).encode(s.ones([3, 2, 4]), { srcKeyPaddingMask: s.ones([2, 3]) }), 'encode', /key_padding_mask/, /bool/),
  T('TransformerDecoderLayer.forward (needs the memory)', (s) => new s.nn.TransformerDecoderLayer(4, 2, { dimFeedforward: 8 }).forward(s.ones([3, 2, 4])), 'TransformerDecoderLayer.forward', /memory/, /decode/),
  T('TransformerDecoderLayer.decode with a bad option', (s) => new s.nn.TransformerDecoderLayer(4, 2, { dimFeedforward: 8 }).decode(s.ones([3, 2, 4]), s.ones([3, 2, 4]), { causal: true }), 'decode', /"causal"/),
  T('Linear(3, 2) on a [1, 2] input', (s) => new s.nn.Linear(3, 2).forward(s.ones([1, 2])), 'Linear.forward', /\[1, 2\]/),
  T('Linear.forward(5)', (s, f) => f.lin.forward(5), 'Linear.forward', /x must be a Tensor/),
  T('Linear.forward(a forged handle)', (s, f) => f.lin.forward(f.forged), 'Linear.forward', /must be a Tensor/),
  T('Sequential.forward of a bad shape', (s, f) => f.seq.forward(f.v), 'Sequential.forward', /\[3\]/),
  T('Conv2d.forward of a 2-D input', (s) => new s.nn.Conv2d(1, 1, 1).forward(s.ones([2, 2])), 'Conv2d.forward', /4-D|\[2, 2\]/),
  T('BatchNorm1d.forward of 3 features into 4', (s) => new s.nn.BatchNorm1d(4).forward(s.ones([2, 3])), 'BatchNorm1d.forward', /3|4/),
  T('Embedding.forward of float indices', (s) => new s.nn.Embedding(3, 2).forward(s.ones([2])), 'Embedding.forward', /int32|i32|indices/),
  T('forward of a freed module (was "null pointer passed to rust")', (s, f) => {
    const m = f.lin;
    m.free();
    return m.forward(f.x);
  }, 'Module.forward', /freed/),
  T('step of a freed optimizer', (s, f) => {
    const o = f.sgd;
    o.free();
    return o.step();
  }, 'Optimizer.step', /freed/),
  T('step of a freed scheduler', (s, f) => {
    const sched = f.sched;
    sched.free();
    return sched.step();
  }, 'LrScheduler.step', /freed/),
  T('saveForBackward on a freed FunctionCtx', (s, f) => {
    const ctx = f.ctx;
    ctx.free();
    return ctx.saveForBackward(f.v);
  }, 'FunctionCtx.saveForBackward', /freed/),
  T('Module.get(0) of a layer', (s, f) => f.relu.get(0), 'Module.get', /ReLU/),
  T('Module.get(5) of a one-module Sequential', (s, f) => f.seq.get(5), 'Module.get', /5/),
  T("Module.get('0') of a Sequential", (s, f) => f.seq.get('0'), 'Module.get', /"0"/),
  T("train('x')", (s, f) => f.relu.train('x'), 'train', /"x"/),
  T("Module.to('tpu')", (s, f) => f.lin.to('tpu'), 'Module.to', /"tpu"/),
  T("Module.toDtype('int32')", (s, f) => f.lin.toDtype('int32'), 'Module.toDtype', /float dtype, got int32/),
  T("Module.toDtype('f8')", (s, f) => f.lin.toDtype('f8'), 'Module.toDtype', /"f8"/),
  T('registerForwardHook(5)', (s, f) => f.lin.registerForwardHook(5), 'registerForwardHook', /function/),
  T('registerForwardPreHook(null)', (s, f) => f.lin.registerForwardPreHook(null), 'registerForwardPreHook', /function/),
  T('a forward hook that throws', (s, f) => {
    f.lin.registerForwardHook(() => {
      throw new Error('fh boom');
    });
    return f.lin.forward(s.ones([1, 2]));
  }, 'Linear.forward', /fh boom/),
  T('a forward pre-hook returning 5', (s, f) => {
    f.lin.registerForwardPreHook(() => 5);
    return f.lin.forward(s.ones([1, 2]));
  }, 'Linear.forward', /the number 5/),
  T('loadStateDict(5)', (s, f) => f.lin.loadStateDict(5), 'loadStateDict', /the number 5/),
  T('loadStateDict of 3 bytes', (s, f) => f.lin.loadStateDict(new Uint8Array([1, 2, 3])), 'loadStateDict', /header|bytes|short/),
  T('loadStateDict with a weight of the wrong shape', (s, f) => f.lin.loadStateDict({ weight: s.ones([3, 3]), bias: s.ones([2]) }), 'loadStateDict', /weight/),
  T('loadStateDict missing keys (strict)', (s, f) => f.lin.loadStateDict({}), 'loadStateDict', /weight|missing/),
  T("loadStateDict strict 'no'", (s, f) => f.lin.loadStateDict({}, { strict: 'no' }), 'loadStateDict', /strict/, /"no"/),
  T('attention on a Linear', (s, f) => f.lin.attention(f.x, f.x, f.x), 'attention', /MultiheadAttention/),
  T('attention of mismatched widths', (s, f) => f.mha.attention(s.ones([1, 2, 3]), s.ones([1, 2, 3]), s.ones([1, 2, 3])), 'attention', /3|4/),
  T("attention keyPaddingMask 'm'", (s, f) => f.mha.attention(s.ones([1, 2, 4]), s.ones([1, 2, 4]), s.ones([1, 2, 4]), { keyPaddingMask: 'm' }), 'attention', /keyPaddingMask/),

  // ---- losses
  T("nn.MSELoss reduction 'avg'", (s) => new s.nn.MSELoss({ reduction: 'avg' }), 'MSELoss', /"avg"/),
  T('nn.CrossEntropyLoss labelSmoothing 2', (s) => new s.nn.CrossEntropyLoss({ labelSmoothing: 2 }), 'CrossEntropyLoss', /labelSmoothing/, /\b2\b/),
  T('nn.NLLLoss(5)', (s) => new s.nn.NLLLoss(5), 'NLLLoss', /options must be an object/),
  T('MSELoss.forward of shapes [2, 2] and [3]', (s, f) => new s.nn.MSELoss().forward(f.x, f.v), 'MSELoss.forward', /\[3\]/),
  T('CrossEntropyLoss.forward with labels out of range', (s, f) => new s.nn.CrossEntropyLoss().forward(f.x, s.tensor([0, 9], { dtype: 'int32' })), 'CrossEntropyLoss.forward', /9/),
  T('L1Loss.forward(5, x)', (s, f) => new s.nn.L1Loss().forward(5, f.x), 'L1Loss.forward', /input/),
  T('BCEWithLogitsLoss.forward(x, forged)', (s, f) => new s.nn.BCEWithLogitsLoss().forward(f.x, f.forged), 'BCEWithLogitsLoss.forward', /target/),

  // ---- init
  T("init.kaimingUniform_ mode 'fan'", (s) => s.nn.init.kaimingUniform_(s.zeros([2, 2]), { mode: 'fan' }), 'kaimingUniform_', /"fan"/),
  T("init.kaimingNormal_ nonlinearity 'selu'", (s) => s.nn.init.kaimingNormal_(s.zeros([2, 2]), { nonlinearity: 'selu' }), 'kaimingNormal_', /"selu"/),
  T('init.xavierUniform_ of a 1-D tensor', (s) => s.nn.init.xavierUniform_(s.zeros([3])), 'xavierUniform_', /\[3\]/),
  T("init.xavierNormal_ gain 'x'", (s) => s.nn.init.xavierNormal_(s.zeros([2, 2]), { gain: 'x' }), 'xavierNormal_', /gain/, /"x"/),
  T('init.uniform_ of a forged tensor', (s, f) => s.nn.init.uniform_(f.forged), 'uniform_', /must be a Tensor/),
  T('init.normal_ std -1', (s) => s.nn.init.normal_(s.zeros([2]), { std: -1 }), 'normal_', /-1/),
  T('init.constant_(t, NaN)', (s) => s.nn.init.constant_(s.zeros([2]), NaN), 'constant_', /NaN/),
  T('init.zeros_(5)', (s) => s.nn.init.zeros_(5), 'zeros_', /the number 5/),
  T('init.ones_(a disposed tensor)', (s, f) => s.nn.init.ones_(f.gone), 'ones_', /disposed/),
  T("init.calculateGain('selu')", (s) => s.nn.init.calculateGain('selu'), 'calculateGain', /"selu"/),
  T('init.calculateGain(5)', (s) => s.nn.init.calculateGain(5), 'calculateGain', /the number 5/),
  G("init.calculateGain('relu') is sqrt(2)", (s) => s.nn.init.calculateGain('relu'), Math.SQRT2),

  // ---- optimizers and schedulers
  T('optim.SGD without parameters', (s) => new s.optim.SGD(undefined, { lr: 0.1 }), 'SGD', /params/),
  T('optim.SGD([])', (s) => new s.optim.SGD([]), 'SGD', /empty/),
  T('optim.SGD([5])', (s) => new s.optim.SGD([5]), 'SGD', /params\[0\]/, /the number 5/),
  T('optim.SGD([forged])', (s, f) => new s.optim.SGD([f.forged]), 'SGD', /must be a Tensor/),
  T('optim.SGD learningRate (was ignored)', (s, f) => new s.optim.SGD([f.p], { learningRate: 1 }), 'SGD', /"learningRate"/),
  T("optim.SGD nesterov 'yes'", (s, f) => new s.optim.SGD([f.p], { nesterov: 'yes' }), 'SGD', /nesterov/, /"yes"/),
  T('optim.Adam lr -1', (s, f) => new s.optim.Adam([f.p], { lr: -1 }), 'Adam', /lr|-1/),
  T('optim.Adam betas [0.9]', (s, f) => new s.optim.Adam([f.p], { betas: [0.9] }), 'Adam', /betas/),
  T("optim.Adam betas [0.9, 'x']", (s, f) => new s.optim.Adam([f.p], { betas: [0.9, 'x'] }), 'Adam', /betas\[1\]/, /"x"/),
  // Needs skiff's own check that parameters are leaves (a Rust-side change, src/optim).
  T('optim.Adam of a non-leaf (was accepted)', (s, f) => new s.optim.Adam([f.p.mul(2)]), 'Adam', /leaf/),
  T('optim.AdamW group with an unknown option', (s, f) => new s.optim.AdamW([{ params: [f.p], lR: 1 }]), 'AdamW', /"lR"/),
  T('optim.RMSprop alpha NaN', (s, f) => new s.optim.RMSprop([f.p], { alpha: NaN }), 'RMSprop', /alpha/, /NaN/),
  T('optim.Adagrad eps Infinity', (s, f) => new s.optim.Adagrad([f.p], { eps: Infinity }), 'Adagrad', /eps/, /Infinity/),
  T("setOption('momentun') (a misspelt option)", (s, f) => f.sgd.setOption('momentun', 0.9), 'setOption', /"momentun"/),
  T('setOption(5, 1) (was a trap)', (s, f) => f.sgd.setOption(5, 1), 'setOption', /name/, /the number 5/),
  T("setOption('lr', 'x')", (s, f) => f.sgd.setOption('lr', 'x'), 'setOption', /lr/, /"x"/),
  T("setOption('lr', 0.1, { group: 3 })", (s, f) => f.sgd.setOption('lr', 0.1, { group: 3 }), 'setOption', /group/, /3/),
  T("setOption('nesterov', 1)", (s, f) => f.sgd.setOption('nesterov', 1), 'setOption', /nesterov/, /the number 1/),
  T("lr = 'x'", (s, f) => {
    f.sgd.lr = 'x';
  }, 'lr', /"x"/),
  T('Optimizer.loadStateDict({}) (was OptimState::from_flat)', (s, f) => f.sgd.loadStateDict({}), 'Optimizer.loadStateDict', /groups|param_groups|state/),
  T('Optimizer.loadStateDict(5)', (s, f) => f.sgd.loadStateDict(5), 'Optimizer.loadStateDict', /the number 5/),
  T('Optimizer.loadStateDict of an Adam state into SGD', async (s, f) => {
    f.p.sum().backward();
    f.adam.step();
    return f.sgd.loadStateDict(await f.adam.stateDict());
  }, 'Optimizer.loadStateDict', /./),
  T('StepLR stepSize 0', (s, f) => new s.optim.StepLR(f.sgd, { stepSize: 0 }), 'StepLR', /stepSize/, /\b0\b/),
  T('StepLR without stepSize', (s, f) => new s.optim.StepLR(f.sgd, {}), 'StepLR', /stepSize is required/),
  T('StepLR of a forged optimizer', (s, f) => new s.optim.StepLR({ _skiffOptimizerId: f.sgd._skiffOptimizerId }, { stepSize: 1 }), 'StepLR', /optimizer must be an Optimizer/),
  T('StepLR of a freed optimizer', (s, f) => {
    const o = f.sgd;
    o.free();
    return new s.optim.StepLR(o, { stepSize: 1 });
  }, 'StepLR', /freed/),
  T('ExponentialLR gamma -1', (s, f) => new s.optim.ExponentialLR(f.sgd, { gamma: -1 }), 'ExponentialLR', /gamma/, /-1/),
  T('CosineAnnealingLR warmupSteps 3 of 2', (s, f) => new s.optim.CosineAnnealingLR(f.sgd, { totalSteps: 2, warmupSteps: 3 }), 'CosineAnnealingLR', /warmupSteps \(3\)/),
  T('OneCycleLR pctStart 2', (s, f) => new s.optim.OneCycleLR(f.sgd, { maxLr: 1, totalSteps: 10, pctStart: 2 }), 'OneCycleLR', /pctStart/),
  T("lrAt('1')", (s, f) => f.sched.lrAt('1'), 'lrAt', /"1"/),
  T('clipGradNorm maxNorm -1', (s, f) => s.clipGradNorm([f.p], -1), 'clipGradNorm', /maxNorm/, /-1/),
  T('clipGradNorm normType 0', (s, f) => s.clipGradNorm([f.p], 1, { normType: 0 }), 'clipGradNorm', /normType/),
  T('clipGradNorm(5, 1)', (s) => s.clipGradNorm(5, 1), 'clipGradNorm', /params/),
  T("clipGradValue(params, '1')", (s, f) => s.clipGradValue([f.p], '1'), 'clipGradValue', /clipValue/, /"1"/),
  T('nn.utils.clipGradValue_ -1', (s, f) => s.nn.utils.clipGradValue_([f.p], -1), 'clipGradValue', /-1/),

  // ---- safetensors
  T('loadSafetensors of 3 bytes', (s) => s.loadSafetensors(new Uint8Array([1, 2, 3])), 'loadSafetensors', /header|short|bytes/),
  T("loadSafetensors('abc')", (s) => s.loadSafetensors('abc'), 'loadSafetensors', /"abc"/),
  T('loadSafetensors of a header length past the end', (s) => s.loadSafetensors(new Uint8Array([255, 255, 255, 255, 255, 255, 255, 127, 123, 125])), 'loadSafetensors', /header|length|bytes/),
  T("loadSafetensors device 'tpu'", (s) => s.loadSafetensors(new Uint8Array(8), { device: 'tpu' }), 'loadSafetensors', /"tpu"/),
  T('saveSafetensors({ a: 5 })', (s) => s.saveSafetensors({ a: 5 }), 'saveSafetensors', /a/, /the number 5/),
  T('saveSafetensors(5)', (s) => s.saveSafetensors(5), 'saveSafetensors', /the number 5/),
  T('saveSafetensors of an object whose getter throws (was an exception through wasm)', (s) => s.saveSafetensors({
    get a() {
      throw new Error('getter boom');
    },
  }), 'saveSafetensors', /"a"/, /getter boom/),
  T('saveSafetensors of a disposed tensor', (s, f) => s.saveSafetensors({ a: f.gone }), 'saveSafetensors', /disposed/),

  // ---- testing helpers
  T("testing.caseData('nope', 0)", (s) => s.testing.caseData('nope', 0), 'caseData', /"nope"/),
  T("testing.caseData('neg', 99)", (s) => s.testing.caseData('neg', 99), 'caseData', /99/),
  T("testing.caseData('neg', -1)", (s) => s.testing.caseData('neg', -1), 'caseData', /-1/),
  T('testing.caseData(5, 0)', (s) => s.testing.caseData(5, 0), 'caseData', /the number 5/),
  T("testing.checkCase gpu 'yes'", (s) => s.testing.checkCase('neg', 0, { gpu: 'yes' }), 'checkCase', /gpu/, /"yes"/),
  T("testing.checkCase('neg', 1.5)", (s) => s.testing.checkCase('neg', 1.5), 'checkCase', /1\.5/),
];
