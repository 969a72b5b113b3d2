// Runs a model exported natively (docs/jit.md). `cargo run --example
// export_model -- DIR` trains a small CNN, saves it with save_inference_model
// as DIR/model.safetensors (the program and the weights in one file) and
// writes DIR/expected.json: an input and the logits the native run gave.
//   node examples/js/inference-model.mjs DIR
import fs from 'node:fs';
import path from 'node:path';
import * as skiff from 'skiff-ml';

const dir = process.argv[2];
const native = JSON.parse(fs.readFileSync(path.join(dir, 'expected.json'), 'utf8'));
await skiff.init();

const bytes = new Uint8Array(fs.readFileSync(path.join(dir, 'model.safetensors'))); // a page: await (await fetch(url)).arrayBuffer()
const model = skiff.loadInferenceModel(bytes, { device: 'cpu' }); // or 'webgpu'
console.log(model.inputs, model.program.split('\n')[0]);
const x = skiff.tensor(new Float32Array(native.input), { shape: native.shape }); // the dtype and shape it was saved with
const logits = model.run(x);

const got = await logits.data();
const worst = Math.max(...got.map((v, i) => Math.abs(v - native.logits[i])));
console.log(`predictions: ${(await logits.argmax(1).array()).join(', ')}`);
console.log(`largest difference from the native logits: ${worst.toExponential(2)}`);
