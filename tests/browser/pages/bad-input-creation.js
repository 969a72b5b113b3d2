// Bad-input corpus, part 1: creation functions and the module-level
// functions (grad mode, scopes, seeding, devices, custom Functions).
// Entries marked "was a trap" aborted the wasm instance before; "was
// coerced" ones silently converted the value.

import { T, G } from './bad-input-kit.js';

const BIG = 2 ** 32;

export const CREATION = [
  // ---- tensor()
  T('tensor(undefined)', (s) => s.tensor(undefined), 'tensor', /undefined/),
  T('tensor(null)', (s) => s.tensor(null), 'tensor', /null/),
  T("tensor('abc')", (s) => s.tensor('abc'), 'tensor', /"abc"/),
  T('tensor(1n) (BigInt)', (s) => s.tensor(1n), 'tensor', /BigInt 1n/),
  T('tensor([1n]) (BigInt element)', (s) => s.tensor([1n]), 'tensor', /data\[0\]/, /BigInt 1n/),
  T("tensor([1, 'a'])", (s) => s.tensor([1, 'a']), 'tensor', /data\[1\]/, /"a"/),
  T('tensor([1, undefined])', (s) => s.tensor([1, undefined]), 'tensor', /data\[1\]/, /undefined/),
  T('tensor([[1, 2], [3]]) (ragged)', (s) => s.tensor([[1, 2], [3]]), 'tensor', /rectangular/),
  T('tensor(new Array(2 ** 32 - 1)) (sparse, was minutes of looping)', (s) => s.tensor(new Array(BIG - 1)), 'tensor', /4294967295/),
  T('tensor of 100 nested arrays', (s) => {
    let v = [1];
    for (let k = 0; k < 100; k++) v = [v];
    return s.tensor(v);
  }, 'tensor', /dims/),
  T('tensor(a self-containing array) (was an endless loop)', (s) => {
    const a = [];
    a.push(a);
    return s.tensor(a);
  }, 'tensor', /dims/),
  T("tensor([1, 2], 'int32') (options as a string, was ignored)", (s) => s.tensor([1, 2], 'int32'), 'tensor', /options must be an object/),
  T('tensor([2 ** 31], int32) (was wrapped to -2 ** 31)', (s) => s.tensor([2 ** 31], { dtype: 'int32' }), 'tensor', /2147483648/),
  T('tensor([-(2 ** 31) - 1], int32)', (s) => s.tensor([-(2 ** 31) - 1], { dtype: 'int32' }), 'tensor', /-2147483649/),
  T('tensor([1.5], int32) (was truncated)', (s) => s.tensor([1.5], { dtype: 'int32' }), 'tensor', /1\.5/),
  T('tensor([NaN], int32)', (s) => s.tensor([NaN], { dtype: 'int32' }), 'tensor', /NaN/),
  T('tensor(Float32Array [1e10], dtype int32) (was saturated)', (s) => s.tensor(new Float32Array([1e10]), { dtype: 'int32' }), 'tensor', /10000000000/),
  T('tensor(Float64Array [0.5], dtype int32)', (s) => s.tensor(new Float64Array([0.5]), { dtype: 'int32' }), 'tensor', /0\.5/),
  T("tensor dtype 'complex64'", (s) => s.tensor([1], { dtype: 'complex64' }), 'tensor', /"complex64"/),
  T("tensor device 'tpu'", (s) => s.tensor([1], { device: 'tpu' }), 'tensor', /"tpu"/),
  T('tensor option requires_grad (was ignored)', (s) => s.tensor([1], { requires_grad: true }), 'tensor', /"requires_grad"/),
  T("tensor requiresGrad 'yes'", (s) => s.tensor([1], { requiresGrad: 'yes' }), 'tensor', /"yes"/),
  T('tensor(Float32Array(3), shape [2]) (named from_vec)', (s) => s.tensor(new Float32Array(3), { shape: [2] }), 'tensor', /3 elements/, /\[2\]/),
  T('tensor(BigInt64Array)', (s) => s.tensor(new BigInt64Array(2)), 'tensor', /BigInt64Array/),
  T('tensor(DataView)', (s) => s.tensor(new DataView(new ArrayBuffer(4))), 'tensor', /DataView|object/),
  T('tensor(a Tensor)', (s, f) => s.tensor(f.x), 'tensor', /a Tensor/),
  T('tensor(typed array, shape [-1])', (s) => s.tensor(new Float32Array(2), { shape: [-1] }), 'tensor', /shape\[0\]/, /-1/),
  G('tensor([]) is an empty float32 tensor', (s) => s.tensor([]), { shape: [0], dtype: 'float32', values: [] }),
  G('tensor([true, 2]) is float32', (s) => s.tensor([true, 2]), { dtype: 'float32', values: [1, 2] }),
  G('tensor([NaN], bool) is true (bool(nan) in Python)', (s) => s.tensor([NaN], { dtype: 'bool' }), { dtype: 'bool', values: [true] }),
  G('tensor([2 ** 31 - 1], int32) keeps the largest int32', (s) => s.tensor([2 ** 31 - 1], { dtype: 'int32' }), { values: [2147483647] }),

  // ---- zeros / ones / full
  T('zeros(undefined)', (s) => s.zeros(undefined), 'zeros', /undefined/),
  T('zeros([-1])', (s) => s.zeros([-1]), 'zeros', /shape\[0\]/, /-1/),
  T('zeros([2.5])', (s) => s.zeros([2.5]), 'zeros', /2\.5/),
  T('zeros([NaN, 2])', (s) => s.zeros([NaN, 2]), 'zeros', /NaN/),
  T("zeros(['2'])", (s) => s.zeros(['2']), 'zeros', /"2"/),
  T('zeros([2n]) (BigInt)', (s) => s.zeros([2n]), 'zeros', /BigInt 2n/),
  T('zeros(1e9) (was a trap)', (s) => s.zeros(1e9), 'zeros', /1000000000/),
  T('zeros([40000, 40000])', (s) => s.zeros([40000, 40000]), 'zeros', /40000/),
  T('zeros([2 ** 32])', (s) => s.zeros([BIG]), 'zeros', /4294967296/),
  T('zeros of 65 dims', (s) => s.zeros(new Array(65).fill(1)), 'zeros', /65 entries/),
  T('zeros(new Array(2 ** 32 - 1)) (sparse)', (s) => s.zeros(new Array(BIG - 1)), 'zeros', /4294967295 entries/),
  T('zeros option dytpe (was ignored)', (s) => s.zeros([2], { dytpe: 'int32' }), 'zeros', /"dytpe"/),
  T("ones dtype 'bfloat16'", (s) => s.ones([2], { dtype: 'bfloat16' }), 'ones', /"bfloat16"/),
  T('ones(Symbol())', (s) => s.ones(Symbol('x')), 'ones', /symbol/),
  T('full([2]) without a value (was NaN)', (s) => s.full([2]), 'full', /value/, /undefined/),
  T("full([2], 'abc') (was NaN)", (s) => s.full([2], 'abc'), 'full', /"abc"/),
  T('full([2], 1n)', (s) => s.full([2], 1n), 'full', /BigInt 1n/),
  T('full([2], 1e10, int32) (was saturated)', (s) => s.full([2], 1e10, { dtype: 'int32' }), 'full', /10000000000/, /int32/),
  T('full([2], NaN, int32)', (s) => s.full([2], NaN, { dtype: 'int32' }), 'full', /NaN/),
  T('full([2], 2.5, int32) (was truncated)', (s) => s.full([2], 2.5, { dtype: 'int32' }), 'full', /2\.5/, 'value'),
  G('full([2], true) is a bool tensor (as torch.full)', (s) => s.full([2], true), { dtype: 'bool', values: [true, true] }),
  G('full([2], NaN) is NaN', (s) => s.full([2], NaN), { values: [NaN, NaN] }),
  G('zeros([]) is a 0-d zero', (s) => s.zeros([]), { shape: [], values: 0 }),
  G('zeros([0, 3]) is empty', (s) => s.zeros([0, 3]), { shape: [0, 3], values: [] }),

  // ---- random
  T('randn([2 ** 14, 2 ** 14 + 1]) (past 2 ** 28 elements; was a trap)', (s) => s.randn([2 ** 14, 2 ** 14 + 1]), 'randn', /16385/, 'memory'),
  T('randn int32 (was nonsense)', (s) => s.randn([3], { dtype: 'int32' }), 'randn', /int32/, 'dtype'),
  T('rand bool', (s) => s.rand([3], { dtype: 'bool' }), 'rand', /bool/),
  T('rand([-1])', (s) => s.rand([-1]), 'rand', /-1/),
  T('randint(NaN, 3) (was accepted)', (s) => s.randint(NaN, 3, [2]), 'randint', /low/, /NaN/),
  T('randint(0, 1e10) (was saturated)', (s) => s.randint(0, 1e10, [2]), 'randint', /high/, /10000000000/),
  T('randint(0, 2.5) (was truncated)', (s) => s.randint(0, 2.5, [3]), 'randint', /high/, /2\.5/),
  T('randint(3, 3)', (s) => s.randint(3, 3, [2]), 'randint', /low=3/),
  T("randint(0, '5')", (s) => s.randint(0, '5', [2]), 'randint', /"5"/),
  T('randint dtype option', (s) => s.randint(0, 5, [2], { dtype: 'int32' }), 'randint', /"dtype"/),
  G('randint(-5, -4) is all -5', (s) => s.randint(-5, -4, [3]), { dtype: 'int32', values: [-5, -5, -5] }),

  // ---- arange / linspace / eye
  T('arange(0, 2 ** 32) (was a trap)', (s) => s.arange(0, BIG), 'arange', /4294967296/),
  T('arange(0, 3e8) (was a trap)', (s) => s.arange(0, 3e8), 'arange', /300000000/),
  T('arange(0, 2 ** 28 + 1) (past 2 ** 28 elements)', (s) => s.arange(0, 2 ** 28 + 1), 'arange', /268435457/, 'memory'),
  T("arange('0', '3') (was coerced)", (s) => s.arange('0', '3'), 'arange', /start/, /"0"/),
  T('arange(0, 1, 0)', (s) => s.arange(0, 1, 0), 'arange', /step/),
  T('arange(0, Infinity)', (s) => s.arange(0, Infinity), 'arange', /end/, /Infinity/),
  T('arange(0, 5, 0.5, int32)', (s) => s.arange(0, 5, 0.5, { dtype: 'int32' }), 'arange', /step/, /0\.5/),
  T('arange(-1e10, -1e10 + 3, 1, int32) (was saturated)', (s) => s.arange(-1e10, -1e10 + 3, 1, { dtype: 'int32' }), 'arange', /start/),
  T('arange bool', (s) => s.arange(0, 3, 1, { dtype: 'bool' }), 'arange', /bool/),
  G('arange(0, 0) is empty', (s) => s.arange(0, 0), { shape: [0] }),
  G('arange(5, 0, -2)', (s) => s.arange(5, 0, -2), { values: [5, 3, 1] }),
  T('linspace(0, 1, -1) (was a trap)', (s) => s.linspace(0, 1, -1), 'linspace', /steps/, /-1/),
  T('linspace(0, 1, 1.7) (was truncated)', (s) => s.linspace(0, 1, 1.7), 'linspace', /1\.7/),
  T('linspace(0, NaN, 3)', (s) => s.linspace(0, NaN, 3), 'linspace', /end/, /NaN/),
  T('linspace(0, 1, 2 ** 31)', (s) => s.linspace(0, 1, 2 ** 31), 'linspace', /2147483648/),
  G('linspace(0, 1, 1) is [0]', (s) => s.linspace(0, 1, 1), { values: [0] }),
  T('eye(20000) (was a trap)', (s) => s.eye(20000), 'eye', /20000/),
  T('eye(16385) (past 2 ** 28 elements)', (s) => s.eye(16385), 'eye', /16385/, 'memory'),
  T('eye(-1) (was a [4294967295, 4294967295] tensor after 10 s)', (s) => s.eye(-1), 'eye', /-1/),
  T('eye(1.5) (was truncated)', (s) => s.eye(1.5), 'eye', /1\.5/),
  T("eye('3') (was coerced)", (s) => s.eye('3'), 'eye', /"3"/),
  T('eye(2 ** 32)', (s) => s.eye(BIG), 'eye', /4294967296/),
  G('eye(0) is [0, 0]', (s) => s.eye(0), { shape: [0, 0] }),

  // ---- seeding, devices, grad mode, scopes
  T("manualSeed('5')", (s) => s.manualSeed('5'), 'manualSeed', /"5"/),
  T('manualSeed(-1)', (s) => s.manualSeed(-1), 'manualSeed', /-1/),
  T('manualSeed(1.5)', (s) => s.manualSeed(1.5), 'manualSeed', /1\.5/),
  T('manualSeed(5n)', (s) => s.manualSeed(5n), 'manualSeed', /BigInt 5n/),
  T("setDefaultDevice('tpu')", (s) => s.setDefaultDevice('tpu'), 'setDefaultDevice', /"tpu"/),
  T('setDefaultDevice(1)', (s) => s.setDefaultDevice(1), 'setDefaultDevice', /the number 1/),
  T("setGradEnabled('true') (switched recording off)", (s) => s.setGradEnabled('true'), 'setGradEnabled', /"true"/),
  T('setGradEnabled() (switched recording off)', (s) => s.setGradEnabled(), 'setGradEnabled', /undefined/),
  T('setGradEnabled(1)', (s) => s.setGradEnabled(1), 'setGradEnabled', /the number 1/),
  T('tidy(5)', (s) => s.tidy(5), 'tidy', /function/),
  T("tidy('name')", (s) => s.tidy('name'), 'tidy', /function/),
  T('tidy(5, fn) (a name that is no string)', (s) => s.tidy(5, () => 1), 'tidy', /name/),
  T('noGrad(5)', (s) => s.noGrad(5), 'noGrad', /function/),
  T('enableGrad()', (s) => s.enableGrad(), 'enableGrad', /function/),
  T('keep(5)', (s) => s.keep(5), 'keep', /the number 5/),
  T('keep(a disposed tensor)', (s, f) => s.keep(f.gone), 'keep', /disposed/, 'argument'),
  T('keep(a forged handle)', (s, f) => s.keep(f.forged), 'keep', /must be a Tensor/),
  T("init option devcie (was ignored)", (s) => s.init({ devcie: 'cpu' }), 'init', /"devcie"/),
  T("init device 'tpu'", (s) => s.init({ device: 'tpu' }), 'init', /"tpu"/),
  T("init('cpu')", (s) => s.init('cpu'), 'init', /options must be an object/),
  T('init(Object.create(Tensor.prototype)) (was a null-pointer Error)', (s, f) => s.init(f.fakeTensor), 'init', /options must be an object/),
  T('init(a Tensor)', (s, f) => s.init(f.v), 'init', /options must be an object/, /a Tensor/),
  G('dispose(new Array(2 ** 32 - 1)) (was minutes of looping)', (s) => s.dispose(new Array(BIG - 1)), undefined),
  G('tidy returning new Array(2 ** 32 - 1) (was minutes of looping)', (s) => s.tidy(() => new Array(BIG - 1)).length, BIG - 1),
  G('dispose(a freed tensor) does nothing (was a null-pointer Error)', (s, f) => s.dispose([f.freed]), undefined),
  G('tidy returning a freed tensor closes its scope', (s, f) => s.tidy(() => [f.freed]).length, 1),

  // ---- custom Functions
  T('new Function({ name: 5 }) (was a trap at apply)', (s) => new s.Function({ name: 5, forward: (c, x) => x, backward: (c, g) => g }), 'Function', /name/, /the number 5/),
  T('new Function(null)', (s) => new s.Function(null), 'Function', /null/),
  T('new Function({ forward }) without backward', (s) => new s.Function({ forward: (c, x) => x }), 'Function', /backward/),
  T('new Function({ forward: 5, backward })', (s) => new s.Function({ forward: 5, backward: (c, g) => g }), 'Function', /forward/),
  T('Function.apply(5)', (s) => new s.Function({ forward: (c, x) => x, backward: (c, g) => g }).apply(5), 'Function.apply', /inputs\[0\]/, /the number 5/),
  T('Function.apply with a name made numeric later', (s, f) => {
    const fn = new s.Function({ forward: (c, x) => x.mul(2), backward: (c, g) => g });
    fn.name = 7;
    return fn.apply(f.p);
  }, 'Function.apply', /name/, /the number 7/),
  T('Function forward returning a number', (s, f) => new s.Function({ forward: () => 5, backward: (c, g) => g }).apply(f.p), 'Function.apply', /the number 5/),
  T('Function forward returning a forged handle', (s, f) => new s.Function({ forward: () => f.forged, backward: (c, g) => g }).apply(f.p), 'Function.apply', /must be a Tensor/),
  T('Function forward throwing', (s, f) => new s.Function({ forward: () => { throw new Error('boom'); }, backward: (c, g) => g }).apply(f.p), 'Function.apply', /boom/),
  T('Function backward returning a string', (s, f) => new s.Function({ forward: (c, x) => x.mul(2), backward: () => 'g' }).apply(f.p).sum().backward(), 'backward', /"g"/),
  T('ctx.saveForBackward(5)', (s, f) => f.ctx.saveForBackward(5), 'saveForBackward', /the number 5/),
  T('ctx.needsInputGrad(-1)', (s, f) => f.ctx.needsInputGrad(-1), 'needsInputGrad', /-1/),
  T("ctx.needsInputGrad('0')", (s, f) => f.ctx.needsInputGrad('0'), 'needsInputGrad', /"0"/),
];
