// One template for every elementwise family: {ARITY} operands A, B, C of
// types {TA}, {TB}, {TC} (unused ones are not declared), output of type
// {TOUT}; the registry row supplies {EXPR} over x (unary) or a, b (binary)
// or c, a, b (select), and scalars p0, p1.
{BINDINGS}
@group(0) @binding({OUT_BINDING}) var<storage, read_write> OUT: array<{TOUT}>;

{HELPERS}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid(wid, lid, nwg);
    if (i >= pm(0u)) { return; }
    let p0 = pf({SCALARS}u);
    let p1 = pf({SCALARS}u + 1u);
    {LOADS}
    OUT[{OUT_INDEX}] = {EXPR};
}
