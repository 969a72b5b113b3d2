// Finding a leak (docs/leaks.md): origin tracking lists the live tensors by
// the line that made them, so a forgotten dispose() points at its line.
//   node examples/js/leak.mjs
import * as skiff from 'skiff-ml';

await skiff.init();
const model = new skiff.nn.Linear(8, 4);
const x = skiff.randn([2, 8]);
const losses = [];

skiff.trackOrigins(true);
for (let i = 0; i < 100; i++) losses.push(model.forward(x).sum()); // every forward's tensors stay alive
const { origins } = skiff.memory({ detailed: true });
console.table(origins);          // [{ op, site, stack, device, tensors, bytes }], most bytes first
skiff.trackOrigins(false);
