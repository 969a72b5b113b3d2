// Makes the wasm-bindgen declaration of Tensor generic over its dtype:
//   export class Tensor {   ->   export class Tensor<D extends DType = DType> {
// The methods already name D in their types (src/web: `unchecked_return_type
// = "Tensor<D>"`, `Promise<DataOf<D>>`, ...); wasm-bindgen cannot declare a
// class's type parameters, so this is the one edit made after it.
//
//   node scripts/lib/patch-dts.mjs pkg/skiff.d.ts
//
// Idempotent; fails loudly when the declaration is not found, so a change in
// wasm-bindgen's output cannot leave a d.ts that mentions an undeclared D.
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const PLAIN = 'export class Tensor {';
const GENERIC = 'export class Tensor<D extends DType = DType> {';

export function patchDts(text) {
  if (text.includes(GENERIC)) return text;
  const count = text.split(PLAIN).length - 1;
  if (count !== 1) throw new Error(`patch-dts: expected one "${PLAIN}" in the d.ts, found ${count}`);
  return text.replace(PLAIN, GENERIC);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: node scripts/lib/patch-dts.mjs pkg/skiff.d.ts');
  writeFileSync(file, patchDts(readFileSync(file, 'utf8')));
}
