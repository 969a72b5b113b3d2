// Writes the layer table (src/web/nn/layer_table.rs: one row per nn layer
// constructor) into the wasm-bindgen glue as data, so web/modules.js can make
// nn.Linear, nn.Conv2d, ... when it loads, before init() has instantiated the
// wasm. The rows come from the wasm itself: its `layerTable()` export,
// evaluated here once, in Node, right after wasm-bindgen.
//
//   pkg/skiff.js    + export const LAYER_TABLE = Object.freeze([{ name, factory, rest }, ...]);
//   pkg/skiff.d.ts  + export const LAYER_TABLE: readonly LayerTableRow[];
//
// The TypeScript side (interface LayerConstructors, one member per row, with
// the row's doc) is already in pkg/skiff.d.ts: the Rust macro writes it.
// Idempotent: a glue that has the table is left alone.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const MARK = 'export const LAYER_TABLE';

/** The rows `layerTable()` of the wasm in `out` returns. */
export async function readLayerTable(out) {
  const glue = await import(pathToFileURL(path.join(out, 'skiff.js')).href);
  glue.initSync({ module: fs.readFileSync(path.join(out, 'skiff_bg.wasm')) });
  return glue.layerTable();
}

export async function writeLayerTable(out) {
  const js = path.join(out, 'skiff.js');
  const dts = path.join(out, 'skiff.d.ts');
  if (fs.readFileSync(js, 'utf8').includes(MARK)) return;
  const rows = (await readLayerTable(out)).map(({ name, factory, rest }) => ({ name, factory, rest }));
  if (rows.length === 0) throw new Error('layer-table: layerTable() returned no rows');
  fs.appendFileSync(
    js,
    '\n/** The nn layer constructors: name (the JS class), the Module factory it calls, and whether it takes its\n' +
      ' * modules as separate arguments. Written by npm run build from layerTable() (src/web/nn/layers.rs). */\n' +
      `${MARK} = Object.freeze(${JSON.stringify(rows)});\n`,
  );
  fs.appendFileSync(
    dts,
    '\n/** One row of the layer table (web/modules.js makes `nn[name]` from it). */\n' +
      'export interface LayerTableRow { readonly name: keyof LayerConstructors; readonly factory: string; readonly rest: boolean }\n' +
      '/** The nn layer constructors (written by npm run build from layerTable()). */\n' +
      `${MARK}: readonly LayerTableRow[];\n`,
  );
}
