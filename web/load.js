// Turning `init({ wasm })` (or an entry point's default location) into the
// instantiated wasm-bindgen module. Shared by the entry points (index.js,
// dev.js, node.js), which differ only in where the .wasm comes from.

/** `\0asm`: the first four bytes of every WebAssembly binary. */
const MAGIC = [0x00, 0x61, 0x73, 0x6d];

import { fail } from './checks.js';

/**
 * The smallest module with a relaxed-SIMD instruction: one function that
 * returns `f32x4.relaxed_madd` of three zero vectors. WebAssembly.validate
 * accepts it exactly where the engine has relaxed SIMD.
 */
function relaxedSimdProbe() {
  const zeros = [0xfd, 0x0c, ...new Array(16).fill(0)]; // v128.const 0
  const body = [0x00, ...zeros, ...zeros, ...zeros, 0xfd, 0x85, 0x02, 0x0b]; // no locals; relaxed_madd; end
  return new Uint8Array([
    ...MAGIC, 0x01, 0x00, 0x00, 0x00, // version 1
    0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // types: () -> v128
    0x03, 0x02, 0x01, 0x00, // one function of type 0
    0x0a, body.length + 2, 0x01, body.length, ...body, // its code
  ]);
}

/** Whether this engine runs relaxed SIMD (Chrome and Edge from 114; Node 20 only with --experimental-wasm-relaxed-simd). */
export function hasRelaxedSimd() {
  try {
    return WebAssembly.validate(relaxedSimdProbe());
  } catch {
    return false;
  }
}

/**
 * Which of the package's two .wasm builds an entry point loads: the one
 * built with relaxed SIMD (`true`) or the SIMD128 baseline. `relaxedSimd` is
 * init's option (checked there to be a boolean or undefined): undefined
 * picks what the engine runs; true insists.
 */
export function chooseRelaxedSimd(relaxedSimd) {
  if (relaxedSimd === undefined) return hasRelaxedSimd();
  if (relaxedSimd && !hasRelaxedSimd()) {
    throw loadError('relaxedSimd: true, but this engine has no relaxed SIMD (WebAssembly.validate refused f32x4.relaxed_madd)');
  }
  return relaxedSimd;
}

/**
 * An init error whose message starts with the op, like every skiff error:
 * kind 'value' (the source was found but is not usable), or 'argument' (the
 * `wasm` option has the wrong type).
 */
export function loadError(msg, kind = 'value') {
  return fail('init', kind, msg);
}

/** What `bytes` start with, for a message: HTML, text or hex. */
function describeStart(bytes) {
  const head = Array.from(bytes.subarray(0, 4), (b) => b.toString(16).padStart(2, '0')).join(' ');
  const text = new TextDecoder().decode(bytes.subarray(0, 32)).trimStart().toLowerCase();
  if (text.startsWith('<!doctype html') || text.startsWith('<html')) return `an HTML page (${head} = "<!do...")`;
  return bytes.length === 0 ? 'nothing (an empty body)' : `bytes ${head}`;
}

/**
 * Throws unless `bytes` start like a WebAssembly module. `served`: they came
 * from a server, so say what usually went wrong there.
 */
export function checkWasmBytes(bytes, from, served = false) {
  if (MAGIC.every((b, i) => bytes[i] === b)) return bytes;
  const why = served
    ? '. The server answered with something else, typically its index.html for a file it does not have: a ' +
      "bundler copied skiff's JavaScript without its .wasm, or the .wasm was not deployed. Serve " +
      'node_modules/skiff-ml/pkg/skiff_bg.wasm and pass its URL as init({ wasm: url })'
    : '';
  throw loadError(`${from} is not WebAssembly: it starts with ${describeStart(bytes)}${why}`);
}

/** Fetches a .wasm, checked to be one. A server that says application/wasm gets a streaming compile. */
export async function fetchWasm(url) {
  let res;
  try {
    res = await fetch(url);
  } catch (e) {
    throw loadError(`fetching ${url} failed: ${e && e.message ? e.message : e}`);
  }
  if (!res.ok) throw loadError(`fetching ${url} failed: HTTP ${res.status} ${res.statusText}`.trimEnd());
  if ((res.headers.get('content-type') ?? '').startsWith('application/wasm')) return res;
  return checkWasmBytes(new Uint8Array(await res.arrayBuffer()), url, true);
}

const isUrlLike = (v) =>
  typeof v === 'string' || v instanceof URL || (typeof Request === 'function' && v instanceof Request);

/**
 * What wasm-bindgen's init accepts, from a user's `init({ wasm })`: a URL
 * (string, URL or Request: fetched and checked), a Response (or a promise of
 * one), the bytes (ArrayBuffer or a typed array), or a compiled
 * WebAssembly.Module. `fetchUrl` is how this entry point reads a URL.
 */
export async function wasmSource(source, fetchUrl = fetchWasm) {
  if (isUrlLike(source)) return fetchUrl(source instanceof Request ? source.url : String(source));
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof ArrayBuffer) return checkWasmBytes(new Uint8Array(source), 'wasm (the bytes passed)');
  if (ArrayBuffer.isView(source)) {
    return checkWasmBytes(new Uint8Array(source.buffer, source.byteOffset, source.byteLength), 'wasm (the bytes passed)');
  }
  if (typeof Response === 'function' && (source instanceof Response || source instanceof Promise)) {
    const res = await source;
    if (!(res instanceof Response)) throw loadError(`wasm: a promise must resolve to a Response, got ${typeof res}`, 'argument');
    if (!res.ok) throw loadError(`wasm: the Response is HTTP ${res.status} (${res.url})`);
    return checkWasmBytes(new Uint8Array(await res.arrayBuffer()), res.url || 'the Response', true);
  }
  throw loadError(
    'wasm must be a URL (string or URL), a Request, a Response, an ArrayBuffer or typed array of the .wasm, ' +
      `or a WebAssembly.Module, got ${source === null ? 'null' : typeof source}`,
    'argument',
  );
}

/** Base64 (the development entry's inlined .wasm) to bytes. */
export function decodeBase64(text) {
  if (typeof Uint8Array.fromBase64 === 'function') return Uint8Array.fromBase64(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
