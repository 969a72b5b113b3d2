// Deterministic mode (docs/determinism.md): the same seeded steps give the
// same bits natively (src/determinism.rs's doc example), in Node and in a
// browser tab. Prints each step's loss as its f32 bits.
//   node examples/js/determinism.mjs
import * as skiff from 'skiff-ml';

await skiff.init();
skiff.setDeterministic(true); // Node: SKIFF_DETERMINISTIC=1 turns it on at init()
console.log(`deterministic: ${skiff.isDeterministic()}`); // true
skiff.manualSeed(21);
const net = new skiff.nn.Sequential(new skiff.nn.Linear(784, 128), new skiff.nn.ReLU(), new skiff.nn.Linear(128, 10));
const opt = new skiff.optim.Adam(net.parameters());
const x = skiff.rand([32, 784]);
const y = skiff.randint(0, 10, [32]);
for (let i = 0; i < 3; i++) {
  opt.zeroGrad();
  const loss = net.forward(x).crossEntropy(y);
  loss.backward();
  opt.step();
  const bits = new Uint32Array(new Float32Array([await loss.item()]).buffer)[0];
  console.log(bits.toString(16).padStart(8, '0'));
}
skiff.setDeterministic(false);
