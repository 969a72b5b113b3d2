// Inclusive scans (running sum or product) along one axis of a strided f32
// view (src/backend/gpu/scan.rs). The host views the input with the scanned
// axis last, [rows..., n], so element i of row r is flat index r * n + i of
// that view, found through operand 0's strides; the output (contiguous in
// the input's own order) is written through operand 1's. Parameters: the
// prelude's block over that view, then m[30] = n, m[31] = rows,
// m[32] = 1 to scan from the end backwards, m[33] = 0 sum, 1 product.
//
// One workgroup per row: the row is taken in chunks of 256 elements, each
// scanned in workgroup memory by Hillis-Steele (log2(256) = 8 steps), then
// combined with the carry (the scan of the chunks before it), which is
// carried sequentially from chunk to chunk. No host round trip, and rows of
// any length.
// ==== kernel: scan
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> OUT: array<f32>;

const WG: u32 = 256u;
var<workgroup> S: array<f32, 256>;

fn combine(a: f32, b: f32) -> f32 {
    if (pm(33u) == 1u) { return a * b; }
    return a + b;
}

fn identity() -> f32 {
    if (pm(33u) == 1u) { return 1.0; }
    return 0.0;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    // Uniform per workgroup: every invocation leaves together (2-D grids
    // have surplus groups).
    let row = wid.y * nwg.x + wid.x;
    if (row >= pm(31u)) { return; }
    let n = pm(30u);
    let reverse = pm(32u) == 1u;
    var carry = identity();
    for (var start = 0u; start < n; start = start + WG) {
        let k = start + lid;
        var at = 0u;
        var v = identity();
        if (k < n) {
            var i = k;
            if (reverse) { i = n - 1u - k; }
            at = row * n + i;
            v = X[operand_index(at, 0u)];
        }
        S[lid] = v;
        workgroupBarrier();
        for (var off = 1u; off < WG; off = off << 1u) {
            var t = S[lid];
            if (lid >= off) { t = combine(S[lid - off], t); }
            workgroupBarrier();
            S[lid] = t;
            workgroupBarrier();
        }
        if (k < n) { OUT[operand_index(at, 1u)] = combine(carry, S[lid]); }
        carry = combine(carry, S[WG - 1u]);
        // Nobody overwrites S[WG - 1] for the next chunk before all have read it.
        workgroupBarrier();
    }
}

// ==== kernel: scan_rows
// Short rows (the host picks this kernel for rows of at most 32 elements):
// one invocation per row, accumulating in index order, so that a scan over
// many short rows does not occupy a 256-wide workgroup per row.
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> OUT: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = gid(wid, lid, nwg);
    if (row >= pm(31u)) { return; }
    let n = pm(30u);
    let prod = pm(33u) == 1u;
    var acc = 0.0;
    if (prod) { acc = 1.0; }
    for (var k = 0u; k < n; k = k + 1u) {
        var i = k;
        if (pm(32u) == 1u) { i = n - 1u - k; }
        let at = row * n + i;
        let v = X[operand_index(at, 0u)];
        if (prod) { acc = acc * v; } else { acc = acc + v; }
        OUT[operand_index(at, 1u)] = acc;
    }
}
