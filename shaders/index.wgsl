// Index kernels (src/backend/gpu/index.rs). Each `// ==== kernel: NAME`
// section below is one compute shader: the launcher prepends the prelude and
// fills {T} with the data's WGSL type and {ACC} with the type sums are
// computed in ({T}, except f32 for f16 data: the scatters add f16 sources in
// f32 and round once at the store). Index values were range-checked on the
// host, written by an op that guarantees their range (argmax, max-pool's
// window argmax), or are checked on the device by the `check` kernel recorded
// before the op (src/backend/gpu/checks.rs), which reports at the next
// readback. So that no access is ever out of bounds meanwhile, gather writes
// 0 for an out-of-range index and the scatters never match one (their targets
// are compared, not indexed; the sorted `scatter_add` runs only on host-checked
// indices).


// Where output element i of a scatter sits (both scatter kernels; parameters
// as documented there): its BASE index, the SRC offset and index line of its
// position without the axis (the line starts at `line0`), its coordinate on
// the axis, and whether it lies within the index's extent off the axis.
struct ScatterTarget { base: u32, src: u32, line: u32, want: u32, inside: bool }

fn scatter_target(i: u32, line0: u32) -> ScatterTarget {
    let axis = pm(2u);
    var t = ScatterTarget(pm(4u), pm(5u), line0, 0u, true);
    var rem = i;
    for (var d = pm(1u); d > 0u; d = d - 1u) {
        let e = d - 1u;
        let c = rem % pm(8u + e);
        rem = rem / pm(8u + e);
        t.base = t.base + c * pm(24u + e);
        if (e == axis) {
            t.want = c;
        } else {
            t.inside = t.inside && c < pm(16u + e);
            t.src = t.src + c * pm(32u + e);
            t.line = t.line + c * pm(40u + e);
        }
    }
    return t;
}
// ==== kernel: check
// Range check of an index the host never read: counts the values outside
// 0..dim into flag slot m[21] (4 words: negative count, smallest negative,
// too-large count, largest), elementwise over the index view (operand 0);
// m[20] is dim. Zeroed slots are the clean state; the readback that copies
// them clears them.
@group(0) @binding(1) var<storage, read> I: array<i32>;
@group(0) @binding(2) var<storage, read_write> FLAGS: array<atomic<i32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid(wid, lid, nwg);
    if (i >= pm(0u)) { return; }
    let v = I[operand_index(i, 0u)];
    let s = pm(21u) * 4u;
    if (v < 0) {
        atomicAdd(&FLAGS[s], 1);
        atomicMin(&FLAGS[s + 1u], v);
    } else if (u32(v) >= pm(20u)) {
        atomicAdd(&FLAGS[s + 2u], 1);
        atomicMax(&FLAGS[s + 3u], v);
    }
}

// ==== kernel: gather
// out[i] = X[x(i) + I[idx(i)] * axis_stride], elementwise over the output
// (the prelude's layout block): operand 0 is X viewed in the output's shape
// with its stride along the axis zeroed, operand 1 the index in the output's
// shape (index_select broadcasts its 1-D index along every other dim), and
// the scalars after them are X's stride along the axis, m[30], and its size
// there, m[31] (an index outside 0..m[31] reads as 0; see the header).
@group(0) @binding(1) var<storage, read> X: array<{T}>;
@group(0) @binding(2) var<storage, read> I: array<i32>;
@group(0) @binding(3) var<storage, read_write> OUT: array<{T}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid(wid, lid, nwg);
    if (i >= pm(0u)) { return; }
    let k = I[operand_index(i, 1u)];
    if (k < 0 || u32(k) >= pm(31u)) {
        OUT[i] = {T}(0);
        return;
    }
    OUT[i] = X[operand_index(i, 0u) + u32(k) * pm(30u)];
}

// ==== kernel: scatter_add
// Deterministic scatter-add (index_add is the case of one shared line): one
// invocation per output element q = BASE[q] + the SRC elements aimed at it,
// added in increasing source position, exactly the cpu kernel's order (so the
// results agree bit for bit, and no atomics are needed).
//
// A "line" is one position of the index with its axis left out; the host
// sorted each line's A axis positions by target (stably) into KEYS: targets
// at [line * A, line * A + A), their axis positions at M + the same range.
// An invocation binary-searches its target (q's coordinate on the axis) in
// its line and walks the run of equal keys.
// Parameters: m[0] n, m[1] rank, m[2] axis, m[3] A, m[4] BASE offset,
// m[5] SRC offset, m[6] SRC stride along the axis, m[7] M (keys stored);
// per dim d: m[8 + d] output shape, m[16 + d] index extent (outputs beyond it
// in any dim but the axis receive nothing), m[24 + d] BASE stride, m[32 + d]
// SRC stride, m[40 + d] line stride (the line's offset into KEYS).
@group(0) @binding(1) var<storage, read> BASE: array<{T}>;
@group(0) @binding(2) var<storage, read> SRC: array<{T}>;
@group(0) @binding(3) var<storage, read> KEYS: array<u32>;
@group(0) @binding(4) var<storage, read_write> OUT: array<{T}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid(wid, lid, nwg);
    if (i >= pm(0u)) { return; }
    let at = scatter_target(i, 0u);
    let s = at.src;
    let line = at.line;
    let want = at.want;
    var acc = {ACC}(BASE[at.base]);
    if (at.inside) {
        let end = line + pm(3u);
        var lo = line;
        var hi = end;
        while (lo < hi) {
            let mid = (lo + hi) / 2u;
            if (KEYS[mid] < want) { lo = mid + 1u; } else { hi = mid; }
        }
        let m = pm(7u);
        for (var j = lo; j < end; j = j + 1u) {
            if (KEYS[j] != want) { break; }
            acc = acc + {ACC}(SRC[s + KEYS[m + j] * pm(6u)]);
        }
    }
    OUT[i] = {T}(acc);
}

// ==== kernel: scatter_add_scan
// scatter_add for an index the host never read (computed on the GPU: trusted
// to be in range, like max-pool's argmax, or checked on the device): no
// sorted keys, so each output element scans its whole line of A index
// positions and adds the sources aimed at it, in increasing position (the cpu
// kernel's order again). An out-of-range value matches no output: it adds nothing.
// Costs A reads per output instead of a binary search; needs no readback.
// Parameters as for scatter_add, except m[7] is the index's offset and
// m[40 + d] the index's strides (its axis stride steps along a line).
@group(0) @binding(1) var<storage, read> BASE: array<{T}>;
@group(0) @binding(2) var<storage, read> SRC: array<{T}>;
@group(0) @binding(3) var<storage, read> I: array<i32>;
@group(0) @binding(4) var<storage, read_write> OUT: array<{T}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid(wid, lid, nwg);
    if (i >= pm(0u)) { return; }
    let axis = pm(2u);
    let at = scatter_target(i, pm(7u));
    let s = at.src;
    let line = at.line;
    let want = at.want;
    var acc = {ACC}(BASE[at.base]);
    if (at.inside) {
        let step = pm(40u + axis);
        for (var k = 0u; k < pm(3u); k = k + 1u) {
            if (u32(I[line + k * step]) == want) {
                acc = acc + {ACC}(SRC[s + k * pm(6u)]);
            }
        }
    }
    OUT[i] = {T}(acc);
}

// ==== kernel: scatter_add_window
// scatter_add_scan for an index written by max-pool's window argmax, whose
// value at window position k lies inside window k (padding never wins): each
// output pixel visits only the windows covering it, at most
// ceil(kh/sh) * ceil(kw/sw) instead of the whole line, in increasing position
// like the scan, so the sums are the same bit for bit. Parameters as for
// scatter_add_scan, plus m[48..57]: the plane's width, the windows per
// column and per row (out_h, out_w), then kernel, stride and padding (h, w).
@group(0) @binding(1) var<storage, read> BASE: array<{T}>;
@group(0) @binding(2) var<storage, read> SRC: array<{T}>;
@group(0) @binding(3) var<storage, read> I: array<i32>;
@group(0) @binding(4) var<storage, read_write> OUT: array<{T}>;

// The first window along one dim covering pixel p: window o spans
// [o*s - pad, o*s - pad + k), so it covers p when o*s > p + pad - k.
fn first_window(p: u32, pad: u32, k: u32, s: u32) -> u32 {
    let q = p + pad;
    if (q < k) { return 0u; }
    return (q - k) / s + 1u;
}

// One invocation per output element (ROWS false), or per row of W pixels
// (ROWS true: software adapters, whose lanes divide integers one at a time;
// the row's pixels share their target's decomposition and the windows
// covering their row). m[0] counts invocations either way.
const ROWS: bool = {ROWS};

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let inv = gid(wid, lid, nwg);
    if (inv >= pm(0u)) { return; }
    let axis = pm(2u);
    let width = pm(48u);
    var first = inv;
    var count = 1u;
    if (ROWS) {
        first = inv * width;
        count = width;
    }
    let at = scatter_target(first, pm(7u));
    let step = pm(40u + axis);
    let out_h = pm(49u);
    let out_w = pm(50u);
    let r = at.want / width;
    let c0 = at.want % width;
    // Windows that never overlap (stride >= kernel both ways, every
    // max-pool with the default stride): a pixel lies in at most one, found
    // by counting along the row, and each window's index and source are
    // loaded once for its kw pixels, not once per pixel.
    if (ROWS && pm(53u) >= pm(51u) && pm(54u) >= pm(52u)) {
        let q = r + pm(55u);
        let oy = q / pm(53u);
        let row_in = at.inside && q - oy * pm(53u) < pm(51u) && oy < out_h;
        var ox = pm(56u) / pm(54u);
        var kj = pm(56u) - ox * pm(54u);
        var k = oy * out_w + ox;
        var hit = -1;
        var val = {ACC}(0.0);
        if (row_in && ox < out_w) {
            hit = I[at.line + k * step];
            val = {ACC}(SRC[at.src + k * pm(6u)]);
        }
        for (var j = 0u; j < count; j = j + 1u) {
            var acc = {ACC}(BASE[at.base + j * pm(24u + axis)]);
            if (row_in && kj < pm(52u) && ox < out_w && u32(hit) == at.want + j) {
                acc = acc + val;
            }
            OUT[first + j] = {T}(acc);
            kj = kj + 1u;
            if (kj == pm(54u)) {
                kj = 0u;
                ox = ox + 1u;
                k = k + 1u;
                if (row_in && ox < out_w) {
                    hit = I[at.line + k * step];
                    val = {ACC}(SRC[at.src + k * pm(6u)]);
                }
            }
        }
        return;
    }
    let y0 = first_window(r, pm(55u), pm(51u), pm(53u));
    let y1 = min((r + pm(55u)) / pm(53u) + 1u, out_h);
    for (var j = 0u; j < count; j = j + 1u) {
        let c = c0 + j;
        let want = at.want + j;
        var acc = {ACC}(BASE[at.base + j * pm(24u + axis)]);
        if (at.inside) {
            let x1 = min((c + pm(56u)) / pm(54u) + 1u, out_w);
            for (var oy = y0; oy < y1; oy = oy + 1u) {
                for (var ox = first_window(c, pm(56u), pm(52u), pm(54u)); ox < x1; ox = ox + 1u) {
                    let k = oy * out_w + ox;
                    if (u32(I[at.line + k * step]) == want) {
                        acc = acc + {ACC}(SRC[at.src + k * pm(6u)]);
                    }
                }
            }
        }
        OUT[first + j] = {T}(acc);
    }
}
