// Where a training step's time goes (docs/profiling.md): one Adam step of an
// MLP under skiff.profile, its table printed and its Chrome trace written to
// step.json (open it in chrome://tracing or https://ui.perfetto.dev).
//   node examples/js/profile.mjs [DIR]
import fs from 'node:fs';
import path from 'node:path';
import * as skiff from 'skiff-ml';

await skiff.init();
const model = new skiff.nn.Sequential(new skiff.nn.Linear(784, 256), new skiff.nn.ReLU(), new skiff.nn.Linear(256, 10));
const opt = new skiff.optim.Adam(model.parameters(), { lr: 1e-3 });
const x = skiff.randn([64, 784]);
const y = skiff.randint(0, 10, [64]);
function step(x, y) {
  opt.zeroGrad();
  const loss = model.forward(x).crossEntropy(y);
  loss.backward();
  opt.step();
  return loss;
}
await step(x, y).item(); // a warm step: the optimizer's state exists

const p = await skiff.profile(async () => { const loss = step(x, y); return loss.item(); });
console.log(p.table, p.result);              // p.ops: [{ op, calls, hostMs, gpuMs, gpuKernels }]
fs.writeFileSync(path.join(process.argv[2] ?? '.', 'step.json'), p.chromeTrace); // a browser: download(new Blob([p.chromeTrace]))
