// npm run bench:browser: the browser benchmarks in headless Chromium, on WebGPU
// (SwiftShader) and on the cpu fallback (WebGPU hidden). Needs `npm run build:test`
// first (the test build, which has the benchMatmul export; a release build: the
// numbers mean nothing for a dev build). Prints a
// table; not part of npm test (timings are never asserted).
import { PASSES, assertBuilt, loadSuite, openSession } from '../../tests/browser/lib/browser.mjs';

assertBuilt({ wrapper: true });
const rows = [];
for (const pass of [PASSES.cpu, PASSES.webgpu]) {
  const s = await openSession(pass);
  try {
    await loadSuite(s, '/benches/browser/bench.js');
    const info = await s.call('setup', pass.gpu ? 'webgpu' : 'cpu');
    const name = pass.gpu ? `webgpu (${info.adapter?.name ?? '?'})` : 'cpu fallback (wasm)';
    const perOp = await s.call('perOp', pass.gpu ? 300 : 2000);
    const gemm = await s.call('matmul', pass.gpu ? 256 : 512, pass.gpu ? 2 : 8);
    const b64 = await s.call('mlpStep', 64, pass.gpu ? 3 : 7, pass.gpu ? 3 : 10);
    const b256 = await s.call('mlpStep', 256, pass.gpu ? 3 : 5, pass.gpu ? 2 : 5);
    rows.push({ backend: name, perOpUs: perOp.noGrad, perOpGradUs: perOp.withGrad, gflops: gemm, mlp64: b64, mlp256: b256, n: pass.gpu ? 256 : 512 });
    console.log(JSON.stringify(rows.at(-1)));
  } finally {
    await s.close();
  }
}
const f = (v, d = 2) => v.toFixed(d);
console.log('\n| backend | per op (us) | per op with autograd (us) | matmul GFLOP/s | MLP Adam step b64 (ms) | b256 (ms) |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(`| ${r.backend} | ${f(r.perOpUs)} | ${f(r.perOpGradUs)} | ${f(r.gflops, 1)} (${r.n}^3) | ${f(r.mlp64)} | ${f(r.mlp256)} |`);
}
