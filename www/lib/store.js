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
