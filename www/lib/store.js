// The latest checkpoint in IndexedDB (so a reload resumes training), and
// safetensors files to and from the user's disk.

const DB = 'skiff-demo';
const STORE = 'checkpoints';
const KEY = 'latest';

function open() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function run(mode, fn) {
  const db = await open();
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const req = fn(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
    });
  } finally {
    db.close();
  }
}

/** Stores the checkpoint ({ config, model, optimizer, step, history, savedAt }). */
export const saveLatest = (checkpoint) => run('readwrite', (s) => s.put(checkpoint, KEY));
/** The stored checkpoint, or undefined. */
export const loadLatest = () => run('readonly', (s) => s.get(KEY));
/** Forgets the stored checkpoint. */
export const clearLatest = () => run('readwrite', (s) => s.delete(KEY));

/** Offers `bytes` as a file download named `name`. */
export function download(bytes, name) {
  const url = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
  const a = Object.assign(document.createElement('a'), { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// ---- progress in model files ----------------------------------------------
// A downloaded model says where training stood (model, step, epoch) in the
// safetensors header's __metadata__ (string values, as the format requires),
// so loading it back keeps its step. Files without it (older downloads) fall
// back to the step in the name this page gives downloads ("...-step875...").

const HEADER = 8; // the header's length, a little-endian u64, comes first

function header(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  if (bytes.length < HEADER + n) throw new Error('not a safetensors file (its header is cut off)');
  return { n, json: JSON.parse(new TextDecoder().decode(bytes.subarray(HEADER, HEADER + n))) };
}

/** `bytes` (safetensors) with `progress` ({ model, step, epoch }) in its metadata. */
export function withProgress(bytes, progress) {
  const { n, json } = header(bytes);
  json.__metadata__ = { ...json.__metadata__, ...Object.fromEntries(Object.entries(progress).map(([k, v]) => [`skiff.${k}`, String(v)])) };
  let text = JSON.stringify(json);
  text += ' '.repeat((8 - (new TextEncoder().encode(text).length % 8)) % 8); // keep the data 8-byte aligned
  const head = new TextEncoder().encode(text);
  const out = new Uint8Array(HEADER + head.length + bytes.length - HEADER - n);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, HEADER);
  out.set(bytes.subarray(HEADER + n), HEADER + head.length);
  return out;
}

/** { step, epoch } a model file was saved at: its metadata, else its name, else 0. */
export function readProgress(bytes, name = '') {
  let meta = {};
  try {
    meta = header(bytes).json.__metadata__ ?? {};
  } catch {
    // not readable here: the step comes from the name, if at all
  }
  const count = (v) => (/^\d+$/.test(v ?? '') ? Number(v) : null);
  const step = count(meta['skiff.step']) ?? count(name.match(/-step(\d+)\b/)?.[1]) ?? 0;
  return { step, epoch: count(meta['skiff.epoch']) ?? 0 };
}
