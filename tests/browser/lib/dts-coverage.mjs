// The names the package's types promise (web/index.d.ts, and for the classes
// it re-exports, their members in the generated pkg/skiff.d.ts), so that a
// test can check each exists in the module and each was touched by a test
// (pages/trace.js records what the suites call).
//
// A small parser for the shapes these two files use, not for TypeScript in
// general: `export function f`, `export const ns: { ... }` (object types,
// `A & { ... }`, `{ ... } | undefined`, and interfaces of either file), `export { A, B as C }`,
// `declare class`, the `declare module` augmentation of Tensor, and
// wasm-bindgen's `export class X { ... }` bodies.
import fs from 'node:fs';
import path from 'node:path';
import { REPO, PKG_DIR } from './browser.mjs';

const stripComments = (s) => s.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');

/** The text of the balanced `{ ... }` starting at `open` (the index of '{'), without the braces. */
function block(s, open) {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === '{') depth++;
    else if (s[i] === '}' && --depth === 0) return s.slice(open + 1, i);
  }
  throw new Error(`dts-coverage: unbalanced braces from offset ${open}`);
}

/** Splits `s` at `sep` where no bracket of any kind is open. */
function splitTop(s, sep) {
  const out = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if ('{([<'.includes(ch)) depth++;
    else if ('})]>'.includes(ch) && s[i - 1] !== '=') depth--;
    else if (ch === sep && depth === 0) {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out.map((p) => p.trim()).filter(Boolean);
}

/** Members of an object type `text` under `prefix`; nested object types and interfaces recurse. */
function typeMembers(prefix, text, interfaces, out) {
  for (const part of splitTop(text.trim(), '&')) {
    if (part.startsWith('{')) {
      for (const m of splitTop(block(part, 0), ';')) {
        const [, name, rest] = m.match(/^(\w+)\??\s*([(:<][\s\S]*)$/) ?? [];
        if (!name) throw new Error(`dts-coverage: cannot read member ${JSON.stringify(m)} of ${prefix}`);
        const type = rest.startsWith(':') ? rest.slice(1).trim() : null;
        const nested = type && splitTop(type, '&').every((p) => p.startsWith('{') || p in interfaces);
        if (nested) typeMembers(`${prefix}.${name}`, type, interfaces, out);
        else out.push({ name: `${prefix}.${name}`, type: rest });
      }
    } else if (part in interfaces) {
      typeMembers(prefix, `{${interfaces[part]}}`, interfaces, out);
    } else {
      throw new Error(`dts-coverage: ${prefix}: cannot resolve type ${part}`);
    }
  }
  return out;
}

/**
 * Class bodies: name -> [{ member, static }] (constructors left out: the
 * class itself is the name). `methodsOnly`: for classes written in JS, whose
 * fields (Function's `name`) are instance data rather than accessors.
 */
function classMembers(src, re, methodsOnly = false) {
  const out = {};
  for (const m of src.matchAll(re)) {
    const body = block(src, m.index + m[0].length - 1);
    out[m[1]] = splitTop(body, ';')
      .map((line) => line.match(/^(?:(private)\s+)?(static\s+)?(?:readonly\s+)?(\[Symbol\.\w+\]|\w+)\??\s*([(:])/))
      .filter((x) => x && x[3] !== 'constructor' && !x[1] && (!methodsOnly || x[4] === '('))
      .map((x) => ({ member: x[3], static: Boolean(x[2]) }));
  }
  return out;
}

/**
 * Every runtime name the types declare, as dotted paths: module exports
 * ('tensor', 'nn.Linear', 'optim.lrScheduler.StepLR', 'testing.caseData'),
 * and members of exported classes ('Tensor.add', 'Tensor.shape',
 * 'Module.linear', 'Function.apply'). Returns { names, kinds, coveredBy }:
 * kinds[name] is 'export' | 'member' | 'static'; coveredBy[name] lists the
 * names whose use also counts for it (a static factory the d.ts ties to a
 * wrapper with `typeof Module.linear`, or a Tensor static wrapped by a
 * module function of the same name).
 */
export function declaredNames({ index, pkg } = {}) {
  index = stripComments(index ?? fs.readFileSync(path.join(REPO, 'web/index.d.ts'), 'utf8'));
  pkg = stripComments(pkg ?? fs.readFileSync(path.join(PKG_DIR, 'skiff.d.ts'), 'utf8'));
  const kinds = {};
  const coveredBy = {};
  const add = (name, kind) => (kinds[name] = kind);
  const interfaces = {};
  // Interfaces of web/index.d.ts, and of pkg/skiff.d.ts (LayerConstructors, generated from the layer table).
  for (const src of [index, pkg]) {
    for (const m of src.matchAll(/^\s*(?:export\s+)?interface\s+(\w+)[^{]*\{/gm)) interfaces[m[1]] ??= block(src, m.index + m[0].length - 1);
  }

  for (const m of index.matchAll(/^export function (\w+)/gm)) add(m[1], 'export');
  for (const m of index.matchAll(/^export const (\w+)\s*:/gm)) {
    const end = splitTop(index.slice(m.index + m[0].length), ';')[0];
    for (const { name, type } of typeMembers(m[1], end, interfaces, [])) {
      add(name, 'export');
      for (const t of type.matchAll(/typeof (\w+)\.(\w+)/g)) (coveredBy[`${t[1]}.${t[2]}`] ??= []).push(name);
    }
  }
  // Re-exported classes and functions: `export { A, B as C };` (not `export type`).
  const classes = {
    ...classMembers(pkg, /^export class (\w+)[^{]*\{/gm),
    ...classMembers(index, /^declare class (\w+)[^{]*\{/gm, true),
  };
  for (const m of index.matchAll(/^export \{([^}]*)\}/gm)) {
    for (const item of m[1].split(',').map((x) => x.trim()).filter(Boolean)) {
      const [local, exported = local] = item.split(/\s+as\s+/);
      add(exported, 'export');
      for (const { member, static: isStatic } of classes[local] ?? []) add(`${exported}.${member}`, isStatic ? 'static' : 'member');
    }
  }
  // The augmentation `declare module '../pkg/skiff.js' { interface Tensor { array(): ... } }`.
  for (const m of index.matchAll(/^declare module [^{]*\{/gm)) {
    const body = block(index, m.index + m[0].length - 1);
    for (const i of body.matchAll(/interface (\w+)[^{]*\{/g)) {
      const members = classMembers(`class ${i[1]} {${block(body, i.index + i[0].length - 1)}}`, /^class (\w+)[^{]*\{/gm)[i[1]];
      for (const { member } of members) add(`${i[1]}.${member}`, 'member');
    }
  }
  // Tensor's creation statics are what the module's functions of the same name call.
  for (const [name, kind] of Object.entries(kinds)) {
    if (kind !== 'static' || !name.startsWith('Tensor.')) continue;
    const fn = name === 'Tensor.fromData' ? 'tensor' : name.slice('Tensor.'.length);
    if (kinds[fn] === 'export') (coveredBy[name] ??= []).push(fn);
  }
  return { names: Object.keys(kinds).sort(), kinds, coveredBy };
}

/** The declared names neither touched nor covered by a touched name. */
export function untouched(declared, touched) {
  const seen = new Set(touched);
  return declared.names.filter((n) => !seen.has(n) && !(declared.coveredBy[n] ?? []).some((c) => seen.has(c)));
}
