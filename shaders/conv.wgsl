// 2-D sliding-window kernels (src/backend/gpu/conv.rs), one compute shader
// per `// ==== kernel: NAME` section; the launcher prepends the prelude and
// this header. Parameters (all kernels): m[0] invocations, m[1] channels C,
// m[2] H, m[3] W, m[4] kh, m[5] kw, m[6] stride h, m[7] stride w,
// m[8] padding h, m[9] padding w, m[10] dilation h, m[11] dilation w,
// m[12] out_h, m[13] out_w, m[14] the input's offset, m[15..] its strides
// (4 for an image [N, C, H, W], 3 for columns [N, C*kh*kw, out_h*out_w]).
// Inputs are read through their strides, so views need no copy first.

// The taps t in 0..k of window o whose coordinate o * stride + t * dilation
// - pad lies in 0..size, as a half-open range (cpu: conv::taps).
fn taps(o: u32, stride: u32, dilation: u32, pad: u32, k: u32, size: u32) -> vec2<u32> {
    let start = o * stride;
    var lo = 0u;
    if (start < pad) { lo = (pad - start + dilation - 1u) / dilation; }
    var hi = 0u;
    if (pad + size > start) { hi = min((pad + size - start - 1u) / dilation + 1u, k); }
    return vec2<u32>(min(lo, hi), hi);
}

// ==== kernel: unfold
// im2col: one invocation per element of the [N, C*kh*kw, out_h*out_w] output;
// taps in the padding read as zero.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> OUT: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid(wid, lid, nwg);
    if (i >= pm(0u)) { return; }
    let ow = i % pm(13u);
    var t = i / pm(13u);
    let oh = t % pm(12u);
    t = t / pm(12u);
    let kj = t % pm(5u);
    t = t / pm(5u);
    let ki = t % pm(4u);
    t = t / pm(4u);
    let c = t % pm(1u);
    let n = t / pm(1u);
    let y = oh * pm(6u) + ki * pm(10u);
    let x = ow * pm(7u) + kj * pm(11u);
    var v = 0.0;
    if (y >= pm(8u) && y - pm(8u) < pm(2u) && x >= pm(9u) && x - pm(9u) < pm(3u)) {
        v = X[pm(14u) + n * pm(15u) + c * pm(16u) + (y - pm(8u)) * pm(17u) + (x - pm(9u)) * pm(18u)];
    }
    OUT[i] = v;
}

// ==== kernel: fold
// col2im without atomics: one invocation per pixel of the [N, C, H, W]
// output sums the column entries of every window tap that covers it, taps in
// (ki, kj) order, the order the cpu kernel adds them in (results agree bit
// for bit). Taps that land in the padding are never read.
@group(0) @binding(1) var<storage, read> COLS: array<f32>;
@group(0) @binding(2) var<storage, read_write> OUT: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid(wid, lid, nwg);
    if (i >= pm(0u)) { return; }
    let iw = i % pm(3u);
    var t = i / pm(3u);
    let ih = t % pm(2u);
    t = t / pm(2u);
    let c = t % pm(1u);
    let n = t / pm(1u);
    let kh = pm(4u);
    let kw = pm(5u);
    // Padded coordinates: window (oh, ow) tap (ki, kj) reads y = oh * sh + ki * dh.
    let y = ih + pm(8u);
    let x = iw + pm(9u);
    let base = pm(14u) + n * pm(15u);
    var acc = 0.0;
    for (var ki = 0u; ki < kh; ki = ki + 1u) {
        let dy = ki * pm(10u);
        if (dy > y) { break; }
        if ((y - dy) % pm(6u) != 0u) { continue; }
        let oh = (y - dy) / pm(6u);
        if (oh >= pm(12u)) { continue; }
        for (var kj = 0u; kj < kw; kj = kj + 1u) {
            let dx = kj * pm(11u);
            if (dx > x) { break; }
            if ((x - dx) % pm(7u) != 0u) { continue; }
            let ow = (x - dx) / pm(7u);
            if (ow >= pm(13u)) { continue; }
            let row = (c * kh + ki) * kw + kj;
            acc = acc + COLS[base + row * pm(16u) + (oh * pm(13u) + ow) * pm(17u)];
        }
    }
    OUT[i] = acc;
}

// ==== kernel: window_argmax
// Max pooling's argmax: one invocation per window of the [N, C, out_h, out_w]
// output writes the flat index (into its H*W plane) of the window's first
// maximum over its in-image taps in (ki, kj) order, or of its last NaN (as
// PyTorch and the cpu kernel); padding never wins, and a window with no
// in-image tap answers 0. NaN is tested on the bits, which no fast-math
// assumption can fold away; `v > best` decides only NaN-free windows.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> OUT: array<i32>;

fn is_nan_bits(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid(wid, lid, nwg);
    if (i >= pm(0u)) { return; }
    let ow = i % pm(13u);
    var t = i / pm(13u);
    let oh = t % pm(12u);
    t = t / pm(12u);
    let c = t % pm(1u);
    let n = t / pm(1u);
    let rh = taps(oh, pm(6u), pm(10u), pm(8u), pm(4u), pm(2u));
    let rw = taps(ow, pm(7u), pm(11u), pm(9u), pm(5u), pm(3u));
    if (rh.x == rh.y || rw.x == rw.y) {
        OUT[i] = 0;
        return;
    }
    let base = pm(14u) + n * pm(15u) + c * pm(16u);
    // Start from the first in-image tap (the cpu kernel starts from -inf with
    // that tap's index: the same answer, and no infinite literal in WGSL).
    let ih0 = oh * pm(6u) + rh.x * pm(10u) - pm(8u);
    let iw0 = ow * pm(7u) + rw.x * pm(11u) - pm(9u);
    var best = ih0 * pm(3u) + iw0;
    var best_v = X[base + ih0 * pm(17u) + iw0 * pm(18u)];
    var nan_at = 0u;
    var has_nan = false;
    for (var ki = rh.x; ki < rh.y; ki = ki + 1u) {
        let ih = oh * pm(6u) + ki * pm(10u) - pm(8u);
        for (var kj = rw.x; kj < rw.y; kj = kj + 1u) {
            let iw = ow * pm(7u) + kj * pm(11u) - pm(9u);
            let v = X[base + ih * pm(17u) + iw * pm(18u)];
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
    OUT[i] = i32(select(best, nan_at, has_nan));
}
