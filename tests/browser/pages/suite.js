// The browser suites' page half: each export is called from Node through
// session.call(name, ...args) (tests/browser/lib/browser.mjs) and returns
// plain data (numbers, arrays, strings) that the Node half asserts on.
// Written against the public wrapper API, imported as a user would.
//
// Tests get the module through a tracer (trace.js) that records the names
// they use, for the check that every name of web/index.d.ts is tested; the
// harness's own calls are made outside it (`untraced`).
import * as skiff from '/web/index.js';
import { prng, scenarios } from './scenarios.js';
import { surfaceScenarios } from './surface-scenarios.js';
import { makeTracer } from './trace.js';
import { checkSurface } from './surface.js';

export { skiff };
const tracer = makeTracer(skiff);
const api = tracer.api;

/** init() as the pass needs it; returns what init reported plus navigator.gpu presence. */
export async function setup(passName) {
  const info = await api.init({ device: passName === 'webgpu' ? 'webgpu' : 'auto' });
  tracer.refresh();
  return { info: JSON.parse(JSON.stringify(info)), hasGpu: 'gpu' in navigator };
}

const clash = Object.keys(surfaceScenarios).filter((k) => k in scenarios);
if (clash.length) throw new Error(`scenarios defined twice: ${clash.join(', ')}`);
const allScenarios = { ...scenarios, ...surfaceScenarios };

/** Runs one shared scenario (scenarios.js, surface-scenarios.js; the Node tests run the same ones). */
export async function scenario(name, ...args) {
  if (!allScenarios[name]) throw new Error(`no scenario ${name}`);
  return allScenarios[name](api, ...args);
}

/** The declared names the tests have used so far in this page (trace.js). */
export function touched() {
  return tracer.touched();
}

/** Every registry case through its camelCase JS call on `device`, against the Rust output (surface.js). */
export async function surfaceOps(device) {
  return checkSurface(skiff, tracer, skiff.testing.registryCases(), { device });
}

// ---- registry ---------------------------------------------------------------

export function registryCases() {
  return api.testing.registryCases().map((c) => ({ ...c }));
}

/** testing.opNames(): every registry op, in registry order. */
export function opNames() {
  return api.testing.opNames();
}

/**
 * Runs checkCase for each case sample of `op`; returns one entry per failing
 * sample: "label (#k): message" (an empty array when all pass), plus one
 * naming the checks the op owes (`expected`, from registryCases) that no
 * sample ran, so an op cannot drop to forward-only silently.
 */
export async function checkOp(op, cases, gpu, expected) {
  const failures = [];
  const ran = new Set();
  for (const { caseIndex, label } of cases) {
    try {
      const r = await api.testing.checkCase(op, caseIndex, { gpu });
      for (const c of r.checks) ran.add(c);
    } catch (e) {
      const kind = e instanceof Error ? '' : ` (rejected with a non-Error ${typeof e})`;
      failures.push(`${label} (#${caseIndex}): ${e && e.message ? e.message : String(e)}${kind}`);
    }
  }
  const missing = failures.length ? [] : expected.filter((c) => !ran.has(c));
  if (missing.length) failures.push(`no sample ran: ${missing.join(', ')} (ran: ${[...ran].join(', ')})`);
  if (skiff.memory().scopes !== 0) failures.push(`memory().scopes is ${skiff.memory().scopes} after the checks`);
  return failures;
}

/**
 * For every registry op: the JS name registryCoverage() gives it, and
 * whether that name resolves to a function (a Tensor method, a top-level
 * export, or a dotted path such as 'nn.functional.x' from the module).
 */
export function coverage() {
  const cov = api.testing.registryCoverage();
  const proto = skiff.Tensor.prototype;
  const out = {};
  for (const [op, jsName] of Object.entries(cov)) {
    let fn;
    if (typeof jsName === 'string') {
      if (jsName.includes('.')) {
        fn = jsName.split('.').reduce((o, k) => (o == null ? undefined : o[k]), skiff);
        if (fn === undefined && jsName.startsWith('Tensor.')) {
          fn = jsName.slice(7).split('.').reduce((o, k) => (o == null ? undefined : o[k]), proto);
        }
      } else {
        fn = typeof proto[jsName] === 'function' ? proto[jsName] : skiff[jsName];
      }
    }
    out[op] = { jsName, resolves: typeof fn === 'function' };
  }
  return out;
}

// ---- kernels ------------------------------------------------------------------

/** Whether the bindings export every WGSL source (testing.kernelSources()). */
export function hasKernelSources() {
  return typeof api.testing.kernelSources === 'function';
}

/**
 * Products on the WebGPU device that the blocked matmul runs with loads of B
 * shared across a subgroup where the device has subgroups (SwiftShader's 4
 * lanes; skiff asks for them itself, as wgpu cannot): x @ w.T (a Linear
 * layer's product, 64 rows) and, with 128 rows or more (SwiftShader's tall
 * block), 256^3 (A read four steps of K per load), a product
 * whose edges and K (261 = 65 x 4 + 1) are off every block and whose rows
 * are off the vec4 grid (A one element per load), and one with A transposed
 * (A four rows per load). Returns, per product, the largest difference from
 * the same product on the cpu and the largest magnitude there; whether the
 * adapter offers subgroups; and the blocked matmul kernels the device
 * compiled (a sharing one's name ends in b and the subgroup size).
 */
export async function sharedMatmul() {
  const adapter = await navigator.gpu.requestAdapter();
  const rnd = prng(11);
  const data = (shape) => Float32Array.from({ length: shape[0] * shape[1] }, () => rnd() - 0.5);
  // name: [A's shape, B's shape, A transposed, B transposed] (shapes as stored).
  const products = {
    linear: [[64, 784], [256, 784], false, true],
    square: [[256, 256], [256, 256], false, false],
    edges: [[200, 261], [261, 100], false, false],
    transposedA: [[160, 300], [160, 128], true, false],
  };
  const out = { subgroups: adapter.features.has('subgroups'), products: {} };
  for (const [name, [sa, sb, ta, tb]] of Object.entries(products)) {
    const [da, db] = [data(sa), data(sb)];
    const product = async (device) => {
      const a = api.tensor(da, { shape: sa, device });
      const b = api.tensor(db, { shape: sb, device });
      return Array.from(await (ta ? a.permute([1, 0]) : a).matmul(tb ? b.permute([1, 0]) : b).data());
    };
    const [gpu, cpu] = [await product('webgpu'), await product('cpu')];
    out.products[name] = {
      diff: Math.max(...gpu.map((v, i) => Math.abs(v - cpu[i]))),
      scale: Math.max(...cpu.map(Math.abs)),
    };
  }
  out.kernels = api.testing.compiledKernels().filter((k) => k.startsWith('matmul:f32:blocked:'));
  return out;
}

/**
 * Compiles every WGSL source the GPU backend can build with the browser's
 * own compiler (Tint in Chromium, stricter than naga in places) on a device
 * of its own, and builds it into a pipeline (SwiftShader's compiler, which
 * has failed where Tint passed) unless that build is known to add nothing
 * (below); returns "name: first error" for each that fails.
 */
export async function compileKernels() {
  const sources = api.testing.kernelSources();
  // Built already by the runtime's own device during this pass: its
  // pipeline compiled, so a second build here would check nothing new.
  const builtByRuntime = new Set(api.testing.compiledKernels());
  const widest = widestBlockedLanes(sources.map(([name]) => name));
  const adapter = await navigator.gpu.requestAdapter();
  // f16 kernels (they start with `enable f16;`) compile only where the device has shader-f16;
  // the blocked matmul's shared loads (subgroupBroadcast) only where it has subgroups, and
  // skiff then declares them as the runtime does (`enable subgroups;` first: GpuContext's
  // subgroups_by_directive).
  const f16 = adapter.features.has('shader-f16');
  const subgroups = adapter.features.has('subgroups');
  const requiredFeatures = [...(f16 ? ['shader-f16'] : []), ...(subgroups ? ['subgroups'] : [])];
  const device = await adapter.requestDevice({ requiredFeatures });
  const failures = [];
  let skipped = 0;
  let reused = 0;
  for (const entry of sources) {
    const [name, source] = Array.isArray(entry) ? entry : [entry.name, entry.source];
    const shares = source.includes('subgroupBroadcast');
    if ((!f16 && source.startsWith('enable f16;')) || (!subgroups && shares)) {
      skipped++;
      continue;
    }
    if (builtByRuntime.has(name)) {
      reused++;
      continue;
    }
    const code = shares ? `enable subgroups;\n${source}` : source;
    device.pushErrorScope('validation');
    const module = device.createShaderModule({ code, label: name });
    const info = await module.getCompilationInfo();
    const errs = info.messages
      .filter((m) => m.type === 'error')
      .map((m) => `${m.lineNum}:${m.linePos} ${m.message} | ${code.split('\n')[m.lineNum - 1]?.trim()}`);
    let pipelineError = null;
    if (!errs.length && builds(name, widest)) {
      try {
        await device.createComputePipelineAsync({ layout: 'auto', compute: { module } });
      } catch (e) {
        pipelineError = e.message;
      }
    }
    const scoped = await device.popErrorScope();
    if (errs.length || pipelineError || scoped) {
      failures.push(`${name}: ${errs[0] ?? pipelineError ?? scoped.message}`);
    }
  }
  device.destroy();
  return { count: sources.length - skipped, skipped, reused, failures };
}

// The blocked matmul's kernels are named matmul:DTYPE:blocked:ROWSxCOLSxLANES
// uUNROLL, then the loads of A and of B (one letter each), then, for the
// kernels that share B's loads across a subgroup, b and the subgroup size.
const BLOCKED = /^(matmul:.*:blocked:\d+x\d+)x(\d+)(u\d)([a-z])([a-z])(b\d+)?$/;

/**
 * For each blocked matmul kernel without shared loads, the largest number of
 * lanes among its siblings: kernels that differ only in their lanes differ
 * only in their workgroup size and tile constants, so compileKernels builds
 * the widest of them into a pipeline (about 0.5 s each on SwiftShader, 64 s
 * for all 138) and Tint validates the rest.
 */
function widestBlockedLanes(names) {
  const widest = new Map();
  for (const name of names) {
    const [, shape, lanes, unroll, a, b, shared] = name.match(BLOCKED) ?? [];
    if (!shape || shared) continue;
    const family = `${shape}${unroll}${a}${b}`;
    widest.set(family, Math.max(widest.get(family) ?? 0, Number(lanes)));
  }
  return widest;
}

/**
 * Whether compileKernels builds this kernel into a pipeline after Tint has
 * validated it. All are built but these blocked matmul kernels:
 * - those whose window loads test for the padding (B's letter w or t): they
 *   run only on native lavapipe, SwiftShader's compiler runs out of memory on
 *   them, and skiff never builds them there (GpuContext::pad_first);
 * - of the window loads without that test (i, j), all but the blocks with K
 *   unrolled 4x (SwiftShader's setting; the blocked kernel runs only on
 *   software adapters) that are 16x32 or 4 columns wide;
 * - of the rest that share no loads, all but the widest lanes of a family
 *   (widestBlockedLanes). The sharing kernels are all built.
 */
function builds(name, widest) {
  const [, shape, lanes, unroll, a, b, shared] = name.match(BLOCKED) ?? [];
  if (!shape || shared) return true;
  if (b === 'w' || b === 't') return false;
  if ((b === 'i' || b === 'j') && !(unroll === 'u4' && (shape.endsWith(':16x32') || shape.endsWith('x4')))) return false;
  return Number(lanes) === widest.get(`${shape}${unroll}${a}${b}`);
}
