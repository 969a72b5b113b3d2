// A stable argsort along one axis by a bitonic network (src/backend/gpu/sort.rs).
// Rows are padded to P, a power of two, in a scratch buffer of (key, index)
// pairs, [rows, P]: the key is the value (f32 or i32) mapped to a u32 whose
// unsigned order is the sort's (NaN largest, -0 equal to 0; inverted when
// descending), the index its position in the row. Pairs compare by key, then
// by index, so every pair is distinct and the network's result is the
// stable order whatever its schedule; padding pairs (key and index
// 0xffffffff) sort after every real one.
//
// Parameters: the prelude's block over the input (init) or the output
// (finish) viewed with the sorted axis last, one operand, then m[20] = n,
// m[21] = P, m[22] = rows, m[23] = 1 when descending, m[24] = k (the size of
// the bitonic sequences being merged), m[25] = j (the compare distance; the
// largest one for the local kernel), m[26] = the first k of the local kernel.

fn less(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

// Position i (of the pairs j apart) of compare-exchange t: t with a 0 bit
// inserted at log2(j).
fn lower(t: u32, j: u32) -> u32 {
    return ((t & ~(j - 1u)) << 1u) | (t & (j - 1u));
}

// ==== kernel: init
@group(0) @binding(1) var<storage, read> X: array<{T}>;
@group(0) @binding(2) var<storage, read_write> S: array<vec2<u32>>;

// Each build calls the one for its element type ({T}); the other is unused.
fn to_key_i32(v: i32) -> u32 {
    // Flipping the sign bit orders two's complement as unsigned.
    let key = bitcast<u32>(v) ^ 0x80000000u;
    if (pm(23u) == 1u) { return ~key; }
    return key;
}

fn to_key_f32(v: f32) -> u32 {
    var b = bitcast<u32>(v);
    let desc = pm(23u) == 1u;
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        // NaN is the largest value: last ascending, first descending.
        if (desc) { return 0u; }
        return 0xfffffffeu;
    }
    if (b == 0x80000000u) { b = 0u; }
    var key = b | 0x80000000u;
    if ((b & 0x80000000u) != 0u) { key = ~b; }
    if (desc) { key = ~key; }
    return key;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let f = gid(wid, lid, nwg);
    let p = pm(21u);
    if (f >= pm(22u) * p) { return; }
    let row = f / p;
    let pos = f % p;
    let n = pm(20u);
    if (pos < n) {
        S[f] = vec2<u32>(to_key_{T}(X[operand_index(row * n + pos, 0u)]), pos);
    } else {
        S[f] = vec2<u32>(0xffffffffu, 0xffffffffu);
    }
}

// ==== kernel: merge
// One compare-exchange per invocation at distance j in the sequences of k
// (j >= 256: the pairs lie in different workgroups' blocks).
@group(0) @binding(1) var<storage, read_write> S: array<vec2<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid(wid, lid, nwg);
    if (t >= pm(22u) * pm(21u) / 2u) { return; }
    let k = pm(24u);
    let j = pm(25u);
    let i = lower(t, j);
    let up = ((i & (pm(21u) - 1u)) & k) == 0u;
    let a = S[i];
    let b = S[i + j];
    if (less(b, a) == up) {
        S[i] = b;
        S[i + j] = a;
    }
}

// ==== kernel: local
// Every compare-exchange at distances below 512 in workgroup memory: one
// workgroup per block of 512 pairs (rows shorter than that share a block;
// compared pairs never leave their row). For k from m[26] to m[24],
// doubling, and j from min(k / 2, m[25]) down to 1.
@group(0) @binding(1) var<storage, read_write> S: array<vec2<u32>>;

var<workgroup> L: array<vec2<u32>, 512>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let block = wid.y * nwg.x + wid.x;
    let total = pm(22u) * pm(21u);
    let base = block * 512u;
    // Uniform per workgroup: surplus groups of a 2-D grid leave together.
    if (base >= total) { return; }
    for (var h = 0u; h < 2u; h = h + 1u) {
        let f = base + lid + h * 256u;
        var v = vec2<u32>(0xffffffffu, 0xffffffffu);
        if (f < total) { v = S[f]; }
        L[lid + h * 256u] = v;
    }
    workgroupBarrier();
    let p = pm(21u);
    for (var k = pm(26u); k <= pm(24u); k = k << 1u) {
        for (var j = min(k >> 1u, pm(25u)); j > 0u; j = j >> 1u) {
            let i = lower(lid, j);
            let up = (((base + i) & (p - 1u)) & k) == 0u;
            let a = L[i];
            let b = L[i + j];
            if (less(b, a) == up) {
                L[i] = b;
                L[i + j] = a;
            }
            workgroupBarrier();
        }
    }
    for (var h = 0u; h < 2u; h = h + 1u) {
        let f = base + lid + h * 256u;
        if (f < total) { S[f] = L[lid + h * 256u]; }
    }
}

// ==== kernel: finish
// The sorted positions of each row's first n pairs, as i32, into the output
// (contiguous in the input's order) through operand 0's view.
@group(0) @binding(1) var<storage, read> S: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> OUT: array<i32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid(wid, lid, nwg);
    let n = pm(20u);
    if (e >= pm(22u) * n) { return; }
    OUT[operand_index(e, 0u)] = i32(S[(e / n) * pm(21u) + e % n].y);
}
