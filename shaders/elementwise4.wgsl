// The 4-wide variant of elementwise.wgsl (the same placeholders, and LANES):
// each invocation computes four consecutive output elements i..i+3 (i a
// multiple of 4) and stores them as one vec4. It runs only when the launcher
// (src/backend/gpu/kernels.rs, `vec4_lanes`) has found that, for every
// operand, those four elements are either an aligned vec4 of its buffer
// (bound as array<vec4<T>>) or one element read once and repeated (a
// broadcast along the innermost dim, bound as array<T>). So the strided
// index math, the bounds checks and the loads happen once per four elements.
// Each lane evaluates the row's scalar expression unchanged: the same values
// as the one-element kernel.
{BINDINGS}
@group(0) @binding({OUT_BINDING}) var<storage, read_write> OUT: array<vec4<{TOUT}>>;

{HELPERS}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid(wid, lid, nwg);
    if (t >= pm(0u) / 4u) { return; }
    let i = 4u * t;
    let p0 = pf({SCALARS}u);
    let p1 = pf({SCALARS}u + 1u);
    {LOADS}
    var o: vec4<{TOUT}>;
    {LANES}
    OUT[({OUT_INDEX}) >> 2u] = o;
}
