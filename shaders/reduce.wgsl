// Reductions of a strided f32 or f16 view over any set of axes (sum, max,
// min) and argmax/argmin along one axis. The host permutes the view to
// [kept..., reduced...], merges contiguous dims on each side, and templates
// {KIND}: 0 sum, 1 max, 2 min, 3 argmax, 4 argmin; {XT}: the input's element
// type (f16 elements are read as f32: sums accumulate in f32); {OUTT}: the
// output's (u32 for f32 results, as bits, and for indices; f16 for f16
// results). `store(i, v)` (a result, rounded to f16 where OUT is) and
// `store_index(i, v)` (an index) are appended by src/backend/gpu/reduce.rs.
//
// This kernel has its own parameter layout (the prelude's operand layout does
// not fit two index spaces):
//   m[0] = outputs, m[1] = reduced elements per output (k), m[2] = input offset,
//   m[3] = log2(G), m[4] = kept rank, m[5] = reduced rank,
//   m[6] = parts S each output is split into, m[7] = elements per part,
//   m[8..16] = kept shape, m[16..24] = kept strides,
//   m[24..32] = reduced shape, m[32..40] = reduced strides.
//
// A workgroup of W threads ({WGS}: 256, or 64 where every thread reduces
// alone, G = W, so that software adapters, which run each workgroup on one
// core, spread a few hundred parts over several) covers G outputs with
// L = W / G lanes each:
// thread `lid` serves output slot lid % G as lane lid / G. Lanes stride over
// the k reduced elements, then combine through workgroup memory in a tree.
// G = 1 is the classic one-workgroup-per-output reduction (long rows);
// G = W is one thread per output (many outputs, few elements each); in
// between, neighbouring threads read neighbouring outputs, which keeps column
// reductions coalesced. The host picks G from the sizes and strides.
//
// With S > 1 (long reductions over few outputs, sum/max/min only) the
// kernel's outputs are S partials per real output, each over one contiguous
// part of the reduced elements, and a second dispatch of this kernel reduces
// the [outputs, S] partials. m[0] then counts partials.
@group(0) @binding(1) var<storage, read> X: array<{XT}>;
// u32 so one binding serves f32 results (stored as bits) and i32 indices.
@group(0) @binding(2) var<storage, read_write> OUT: array<{OUTT}>;

const KIND: u32 = {KIND}u;
const ARG: bool = KIND >= 3u;
const MAXLIKE: bool = KIND == 1u || KIND == 3u;
// Index of a lane that saw no element: loses every tie, so any real index wins.
const NONE: u32 = 0xffffffffu;

var<workgroup> SV: array<f32, {WGS}>;
var<workgroup> SI: array<u32, {WGS}>;

// By bits: comparisons with NaN are not reliable under WGSL's float rules.
fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// 0 for sums, -inf for max, +inf for min: what an empty reduction gives.
fn identity() -> f32 {
    if (KIND == 0u) { return 0.0; }
    // From a variable: Chromium rejects a constant bitcast to a non-finite f32.
    var bits = 0x7f800000u;
    if (MAXLIKE) { bits = 0xff800000u; }
    return bitcast<f32>(bits);
}

// Whether (a, ai) beats (b, bi): NaN is the most extreme value (so it
// propagates), then the larger (max) or smaller (min) value, and ties go to
// the smaller index, which makes argmax/argmin return the first extreme
// however the lanes split the elements.
fn wins(a: f32, ai: u32, b: f32, bi: u32) -> bool {
    let an = is_nan(a);
    let bn = is_nan(b);
    if (an || bn) { return an && (!bn || ai < bi); }
    if (a == b) { return ai < bi; }
    if (MAXLIKE) { return a > b; }
    return a < b;
}

// Storage index of the first element of output o (row-major over kept dims).
fn kept_base(o: u32) -> u32 {
    var rem = o;
    var off = pm(2u);
    for (var d = pm(4u); d > 0u; d = d - 1u) {
        let size = pm(7u + d);
        off = off + (rem % size) * pm(15u + d);
        rem = rem / size;
    }
    return off;
}

// Offset of reduced element r from its output's base (row-major over reduced dims).
fn reduced_offset(r: u32) -> u32 {
    // After merging, most reductions have one reduced dim: skip the divisions.
    if (pm(5u) == 1u) { return r * pm(32u); }
    var rem = r;
    var off = 0u;
    for (var d = pm(5u); d > 0u; d = d - 1u) {
        let size = pm(23u + d);
        off = off + (rem % size) * pm(31u + d);
        rem = rem / size;
    }
    return off;
}

// A step of `n` reduced elements with one or two reduced dims, as the
// change of the storage offset and of the inner index: x = n / inner size
// (whole rows) and y = n % inner size; with one dim, the inner index is r
// itself and never wraps. z, w: the inner size and the offset change when
// the inner index wraps past it.
fn stepper(n: u32) -> vec4<u32> {
    if (pm(5u) == 1u) {
        return vec4<u32>(n * pm(32u), n, 0xffffffffu, 0u);
    }
    let inner = pm(25u);
    let q = n / inner;
    let rm = n % inner;
    // u32 arithmetic wraps, so a negative change is its two's complement.
    return vec4<u32>(q * pm(32u) + rm * pm(33u), rm, inner, pm(32u) - inner * pm(33u));
}

// The next position (offset, inner index) after `at`, `st` from `stepper`.
fn advance(at: vec2<u32>, st: vec4<u32>) -> vec2<u32> {
    let i = at.y + st.y;
    let wrap = i >= st.z;
    return vec2<u32>(at.x + st.x + select(0u, st.w, wrap), select(i, i - st.z, wrap));
}

@compute @workgroup_size({WGS})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let lg = pm(3u);
    let slot = lid & ((1u << lg) - 1u);
    let lane = lid >> lg;
    let lanes = {WGS}u >> lg;
    // 2-D grid (65,535 workgroups per dimension); surplus groups find o >= outputs.
    let o = ((wid.y * nwg.x + wid.x) << lg) + slot;
    let live = o < pm(0u);
    let splits = pm(6u);
    let lo = (o % splits) * pm(7u);
    let hi = min(pm(1u), lo + pm(7u));

    var acc = identity();
    var acci = NONE;
    if (live) {
        let base = kept_base(o / splits);
        var r = lo + lane;
        if (pm(5u) == 1u || pm(5u) == 2u) {
            // One or two reduced dims (nearly every reduction after merging):
            // the offset follows r by additions, with no division per element
            // (software rasterisers divide one lane at a time), and a sum
            // takes four elements per iteration in one expression (SwiftShader
            // blends every loop variable with the lane mask on each store).
            // The same elements in the same order as one at a time.
            let st = stepper(lanes);
            var at = vec2<u32>(base + reduced_offset(r), r);
            if (pm(5u) == 2u) {
                at.y = r % pm(25u);
            }
            if (KIND == 0u) {
                for (; r + 3u * lanes < hi; r = r + 4u * lanes) {
                    let at1 = advance(at, st);
                    let at2 = advance(at1, st);
                    let at3 = advance(at2, st);
                    acc = (((acc + f32(X[at.x])) + f32(X[at1.x])) + f32(X[at2.x])) + f32(X[at3.x]);
                    at = advance(at3, st);
                }
            }
            for (; r < hi; r = r + lanes) {
                let v = f32(X[at.x]);
                if (KIND == 0u) {
                    acc = acc + v;
                } else if (wins(v, r, acc, acci)) {
                    acc = v;
                    acci = r;
                }
                at = advance(at, st);
            }
        } else {
            for (; r < hi; r = r + lanes) {
                let v = f32(X[base + reduced_offset(r)]);
                if (KIND == 0u) {
                    acc = acc + v;
                } else if (wins(v, r, acc, acci)) {
                    acc = v;
                    acci = r;
                }
            }
        }
    }
    SV[lid] = acc;
    SI[lid] = acci;
    // Tree over the lanes of each slot; no early return above, so every
    // thread reaches each barrier (the bound is uniform: it comes from P).
    for (var s = lanes >> 1u; s > 0u; s = s >> 1u) {
        workgroupBarrier();
        if (lane < s) {
            let j = lid + (s << lg);
            if (KIND == 0u) {
                SV[lid] = SV[lid] + SV[j];
            } else if (wins(SV[j], SI[j], SV[lid], SI[lid])) {
                SV[lid] = SV[j];
                SI[lid] = SI[j];
            }
        }
    }
    // Lane 0 wrote its slot last itself, so it needs no barrier to read it.
    if (live && lane == 0u) {
        if (ARG) {
            store_index(o, select(SI[lid], 0u, SI[lid] == NONE));
        } else {
            store(o, SV[lid]); // a fused epilogue's, or a plain write
        }
    }
}
