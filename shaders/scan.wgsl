// Inclusive scans (running sum or product) along one axis of a strided f32
// view (src/backend/gpu/scan.rs). The host views the input with the scanned
// axis last, [rows..., n], so element i of row r is flat index r * n + i of
// that view, found through operand 0's strides; the output (contiguous in
// the input's own order) is written through operand 1's. Parameters: the
// prelude's block over that view, then m[30] = n, m[31] = rows,
// m[32] = 1 to scan from the end backwards, m[33] = 0 sum, 1 product,
// m[34] = the elements of a row each workgroup scans (a block), m[35] = the
// blocks per row. Element k of a row in scan order is i = k (n - 1 - k
// backwards).
//
// One workgroup per block (a whole row, or a part of a long row when there
// are too few rows to fill the GPU): the block is taken in chunks of 256
// elements, each scanned in workgroup memory by Hillis-Steele (log2(256) = 8
// steps), then combined with the carry (the scan of the chunks before it),
// carried sequentially from chunk to chunk. A split row's blocks also store
// their totals; the host scans those (this kernel again) and `scan_carry`
// combines each block after the first with the scan of the blocks before it.
// No host round trip, and rows of any length.

fn combine(a: f32, b: f32) -> f32 {
    if (pm(33u) == 1u) { return a * b; }
    return a + b;
}

fn identity() -> f32 {
    if (pm(33u) == 1u) { return 1.0; }
    return 0.0;
}

// Position of element k of `row` in scan order, as a flat index of the view.
fn scan_at(row: u32, k: u32) -> u32 {
    let n = pm(30u);
    var i = k;
    if (pm(32u) == 1u) { i = n - 1u - k; }
    return row * n + i;
}
// ==== kernel: scan
// For whole rows the host leaves TOTALS out; for split rows it binds
// TOTALS (one f32 per block) at 2, moves OUT to 3, and stores each block's
// total at the end (src/backend/gpu/scan.rs, `scan_source`).
@group(0) @binding(1) var<storage, read> X: array<f32>;
{TOTALS}
@group(0) @binding({OUT}) var<storage, read_write> OUT: array<f32>;

const WG: u32 = 256u;
var<workgroup> S: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    // Uniform per workgroup: every invocation leaves together (2-D grids
    // have surplus groups).
    let group = wid.y * nwg.x + wid.x;
    let row = group / pm(35u);
    if (row >= pm(31u)) { return; }
    let lo = (group % pm(35u)) * pm(34u);
    let hi = min(pm(30u), lo + pm(34u));
    var carry = identity();
    for (var start = lo; start < hi; start = start + WG) {
        let k = start + lid;
        var at = 0u;
        var v = identity();
        if (k < hi) {
            at = scan_at(row, k);
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
        if (k < hi) { OUT[operand_index(at, 1u)] = combine(carry, S[lid]); }
        carry = combine(carry, S[WG - 1u]);
        // Nobody overwrites S[WG - 1] for the next chunk before all have read it.
        workgroupBarrier();
    }
    {STORE_TOTAL}
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
    var acc = identity();
    for (var k = 0u; k < pm(30u); k = k + 1u) {
        let at = scan_at(row, k);
        acc = combine(acc, X[operand_index(at, 0u)]);
        OUT[operand_index(at, 1u)] = acc;
    }
}

// ==== kernel: scan_carry
// The third pass of a split scan: element k of a row in block b > 0 is
// combined with SCANNED[row, b - 1], the scan of the totals of the blocks
// before it. One invocation per element.
@group(0) @binding(1) var<storage, read> SCANNED: array<f32>;
@group(0) @binding(2) var<storage, read_write> OUT: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid(wid, lid, nwg);
    let n = pm(30u);
    if (e >= pm(31u) * n) { return; }
    let row = e / n;
    let k = e % n;
    let block = k / pm(34u);
    if (block == 0u) { return; }
    let at = operand_index(scan_at(row, k), 1u);
    OUT[at] = combine(SCANNED[row * pm(35u) + block - 1u], OUT[at]);
}
