// Mixed precision in JS (docs/amp.md): an MLP learns XOR under autocast, with
// a GradScaler keeping small float16 gradients from flushing to zero. In Node
// it runs on the cpu (float16 storage, float32 kernels).
//   node examples/js/amp.mjs
import * as skiff from 'skiff-ml';

await skiff.init();
const { dtype, reason } = skiff.backendInfo().autocast;
console.log(`autocast computes in ${dtype}${reason ? ` (${reason})` : ''}`);

skiff.manualSeed(0);
const x = skiff.tensor([[0, 0], [0, 1], [1, 0], [1, 1]]);
const y = skiff.tensor([0, 1, 1, 0], { dtype: 'int32' });
const model = new skiff.nn.Sequential(new skiff.nn.Linear(2, 16), new skiff.nn.ReLU(), new skiff.nn.Linear(16, 2));
const opt = new skiff.optim.Adam(model.parameters(), { lr: 0.05 });

const scaler = new skiff.GradScaler(); // { initScale, growthFactor, backoffFactor, growthInterval, enabled }
let skipped = 0;
for (let step = 0; step < 200; step++) {
  opt.zeroGrad();
  const loss = skiff.autocast(() => model.forward(x).crossEntropy(y));
  scaler.scale(loss).backward();
  const stepped = await scaler.step(opt); // false: skipped (a gradient was inf or NaN)
  scaler.update();
  if (!stepped) skipped++;
  if (step % 50 === 0) console.log(`step ${step}: loss ${(await loss.item()).toFixed(4)} (${loss.dtype})`);
}
const predictions = skiff.noGrad(() => model.forward(x).argmax(1));
console.log(`predictions: ${(await predictions.array()).join(', ')}`);
console.log(`skipped steps: ${skipped}, scale now ${scaler.getScale()}`);
