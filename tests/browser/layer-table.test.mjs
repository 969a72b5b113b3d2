// The layer table (src/web/nn/layers.rs) is the one source of the nn layer
// constructors: the wasm factories (Module.linear, ...), the data npm run
// build writes into the glue (LAYER_TABLE, from which web/modules.js makes
// nn.Linear, ...), the TypeScript LayerConstructors in pkg/skiff.d.ts and the
// `nn` type of web/index.d.ts. Each check below fails when one of them is
// written by hand beside the table and disagrees with it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { PKG_DIR, assertBuilt } from './lib/browser.mjs';
import { importForNode } from './lib/package.mjs';
import { declaredNames } from './lib/dts-coverage.mjs';

let skiff;
let raw;
let rows;
let cleanup = () => {};
before(async () => {
  assertBuilt({ wrapper: true });
  ({ skiff, cleanup } = await importForNode('skiff-layer-table-'));
  await skiff.init({ device: 'cpu' });
  raw = skiff._raw;
  rows = raw.layerTable();
});
after(() => cleanup());

/** A valid argument for a required parameter of this TypeScript type. */
function sampleArg(type) {
  if (type.startsWith('number')) return 2;
  if (type === 'Module[]') return [];
  if (type.startsWith('Record<string, Module>')) return {};
  throw new Error(`layer-table test: no sample argument for a parameter of type ${type}`);
}

/**
 * Rows whose options bag is optional in type but must say one thing: Upsample
 * takes exactly one of size and scaleFactor (its error without either is
 * checked in pages/bad-input-modules.js).
 */
const NEEDS_OPTIONS = { Upsample: [{ scaleFactor: 2 }] };

/** `static name(params): Module;` of class Module in pkg/skiff.d.ts, as written there. */
function staticSignatures() {
  const dts = fs.readFileSync(path.join(PKG_DIR, 'skiff.d.ts'), 'utf8');
  const start = dts.indexOf('export class Module {');
  assert.ok(start >= 0, 'pkg/skiff.d.ts declares class Module');
  const body = dts.slice(start, dts.indexOf('\n}\n', start));
  return Object.fromEntries([...body.matchAll(/^\s+static (\w+)\((.*)\): Module;$/gm)].map((m) => [m[1], m[2]]));
}

test('the table lists every layer and container, with a doc and typed parameters', () => {
  assert.ok(rows.length >= 22, `layerTable() has ${rows.length} rows`);
  for (const r of rows) {
    assert.match(r.name, /^[A-Z]\w*$/, `a row's name is a class name: ${r.name}`);
    assert.ok(r.doc.length > 0, `${r.name} has a doc`);
    for (const p of r.params) assert.ok(p.name && p.type, `${r.name}: parameter ${JSON.stringify(p)}`);
  }
  assert.deepEqual(rows.filter((r) => r.rest).map((r) => r.name), ['Sequential'], 'Sequential takes its modules as separate arguments');
});

test('the glue carries the table npm run build read from this wasm', () => {
  assert.deepEqual(raw.LAYER_TABLE, rows.map(({ name, factory, rest }) => ({ name, factory, rest })));
});

test("every static factory of Module is a row (none bypasses the table), and each row's factory exists", () => {
  const statics = Object.getOwnPropertyNames(raw.Module).filter((k) => typeof raw.Module[k] === 'function' && !k.startsWith('__'));
  assert.deepEqual(statics.sort(), rows.map((r) => r.factory).sort());
});

test("each row's factory signature in pkg/skiff.d.ts is the row's parameters", () => {
  const signatures = staticSignatures();
  for (const r of rows) {
    const want = r.params.map((p) => `${p.name}${p.optional ? '?' : ''}: ${p.type}`).join(', ');
    assert.equal(signatures[r.factory], want, `Module.${r.factory}`);
  }
});

test("nn's layer constructors are the rows, and each builds the Module its row names", () => {
  const layerNames = rows.map((r) => r.name);
  for (const [name, ctor] of Object.entries(skiff.nn)) {
    if (typeof ctor !== 'function' || layerNames.includes(name)) continue;
    // Anything else nn constructs is a loss.
    assert.equal(Object.getPrototypeOf(new ctor()), raw.Loss.prototype, `nn.${name} is neither a row of the layer table nor a loss`);
  }
  for (const r of rows) {
    assert.equal(typeof skiff.nn[r.name], 'function', `nn.${r.name}`);
    const args = NEEDS_OPTIONS[r.name] ?? r.params.filter((p) => !p.optional).map((p) => sampleArg(p.type));
    const m = new skiff.nn[r.name](...args);
    assert.equal(m.typeName, r.name, `new nn.${r.name}(${args.map((a) => JSON.stringify(a))}): Layer::type_name agrees with the table`);
    assert.ok(m.toString().startsWith(`${r.name}(`), `${r.name}'s toString: ${m.toString()}`);
    assert.equal(Object.getPrototypeOf(raw.Module[r.factory](...args)), raw.Module.prototype, `Module.${r.factory} builds a Module`);
  }
});

test("the types: pkg/skiff.d.ts's LayerConstructors and web/index.d.ts's nn are the rows", () => {
  const dts = fs.readFileSync(path.join(PKG_DIR, 'skiff.d.ts'), 'utf8');
  const start = dts.indexOf('export interface LayerConstructors {');
  assert.ok(start >= 0, 'pkg/skiff.d.ts declares LayerConstructors');
  const body = dts.slice(start, dts.indexOf('\n}\n', start));
  const members = [...body.matchAll(/^\s+(\w+): Factory<Parameters<typeof Module\.(\w+)>( \| Module\[\])?, Module>;$/gm)];
  assert.deepEqual(
    members.map((m) => [m[1], m[2], Boolean(m[3])]),
    rows.map((r) => [r.name, r.factory, r.rest]),
    'one LayerConstructors member per row, typed with its factory',
  );
  const declared = declaredNames();
  const typedByModule = Object.entries(declared.coveredBy).filter(([name]) => name.startsWith('Module.')).flatMap(([, by]) => by);
  assert.deepEqual(typedByModule.sort(), rows.map((r) => `nn.${r.name}`).sort(), "web/index.d.ts's nn: the Module factories it types are the rows");
});
