// A compiled training step (docs/jit.md): skiff.jit records the step's
// kernels on its first calls and replays them on the later ones.
//   node examples/js/jit.mjs
import * as skiff from 'skiff-ml';

await skiff.init();
skiff.manualSeed(0);
// 8 batches of 64 random 784-pixel inputs with labels: their shape is what the program assumes.
const batches = Array.from({ length: 8 }, () => [skiff.randn([64, 784]), skiff.randint(0, 10, [64])]);

const model = new skiff.nn.Sequential(new skiff.nn.Linear(784, 128), new skiff.nn.ReLU(), new skiff.nn.Linear(128, 10));
const opt = new skiff.optim.Adam(model.parameters(), { lr: 1e-3 });
const step = skiff.jit((x, y) => {
  opt.zeroGrad();
  const loss = model.forward(x).crossEntropy(y);
  loss.backward();
  opt.step();
  return loss;
});
for (const [x, y] of batches) {
  const loss = skiff.tidy(() => step(x, y)); // call 1 records, later calls replay
  console.log(`loss ${(await loss.item()).toFixed(4)}`);
  loss.dispose();
}
console.log(step.log.join('\n')); // why each call captured: the first call, then the optimizer's new state
console.log(`captures ${step.captures}, replays ${step.replays}`); // 2 and 6
console.log(`${step.kernels} kernels per step:\n${step.program}`);
