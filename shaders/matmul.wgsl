// Batched matrix product C[b] = A[b] B[b] over strided operands
// (appended to prelude.wgsl; src/backend/gpu/matmul/ fills the parameters
// and the bindings' element type (ELEM in braces): f32, or f16 on devices with
// shader-f16, read as f32 at staging, accumulated in f32 and rounded once
// by `store`).
//
// Tiling, in two sizes (WG, TK and STAGE in braces are filled by
// src/backend/gpu/matmul/tiled.rs, `body`): a WG x WG workgroup computes an
// 8WG x 8WG tile of C; each invocation owns an 8x8 register block made of
// four 4x4 quads: rows 4ty..4ty+3 and HALF+4ty..HALF+4ty+3, columns
// 4tx..4tx+3 and HALF+4tx..HALF+4tx+3 (HALF = 4WG). K advances in slices of
// TK: the workgroup stages a TM x TK slice of A (k-major) and a TK x TN slice
// of B in workgroup memory as vec4s, so each k step reads 2 vec4 of A and 2
// vec4 of B for 64 FMAs. The padding vec4 of each staged k row spreads the
// column-order staging stores over the memory banks. (Fetching each slice
// into registers while the one before it is multiplied ran slower on a big
// GPU.)
//   - 64x64 tiles (WG 8, TK 16): 2 x 16 x 17 vec4 = 8,704 bytes of workgroup
//     storage, for every other product;
//   - 128x128 tiles (WG 16, TK 8): 2 x 8 x 33 vec4 = 8,448 bytes, 256
//     invocations, for products with tiles enough to fill a big GPU
//     (`GpuContext::matmul_wide_from`): each staged element feeds twice the
//     FMAs, so a real GPU's memory traffic per FMA halves.
// matmul/tiled.rs writes the loop over a slice out step by step
// (`unroll_slice`). Both fit WebGPU's 16 KiB default. Where B is row-major
// and aligned, matmul/tiled.rs replaces B's part of the staging loop with
// vec4 loads (shaders/matmul_tiled_variants.wgsl).
//
// Note: why 8x8 blocks rather than 4x4 (for 64x64 tiles, 64 invocations
// rather than 256); the larger block needs a quarter of the workgroup-memory
// loads per FMA (4 vec4 loads per 64 FMAs instead of 8 scalar loads per 16)
// and half the bytes, and on lavapipe, where those loads dominate, it ran
// about twice as fast (4x4 blocks read as vec4s gained far less).
//
// Software adapters (DeviceType::Cpu, e.g. lavapipe) run a different kernel,
// shaders/matmul_blocked.wgsl filled in by src/backend/gpu/matmul/blocked.rs:
// no workgroup memory, no barriers, register blocks of up to 16x32 (sized to
// each product) read straight from storage, about three times as fast as
// this one there. The lavapipe comparison above is from when this kernel ran
// there; SKIFF_GPU_MATMUL=tiled still forces it. Both share the parameters
// and bindings below.
//
// Operands are read through their strides (transposed views need no copy);
// the staging loop picks whichever thread-to-element mapping makes
// neighbouring invocations read neighbouring addresses. Out-of-range
// elements stage as 0, so ragged edges need no special path.
//
// Parameters (u32 slots of the uniform block):
//   0 M, 1 K, 2 N, 3 batch count, 4 tiles along N, 5 tiles along M,
//   6 A offset, 7 B offset, 8 A row stride, 9 A col stride,
//   10 B row stride, 11 B col stride, 12 batch rank R (<= 8),
//   16..24 batch shape, 24..32 A batch strides, 32..40 B batch strides
//   (0 on broadcast dims).
// The grid is any (x, y, z) covering tiles_n * tiles_m * batch workgroups;
// each workgroup decodes its tile and batch from its linear id.

const WG: u32 = {WG}u; // invocations along each side of the workgroup
const TM: u32 = 8u * WG; // tile rows
const TN: u32 = 8u * WG; // tile columns
const TK: u32 = {TK}u; // steps of K per staged slice
const HALF: u32 = 4u * WG; // offset of an invocation's second quad of rows (and of columns)
const LD4: u32 = 2u * WG + 1u; // vec4s per staged k row: TM / 4 + 1 padding
const STAGED: u32 = TM * TK / (WG * WG); // elements of each operand one invocation stages per slice

@group(0) @binding(1) var<storage, read> A: array<{ELEM}>;
@group(0) @binding(2) var<storage, read> B: array<{ELEM}>;
@group(0) @binding(3) var<storage, read_write> C: array<{ELEM}>;

var<workgroup> As: array<vec4<f32>, {STAGE}>; // As[k * LD4 + q] = A rows 4q..4q+3 at k (TK * LD4 vec4s)
var<workgroup> Bs: array<vec4<f32>, {STAGE}>; // Bs[k * LD4 + q] = B cols 4q..4q+3 at k

@compute @workgroup_size({WG}, {WG}, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let M = pm(0u);
    let K = pm(1u);
    let N = pm(2u);
    let tiles_n = pm(4u);
    let tiles_m = pm(5u);
    let linear = (wid.z * nwg.y + wid.y) * nwg.x + wid.x;
    let rest = linear / tiles_n;
    let bat = rest / tiles_m;
    if (bat >= pm(3u)) {
        return; // padding workgroup of a folded grid (uniform per workgroup)
    }
    let col0 = (linear % tiles_n) * TN;
    let row0 = (rest % tiles_m) * TM;

    let offsets = batch_offsets(bat);
    let oa = offsets.x;
    let ob = offsets.y;
    let rsa = pm(8u);
    let csa = pm(9u);
    let rsb = pm(10u);
    let csb = pm(11u);
    let a_kfast = csa == 1u;
    let b_nfast = csb == 1u;

    let tx = lid.x;
    let ty = lid.y;
    // acc<row quad><row in quad><col quad>: acc121 holds row HALF+4ty+2, cols HALF+4tx..HALF+4tx+3.
    var acc000 = vec4<f32>(0.0);
    var acc001 = vec4<f32>(0.0);
    var acc010 = vec4<f32>(0.0);
    var acc011 = vec4<f32>(0.0);
    var acc020 = vec4<f32>(0.0);
    var acc021 = vec4<f32>(0.0);
    var acc030 = vec4<f32>(0.0);
    var acc031 = vec4<f32>(0.0);
    var acc100 = vec4<f32>(0.0);
    var acc101 = vec4<f32>(0.0);
    var acc110 = vec4<f32>(0.0);
    var acc111 = vec4<f32>(0.0);
    var acc120 = vec4<f32>(0.0);
    var acc121 = vec4<f32>(0.0);
    var acc130 = vec4<f32>(0.0);
    var acc131 = vec4<f32>(0.0);

    for (var k0 = 0u; k0 < K; k0 = k0 + TK) {
        // Stage: TM x TK elements of each operand, STAGED per invocation.
        for (var p = 0u; p < STAGED; p = p + 1u) {
            let e = li + WG * WG * p;
            var ar = e % TM; // A slice: TM rows x TK k
            var ak = e / TM;
            if (a_kfast) {
                ar = e / TK;
                ak = e % TK;
            }
            var v = 0.0;
            if (row0 + ar < M && k0 + ak < K) {
                v = f32(A[oa + (row0 + ar) * rsa + (k0 + ak) * csa]);
            }
            As[ak * LD4 + ar / 4u][ar % 4u] = v;
            var bk = e % TK; // B slice: TK k x TN cols
            var bc = e / TK;
            if (b_nfast) {
                bk = e / TN;
                bc = e % TN;
            }
            var w = 0.0;
            if (k0 + bk < K && col0 + bc < N) {
                w = f32(B[ob + (k0 + bk) * rsb + (col0 + bc) * csb]);
            }
            Bs[bk * LD4 + bc / 4u][bc % 4u] = w;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk = kk + 1u) {
            let a0 = As[kk * LD4 + ty];
            let a1 = As[kk * LD4 + ty + WG];
            let b0 = Bs[kk * LD4 + tx];
            let b1 = Bs[kk * LD4 + tx + WG];
            acc000 = fma(vec4<f32>(a0.x), b0, acc000);
            acc001 = fma(vec4<f32>(a0.x), b1, acc001);
            acc010 = fma(vec4<f32>(a0.y), b0, acc010);
            acc011 = fma(vec4<f32>(a0.y), b1, acc011);
            acc020 = fma(vec4<f32>(a0.z), b0, acc020);
            acc021 = fma(vec4<f32>(a0.z), b1, acc021);
            acc030 = fma(vec4<f32>(a0.w), b0, acc030);
            acc031 = fma(vec4<f32>(a0.w), b1, acc031);
            acc100 = fma(vec4<f32>(a1.x), b0, acc100);
            acc101 = fma(vec4<f32>(a1.x), b1, acc101);
            acc110 = fma(vec4<f32>(a1.y), b0, acc110);
            acc111 = fma(vec4<f32>(a1.y), b1, acc111);
            acc120 = fma(vec4<f32>(a1.z), b0, acc120);
            acc121 = fma(vec4<f32>(a1.z), b1, acc121);
            acc130 = fma(vec4<f32>(a1.w), b0, acc130);
            acc131 = fma(vec4<f32>(a1.w), b1, acc131);
        }
        workgroupBarrier();
    }

    let cbase = bat * M * N;
    let r0 = row0 + 4u * ty;
    let c0 = col0 + 4u * tx;
    store_row(cbase, r0, c0, M, N, acc000, acc001);
    store_row(cbase, r0 + 1u, c0, M, N, acc010, acc011);
    store_row(cbase, r0 + 2u, c0, M, N, acc020, acc021);
    store_row(cbase, r0 + 3u, c0, M, N, acc030, acc031);
    store_row(cbase, r0 + HALF, c0, M, N, acc100, acc101);
    store_row(cbase, r0 + HALF + 1u, c0, M, N, acc110, acc111);
    store_row(cbase, r0 + HALF + 2u, c0, M, N, acc120, acc121);
    store_row(cbase, r0 + HALF + 3u, c0, M, N, acc130, acc131);
}

// Writes one row of a register block: `lo` at columns col..col+3, `hi` at
// col+HALF..col+HALF+3, skipping whatever lies outside C. `store(i, v)` (appended
// by src/backend/gpu/matmul/mod.rs) writes C[i], after a fused epilogue's steps
// when there is one (src/backend/gpu/epilogue.rs).
fn store_row(cbase: u32, row: u32, col: u32, M: u32, N: u32, lo: vec4<f32>, hi: vec4<f32>) {
    if (row >= M) {
        return;
    }
    let o = cbase + row * N;
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (col + j < N) {
            store(o + col + j, lo[j]);
        }
        if (col + HALF + j < N) {
            store(o + col + HALF + j, hi[j]);
        }
    }
}
