// One fused Adam/AdamW step over contiguous f32 buffers, in place:
//   g' = g + wd * p            (Adam: L2 weight decay)
//   p  = p * (1 - lr * wd)     (AdamW: decoupled weight decay)
//   m  = b1 * m + (1 - b1) * g'
//   v  = b2 * v + (1 - b2) * g'^2
//   p  = p - (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)
// {ELEM} is f32 (one element per invocation) or vec4<f32> (four consecutive
// elements per invocation: the buffers are bound as arrays of vec4, so the
// launch, the bounds check and the parameter reads happen once per four
// elements; software adapters pay per load and per invocation). Every
// operation is componentwise, so both give the same values.
// Params: m[0] = end, then f32 scalars lr, b1, b2, eps, wd, bc1, sqrt(bc2),
// decoupled (0/1), m[9] = start; start and end count {ELEM}s. The launcher
// runs the vec4 form over a length's multiple of 4 and this one-element
// form over the rest.
alias E = {ELEM};
@group(0) @binding(1) var<storage, read> G: array<E>;
@group(0) @binding(2) var<storage, read_write> PARAM: array<E>;
@group(0) @binding(3) var<storage, read_write> M: array<E>;
@group(0) @binding(4) var<storage, read_write> V: array<E>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = pm(9u) + gid(wid, lid, nwg);
    if (i >= pm(0u)) { return; }
    let lr = pf(1u);
    let b1 = pf(2u);
    let b2 = pf(3u);
    let eps = pf(4u);
    let wd = pf(5u);
    var p = PARAM[i];
    var g = G[i];
    if (pm(8u) == 1u) {
        p = p * (1.0 - lr * wd);
    } else {
        g = g + wd * p;
    }
    let m = b1 * M[i] + (1.0 - b1) * g;
    let v = b2 * V[i] + (1.0 - b2) * g * g;
    M[i] = m;
    V[i] = v;
    PARAM[i] = p - (lr / pf(6u)) * m / (sqrt(v) / pf(7u) + eps);
}
