// npm run bench:browser: the browser benchmarks in headless Chromium, on WebGPU
// (SwiftShader) and on the cpu fallback (WebGPU hidden). Needs `npm run build:test`
// first (the test build, which has the benchMatmul export; a release build: the
// numbers mean nothing for a dev build). Prints tables; not part of npm test
// (timings are never asserted).
//
// Groups (all by default; name some to run only those):
//   ops  per-op overhead, matmul throughput, the MLP Adam step (eager)
//   jit  the MLP and CNN Adam steps (batch 64) eager against compiled by
//        skiff.jit (benches/browser/jit.js): ms per step, ratio, kernels per
//        step; and a 2-16-2 MLP, whose step is mostly per-kernel host cost
//   determinism  the MLP and CNN Adam steps (batch 64, eager) in the default mode
//        against deterministic mode (skiff.setDeterministic), on the cpu
//        fallback's two builds
//   layers  the layers of issue 48 (benches/browser/layers.js): an LSTM (256,
//        64 steps, batch 32) and a ConvTranspose2d forward + backward, a sort
//        of 2^20 floats; native and PyTorch figures: benches/layers.sh
//   npm run bench:browser -- jit
import { PASSES, assertBuilt, loadSuite, openSession } from '../../tests/browser/lib/browser.mjs';

const GROUPS = ['ops', 'jit', 'determinism', 'layers'];
const asked = process.argv.slice(2);
for (const g of asked) if (!GROUPS.includes(g)) throw new Error(`unknown group ${g}: expected some of ${GROUPS.join(', ')}`);
const groups = asked.length ? asked : GROUPS;

// Rounds per backend and model for the jit group: SwiftShader runs the CNN's
// convolutions in software, a few hundred ms per step, so it gets fewer.
const JIT_PLAN = {
  cpu: { mlp: { runs: 15, inner: 20, warmup: 5 }, cnn: { runs: 11, inner: 5, warmup: 3 }, tiny: { runs: 15, inner: 100, warmup: 10 } },
  webgpu: { mlp: { runs: 11, inner: 5, warmup: 3 }, cnn: { runs: 5, inner: 2, warmup: 3 }, tiny: { runs: 11, inner: 20, warmup: 5 } },
};

assertBuilt({ wrapper: true });
const rows = [];
const jitRows = [];
const determinismRows = [];
const layerRows = [];
// The cpu fallback twice: the relaxed-SIMD build Chromium loads by default, and the
// SIMD128 baseline other engines load (init({ relaxedSimd: false })).
for (const [pass, relaxedSimd] of [[PASSES.cpu, undefined], [PASSES.cpu, false], [PASSES.webgpu, undefined]]) {
  const s = await openSession(pass);
  try {
    await loadSuite(s, '/benches/browser/bench.js');
    const info = await s.call('setup', pass.gpu ? 'webgpu' : 'cpu', relaxedSimd);
    const name = pass.gpu ? `webgpu (${info.adapter?.name ?? '?'})` : `cpu fallback (wasm, ${info.wasmSimd})`;
    if (groups.includes('ops')) {
      const perOp = await s.call('perOp', pass.gpu ? 300 : 2000);
      const gemm = await s.call('matmul', pass.gpu ? 256 : 512, pass.gpu ? 2 : 8);
      const b64 = await s.call('mlpStep', 64, pass.gpu ? 3 : 7, pass.gpu ? 3 : 10);
      const b256 = await s.call('mlpStep', 256, pass.gpu ? 3 : 5, pass.gpu ? 2 : 5);
      rows.push({ backend: name, perOpUs: perOp.noGrad, perOpGradUs: perOp.withGrad, gflops: gemm, mlp64: b64, mlp256: b256, n: pass.gpu ? 256 : 512 });
      console.log(JSON.stringify(rows.at(-1)));
    }
    if (groups.includes('jit')) {
      for (const kind of ['mlp', 'cnn', 'tiny']) {
        const plan = JIT_PLAN[pass.gpu ? 'webgpu' : 'cpu'][kind];
        const r = await s.call('jitStep', kind, { batch: 64, ...plan });
        if (r.capturedWhileTimed) throw new Error(`jit ${kind} on ${name}: ${r.capturedWhileTimed} capture(s) during the timed rounds`);
        jitRows.push({ backend: name, ...r, plan });
        console.log(JSON.stringify(jitRows.at(-1)));
      }
    }
    if (groups.includes('determinism') && !pass.gpu) {
      for (const kind of ['mlp', 'cnn']) {
        const r = await s.call('determinismStep', kind, { batch: 64, ...JIT_PLAN.cpu[kind] });
        determinismRows.push({ backend: name, ...r });
        console.log(JSON.stringify(determinismRows.at(-1)));
      }
    }
    if (groups.includes('layers')) {
      // SwiftShader runs the GPU work in software on the VM's cores: fewer calls.
      for (const kind of ['lstm', 'convt', 'sort']) {
        const r = await s.call('layerStep', kind, pass.gpu ? { runs: 3, warmup: 1 } : { runs: 5, warmup: 2 });
        layerRows.push({ backend: name, ...r });
        console.log(JSON.stringify(layerRows.at(-1)));
      }
    }
  } finally {
    await s.close();
  }
}
const f = (v, d = 2) => v.toFixed(d);
if (rows.length) {
  console.log('\n| backend | per op (us) | per op with autograd (us) | matmul GFLOP/s | MLP Adam step b64 (ms) | b256 (ms) |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const r of rows) {
    console.log(`| ${r.backend} | ${f(r.perOpUs)} | ${f(r.perOpGradUs)} | ${f(r.gflops, 1)} (${r.n}^3) | ${f(r.mlp64)} | ${f(r.mlp256)} |`);
  }
}
if (jitRows.length) {
  const range = (a) => `${f(Math.min(...a))}-${f(Math.max(...a))}`;
  console.log('\n| backend | model (Adam, b64) | eager ms/step (range) | compiled ms/step (range) | eager / compiled: medians, per round | kernels per step | rounds x steps |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const r of jitRows) {
    console.log(
      `| ${r.backend} | ${r.kind === 'tiny' ? 'MLP 2-16-2' : r.kind.toUpperCase()} | ${f(r.eagerMs)} (${range(r.runs.eager)}) | ${f(r.compiledMs)} (${range(r.runs.compiled)}) | ${f(r.ratio)}, ${f(r.pairedRatio)} | ${r.kernels} | ${r.plan.runs} x ${r.plan.inner} |`,
    );
  }
}
if (determinismRows.length) {
  console.log('\n| backend | model (Adam, b64, eager) | default ms/step | deterministic ms/step | deterministic / default, per round (median) |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const r of determinismRows) {
    console.log(`| ${r.backend} | ${r.kind.toUpperCase()} | ${f(r.fastMs)} | ${f(r.deterministicMs)} | ${f(r.pairedRatio)} |`);
  }
}
if (layerRows.length) {
  const label = { lstm: 'LSTM 256, 64 steps, b32, fwd+bwd', convt: 'ConvTranspose2d 128->64 k4 s2 p1, [64,128,16,16], fwd+bwd', sort: 'sort of 2^20 floats (values, indices)' };
  console.log('\n| backend | layer | ms per call (median) | calls |');
  console.log('| --- | --- | --- | --- |');
  for (const r of layerRows) console.log(`| ${r.backend} | ${label[r.kind]} | ${f(r.ms, 1)} | ${r.runs.map((v) => f(v, 0)).join(', ')} |`);
}
