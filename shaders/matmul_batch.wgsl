// The offsets of batch `bat`'s matrices in A (x) and in B (y), shared by the
// tiled and the blocked matmul: the views' offsets (params 6 and 7) plus, for
// each batch dim from the last (their count at 12, sizes from 16, A's batch
// strides from 24, B's from 32), its index times the operand's stride.
// Broadcast batch dims have stride 0.
fn batch_offsets(bat: u32) -> vec2<u32> {
    var oa = pm(6u);
    var ob = pm(7u);
    var r = bat;
    for (var d = pm(12u); d > 0u; d = d - 1u) {
        let size = pm(15u + d);
        let i = r % size;
        oa = oa + i * pm(23u + d);
        ob = ob + i * pm(31u + d);
        r = r / size;
    }
    return vec2<u32>(oa, ob);
}
