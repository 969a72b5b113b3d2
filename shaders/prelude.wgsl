// Shared by every skiff kernel. Each dispatch gets 64 u32 of parameters in
// binding 0 (a slot of the runtime's uniform ring):
//   m[0] = number of output elements, m[1] = rank (<= 8),
//   m[2..10] = output shape,
//   operand k at 10 + 10k: [offset, contiguous flag, 8 strides (0 = broadcast)],
//   scalars after the operands.
struct Params { m: array<vec4<u32>, 16>, }
@group(0) @binding(0) var<uniform> P: Params;

fn pm(i: u32) -> u32 { return P.m[i >> 2u][i & 3u]; }
fn pf(i: u32) -> f32 { return bitcast<f32>(pm(i)); }
fn pi(i: u32) -> i32 { return bitcast<i32>(pm(i)); }

// Linear invocation index over a 2-D grid of 256-wide workgroups (grids wrap
// at 65,535 workgroups per dimension).
fn gid(wid: vec3<u32>, lid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return (wid.y * nwg.x + wid.x) * 256u + lid.x;
}

// Storage index of output element i in operand k (strided, broadcast).
fn operand_index(i: u32, k: u32) -> u32 {
    let base = 10u + 10u * k;
    let off = pm(base);
    if (pm(base + 1u) == 1u) { return off + i; }
    var rem = i;
    var o = off;
    for (var d = pm(1u); d > 0u; d = d - 1u) {
        let size = pm(1u + d);
        o = o + (rem % size) * pm(base + 1u + d);
        rem = rem / size;
    }
    return o;
}
