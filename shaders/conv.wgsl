// 2-D sliding-window kernels (src/backend/gpu/conv.rs), one compute shader
// per `// ==== kernel: NAME` section; the launcher prepends the prelude and
// this header. Parameters (all kernels): m[0] invocations, m[1] channels C,
// m[2] H, m[3] W, m[4] kh, m[5] kw, m[6] stride h, m[7] stride w,
// m[8] padding h, m[9] padding w, m[10] dilation h, m[11] dilation w,
// m[12] out_h, m[13] out_w, m[14] the input's offset, m[15..] its strides
// (4 for an image [N, C, H, W], 3 for columns [N, C*kh*kw, out_h*out_w]).
// Inputs are read through their strides, so views need no copy first.
// {T} is the data's element type: f32, or f16 (devices with shader-f16),
// moved as is by unfold, summed in f32 and rounded once by fold, compared
// as f32 by window_argmax.
//
// Two ways to share out the work, fixed when the kernel is built
// (src/backend/gpu/conv.rs): with ROWS false, one invocation per output
// element (real GPUs: neighbouring invocations touch neighbouring
// addresses); with ROWS true, one invocation per output row, looping along
// it (software adapters, lavapipe and SwiftShader: their SIMD lanes divide
// integers one lane at a time, so the index arithmetic, about six divisions
// per element, is paid once per row). m[0] counts invocations either way.
const ROWS: bool = {ROWS};

// The row of an output whose rows are `width` long, the first element in it
// and how many to compute: a whole row, or the one element `inv`.
struct Span { row: u32, first: u32, count: u32, }

fn span(inv: u32, width: u32) -> Span {
    if (ROWS) { return Span(inv, 0u, width); }
    return Span(inv / width, inv % width, 1u);
}

// The taps t in 0..k of window o whose coordinate o * stride + t * dilation
// - pad lies in 0..size, as a half-open range (cpu: conv::taps).
fn taps(o: u32, stride: u32, dilation: u32, pad: u32, k: u32, size: u32) -> vec2<u32> {
    let start = o * stride;
    var lo = 0u;
    if (start < pad) { lo = div_by(pad - start + dilation - 1u, dilation); }
    var hi = 0u;
    if (pad + size > start) { hi = min(div_by(pad + size - start - 1u, dilation) + 1u, k); }
    return vec2<u32>(min(lo, hi), hi);
}

// a / d, without the division when d is 1 (every pool: software adapters
// divide one SIMD lane at a time).
fn div_by(a: u32, d: u32) -> u32 {
    if (d == 1u) { return a; }
    return a / d;
}

// ==== kernel: unfold
// im2col: the [N, C*kh*kw, out_h*out_w] output, as rows of out_w elements
// (one row: one tap (ki, kj) of one channel over one line of windows); taps
// in the padding read as zero.
@group(0) @binding(1) var<storage, read> X: array<{T}>;
@group(0) @binding(2) var<storage, read_write> OUT: array<{T}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let inv = gid(wid, lid, nwg);
    if (inv >= pm(0u)) { return; }
    let sp = span(inv, pm(13u));
    let oh = sp.row % pm(12u);
    var t = sp.row / pm(12u);
    let kj = t % pm(5u);
    t = t / pm(5u);
    let ki = t % pm(4u);
    t = t / pm(4u);
    let c = t % pm(1u);
    let n = t / pm(1u);
    let y = oh * pm(6u) + ki * pm(10u);
    let row_in = y >= pm(8u) && y - pm(8u) < pm(2u);
    let base = pm(14u) + n * pm(15u) + c * pm(16u) + (y - pm(8u)) * pm(17u);
    for (var ow = sp.first; ow < sp.first + sp.count; ow = ow + 1u) {
        let x = ow * pm(7u) + kj * pm(11u);
        var v = {T}(0);
        if (row_in && x >= pm(9u) && x - pm(9u) < pm(3u)) {
            v = X[base + (x - pm(9u)) * pm(18u)];
        }
        OUT[sp.row * pm(13u) + ow] = v;
    }
}

// ==== kernel: fold
// col2im without atomics: each pixel of the [N, C, H, W] output (rows of W
// pixels) sums the column entries of every window tap that covers it, taps
// in (ki, kj) order, the order the cpu kernel adds them in (results agree
// bit for bit). Taps that land in the padding are never read. Strides of 1
// (the common case) skip their divisions.
@group(0) @binding(1) var<storage, read> COLS: array<{T}>;
@group(0) @binding(2) var<storage, read_write> OUT: array<{T}>;

// The window along one dim whose tap at offset d covers padded coordinate
// p, if any: (p - d) / stride when that divides evenly and is below `count`.
fn window_of(p: u32, d: u32, stride: u32, count: u32) -> u32 {
    if (d > p) { return count; }
    let q = p - d;
    if (stride == 1u) { return min(q, count); }
    if (q % stride != 0u) { return count; }
    return min(q / stride, count);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let inv = gid(wid, lid, nwg);
    if (inv >= pm(0u)) { return; }
    let sp = span(inv, pm(3u));
    let ih = sp.row % pm(2u);
    let t = sp.row / pm(2u);
    let c = t % pm(1u);
    let n = t / pm(1u);
    let kh = pm(4u);
    let kw = pm(5u);
    // The parameters the loops use, read once: SwiftShader reloads a uniform
    // at every use inside a loop, and this loop reads eight per tap.
    let dh = pm(10u);
    let dw = pm(11u);
    let sh = pm(6u);
    let sw = pm(7u);
    let out_h = pm(12u);
    let out_w = pm(13u);
    let row_stride = pm(16u);
    let col_stride = pm(17u);
    // Padded coordinates: window (oh, ow) tap (ki, kj) reads y = oh * sh + ki * dh.
    let y = ih + pm(8u);
    let base = pm(14u) + n * pm(15u);
    let pad_w = pm(9u);
    let out_row = sp.row * pm(3u);
    for (var iw = sp.first; iw < sp.first + sp.count; iw = iw + 1u) {
        let x = iw + pad_w;
        var acc = 0.0;
        for (var ki = 0u; ki < kh; ki = ki + 1u) {
            let oh = window_of(y, ki * dh, sh, out_h);
            if (oh == out_h) { continue; }
            for (var kj = 0u; kj < kw; kj = kj + 1u) {
                let ow = window_of(x, kj * dw, sw, out_w);
                if (ow == out_w) { continue; }
                let row = (c * kh + ki) * kw + kj;
                acc = acc + f32(COLS[base + row * row_stride + (oh * out_w + ow) * col_stride]);
            }
        }
        OUT[out_row + iw] = {T}(acc);
    }
}

// ==== kernel: window_argmax
// Max pooling's argmax: each window of the [N, C, out_h, out_w] output (rows
// of out_w windows) gets the flat index (into its H*W plane) of the window's first
// maximum over its in-image taps in (ki, kj) order, or of its last NaN (as
// PyTorch and the cpu kernel); padding never wins, and a window with no
// in-image tap answers 0. NaN is tested on the bits, which no fast-math
// assumption can fold away; `v > best` decides only NaN-free windows.
@group(0) @binding(1) var<storage, read> X: array<{T}>;
@group(0) @binding(2) var<storage, read_write> OUT: array<i32>;

fn is_nan_bits(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// The flat index of the maximum of window (oh, ow) of plane (n, c).
fn window_max(n: u32, c: u32, oh: u32, ow: u32) -> i32 {
    let rh = taps(oh, pm(6u), pm(10u), pm(8u), pm(4u), pm(2u));
    let rw = taps(ow, pm(7u), pm(11u), pm(9u), pm(5u), pm(3u));
    if (rh.x == rh.y || rw.x == rw.y) {
        return 0;
    }
    let base = pm(14u) + n * pm(15u) + c * pm(16u);
    // Start from the first in-image tap (the cpu kernel starts from -inf with
    // that tap's index: the same answer, and no infinite literal in WGSL).
    let ih0 = oh * pm(6u) + rh.x * pm(10u) - pm(8u);
    let iw0 = ow * pm(7u) + rw.x * pm(11u) - pm(9u);
    var best = ih0 * pm(3u) + iw0;
    var best_v = f32(X[base + ih0 * pm(17u) + iw0 * pm(18u)]);
    var nan_at = 0u;
    var has_nan = false;
    for (var ki = rh.x; ki < rh.y; ki = ki + 1u) {
        let ih = oh * pm(6u) + ki * pm(10u) - pm(8u);
        for (var kj = rw.x; kj < rw.y; kj = kj + 1u) {
            let iw = ow * pm(7u) + kj * pm(11u) - pm(9u);
            let v = f32(X[base + ih * pm(17u) + iw * pm(18u)]);
            let flat = ih * pm(3u) + iw;
            if (v > best_v) {
                best_v = v;
                best = flat;
            }
            if (is_nan_bits(v)) {
                nan_at = flat;
                has_nan = true;
            }
        }
    }
    return i32(select(best, nan_at, has_nan));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let inv = gid(wid, lid, nwg);
    if (inv >= pm(0u)) { return; }
    let sp = span(inv, pm(13u));
    let oh = sp.row % pm(12u);
    let t = sp.row / pm(12u);
    let c = t % pm(1u);
    let n = t / pm(1u);
    for (var ow = sp.first; ow < sp.first + sp.count; ow = ow + 1u) {
        OUT[sp.row * pm(13u) + ow] = window_max(n, c, oh, ow);
    }
}
