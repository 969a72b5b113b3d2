//! `KernelSpec::Fused` on the cpu: one pass over the output in chunks of
//! `CHUNK` elements. Per chunk, each input's elements are gathered through
//! its broadcast view (an input laid out like the output is read in place),
//! then every step runs over the chunk with its row's own slice kernels
//! into a chunk-sized scratch buffer, the last one into the output. The
//! scratch stays in cache, so a chain reads its inputs and writes its output
//! once instead of once per kernel; and since every element goes through
//! the very function eager code calls on it, a fused kernel gives eager's
//! bits (tests/capture/fusion.rs).

use super::buffer::{CpuBuffer, Elem};
use super::pool;
use crate::backend::View;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{FusedElementwise, FusedOp, Operand};
use crate::shape::{coalesce, contiguous_strides, Dims};
use smallvec::SmallVec;

/// Output elements per pass of the steps: a few scratch buffers of this many
/// elements stay in L1/L2, and each stays under the pool's threshold (a
/// scratch buffer is dropped, not returned to the pool).
const CHUNK: usize = 1024;

/// One input broadcast to the row-major output, its dims merged with the
/// output's where both allow.
struct Source<'a> {
    buf: &'a CpuBuffer,
    shape: Dims,
    strides: Dims,
    offset: usize,
    /// Element i of the output reads element `offset + i`: read in place.
    in_place: bool,
}

/// A typed read-only chunk.
enum Chunk<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
    F16(&'a [half::f16]),
    I32(&'a [i32]),
    Bool(&'a [u8]),
}

/// A typed chunk a step writes.
enum ChunkMut<'a> {
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
    F16(&'a mut [half::f16]),
    I32(&'a mut [i32]),
    Bool(&'a mut [u8]),
}

fn chunk(b: &CpuBuffer, start: usize, len: usize) -> Chunk<'_> {
    match b {
        CpuBuffer::F32(v) => Chunk::F32(&v[start..start + len]),
        CpuBuffer::F64(v) => Chunk::F64(&v[start..start + len]),
        CpuBuffer::F16(v) => Chunk::F16(&v[start..start + len]),
        CpuBuffer::I32(v) => Chunk::I32(&v[start..start + len]),
        CpuBuffer::Bool(v) => Chunk::Bool(&v[start..start + len]),
    }
}

fn chunk_mut(b: &mut CpuBuffer, start: usize, len: usize) -> ChunkMut<'_> {
    match b {
        CpuBuffer::F32(v) => ChunkMut::F32(&mut v[start..start + len]),
        CpuBuffer::F64(v) => ChunkMut::F64(&mut v[start..start + len]),
        CpuBuffer::F16(v) => ChunkMut::F16(&mut v[start..start + len]),
        CpuBuffer::I32(v) => ChunkMut::I32(&mut v[start..start + len]),
        CpuBuffer::Bool(v) => ChunkMut::Bool(&mut v[start..start + len]),
    }
}

/// A buffer of `n` elements of `dtype` from the pool (contents unspecified).
fn take(dtype: DType, n: usize) -> CpuBuffer {
    match dtype {
        DType::F32 => CpuBuffer::F32(pool::take(n)),
        DType::F64 => CpuBuffer::F64(pool::take(n)),
        DType::F16 => CpuBuffer::F16(pool::take(n)),
        DType::I32 => CpuBuffer::I32(pool::take(n)),
        DType::Bool => CpuBuffer::Bool(pool::take(n)),
    }
}

pub fn run(op: &'static str, spec: &FusedElementwise, inputs: &[View], out_shape: &[usize]) -> Result<CpuBuffer> {
    let internal = |what: String| Error::dtype(op, format!("internal: {} {what}", spec.name()));
    let bufs = inputs
        .iter()
        .map(|v| v.buffer.as_cpu())
        .collect::<Option<Vec<&CpuBuffer>>>()
        .ok_or_else(|| internal("got an input on another device".into()))?;
    let dtypes: Vec<DType> = bufs.iter().map(|b| b.dtype()).collect();
    spec.check(&dtypes).map_err(internal)?;
    let out_dtype = spec.dtype().ok_or_else(|| internal("has no steps".into()))?;
    let n: usize = out_shape.iter().product();
    let mut out = take(out_dtype, n);
    if n == 0 {
        return Ok(out);
    }
    let out_strides = contiguous_strides(out_shape);
    let sources: Vec<Source> = inputs
        .iter()
        .zip(&bufs)
        .map(|(v, &buf)| {
            let strides = v.layout.broadcast_strides(out_shape);
            let (shape, mut merged) = coalesce(out_shape, &[&out_strides, &strides]);
            let strides = merged.swap_remove(1);
            let in_place = shape.len() == 1 && strides[0] == 1;
            Source { buf, shape, strides, offset: v.layout.offset, in_place }
        })
        .collect();
    let width = n.min(CHUNK);
    let mut gathered: Vec<Option<CpuBuffer>> =
        sources.iter().map(|s| (!s.in_place).then(|| take(s.buf.dtype(), width))).collect();
    let last = spec.steps.len() - 1;
    let mut scratch: Vec<CpuBuffer> = spec.steps[..last].iter().map(|s| take(s.dtype, width)).collect();
    let mut start = 0;
    while start < n {
        let len = width.min(n - start);
        for (s, g) in sources.iter().zip(gathered.iter_mut()) {
            if let Some(g) = g {
                gather_chunk(s, start, g, len);
            }
        }
        for (j, step) in spec.steps.iter().enumerate() {
            let (done, rest) = scratch.split_at_mut(j.min(last));
            let dst = if j == last { chunk_mut(&mut out, start, len) } else { chunk_mut(&mut rest[0], 0, len) };
            let args: SmallVec<[Chunk; 3]> = step
                .args
                .iter()
                .map(|a| match *a {
                    Operand::Input(k) => match &gathered[k] {
                        Some(g) => chunk(g, 0, len),
                        None => chunk(sources[k].buf, sources[k].offset + start, len),
                    },
                    Operand::Step(i) => chunk(&done[i], 0, len),
                })
                .collect();
            if !eval(&step.op, &args, dst) {
                return Err(internal(format!("step {j} ({}) got operands of other dtypes", step.op.name())));
            }
        }
        start += len;
    }
    Ok(out)
}

fn gather_chunk(s: &Source, start: usize, dst: &mut CpuBuffer, len: usize) {
    let (shape, strides, off) = (&s.shape[..], &s.strides[..], s.offset);
    match (s.buf, dst) {
        (CpuBuffer::F32(v), CpuBuffer::F32(d)) => gather(v, shape, strides, off, start, &mut d[..len]),
        (CpuBuffer::F64(v), CpuBuffer::F64(d)) => gather(v, shape, strides, off, start, &mut d[..len]),
        (CpuBuffer::F16(v), CpuBuffer::F16(d)) => gather(v, shape, strides, off, start, &mut d[..len]),
        (CpuBuffer::I32(v), CpuBuffer::I32(d)) => gather(v, shape, strides, off, start, &mut d[..len]),
        (CpuBuffer::Bool(v), CpuBuffer::Bool(d)) => gather(v, shape, strides, off, start, &mut d[..len]),
        _ => unreachable!("scratch buffers are made with their input's dtype"),
    }
}

/// Elements `start..start + dst.len()` (row-major) of the strided view
/// (`shape`, `strides`, `offset`) of `src`, into `dst`: runs along the last
/// dim are copied, filled (stride 0) or stepped through.
fn gather<T: Copy>(src: &[T], shape: &[usize], strides: &[usize], offset: usize, start: usize, dst: &mut [T]) {
    let r = shape.len();
    let mut idx: SmallVec<[usize; 8]> = smallvec::smallvec![0; r];
    let (mut rem, mut pos) = (start, offset);
    for d in (0..r).rev() {
        idx[d] = rem % shape[d];
        rem /= shape[d];
        pos += idx[d] * strides[d];
    }
    let (inner, step) = (shape[r - 1], strides[r - 1]);
    let mut w = 0;
    loop {
        let run = (inner - idx[r - 1]).min(dst.len() - w);
        let out = &mut dst[w..w + run];
        match step {
            0 => out.fill(src[pos]),
            1 => out.copy_from_slice(&src[pos..pos + run]),
            _ => out.iter_mut().enumerate().for_each(|(j, o)| *o = src[pos + j * step]),
        }
        w += run;
        if w == dst.len() {
            return;
        }
        // The run ended its row: back to the row's start, then carry.
        pos -= idx[r - 1] * step;
        idx[r - 1] = 0;
        for d in (0..r - 1).rev() {
            idx[d] += 1;
            pos += strides[d];
            if idx[d] < shape[d] {
                break;
            }
            pos -= shape[d] * strides[d];
            idx[d] = 0;
        }
    }
}

/// Runs one step over a chunk; false when the operands' dtypes do not fit
/// it (`FusedElementwise::check` rules that out before the first chunk).
fn eval(op: &FusedOp, args: &[Chunk], out: ChunkMut) -> bool {
    use Chunk as C;
    use ChunkMut as M;
    match (op, args, out) {
        (FusedOp::Unary { row, params: [p0, p1] }, [C::F32(x)], M::F32(o)) => {
            (row.cpu().f32)(x, o, [p0.0 as f32, p1.0 as f32])
        }
        (FusedOp::Unary { row, params: [p0, p1] }, [C::F64(x)], M::F64(o)) => (row.cpu().f64)(x, o, [p0.0, p1.0]),
        (FusedOp::Binary { row }, [C::F32(a), C::F32(b)], M::F32(o)) => (row.cpu().f32.vv)(a, b, o),
        (FusedOp::Binary { row }, [C::F64(a), C::F64(b)], M::F64(o)) => (row.cpu().f64.vv)(a, b, o),
        (FusedOp::Compare { row }, [C::F32(a), C::F32(b)], M::Bool(o)) => (row.f32.vv)(a, b, o),
        (FusedOp::Compare { row }, [C::F64(a), C::F64(b)], M::Bool(o)) => (row.f64.vv)(a, b, o),
        (FusedOp::Compare { row }, [C::I32(a), C::I32(b)], M::Bool(o)) => (row.i32.vv)(a, b, o),
        (FusedOp::Compare { row }, [C::Bool(a), C::Bool(b)], M::Bool(o)) => (row.bool.vv)(a, b, o),
        (FusedOp::Where, [C::Bool(c), a, b], o) => return select(c, a, b, o),
        (FusedOp::Cast { .. }, [x], o) => cast(x, o),
        (FusedOp::Copy, [x], o) => return copy(x, o),
        _ => return false,
    }
    true
}

/// `o = c ? a : b`, as `elementwise::where_map` computes each element.
fn select(c: &[u8], a: &Chunk, b: &Chunk, out: ChunkMut) -> bool {
    fn pick<T: Copy>(c: &[u8], a: &[T], b: &[T], o: &mut [T]) {
        for (((o, &c), &a), &b) in o.iter_mut().zip(c).zip(a).zip(b) {
            *o = if c != 0 { a } else { b };
        }
    }
    match (a, b, out) {
        (Chunk::F32(a), Chunk::F32(b), ChunkMut::F32(o)) => pick(c, a, b, o),
        (Chunk::F64(a), Chunk::F64(b), ChunkMut::F64(o)) => pick(c, a, b, o),
        (Chunk::F16(a), Chunk::F16(b), ChunkMut::F16(o)) => pick(c, a, b, o),
        (Chunk::I32(a), Chunk::I32(b), ChunkMut::I32(o)) => pick(c, a, b, o),
        (Chunk::Bool(a), Chunk::Bool(b), ChunkMut::Bool(o)) => pick(c, a, b, o),
        _ => return false,
    }
    true
}

fn copy(x: &Chunk, out: ChunkMut) -> bool {
    match (x, out) {
        (Chunk::F32(x), ChunkMut::F32(o)) => o.copy_from_slice(x),
        (Chunk::F64(x), ChunkMut::F64(o)) => o.copy_from_slice(x),
        (Chunk::F16(x), ChunkMut::F16(o)) => o.copy_from_slice(x),
        (Chunk::I32(x), ChunkMut::I32(o)) => o.copy_from_slice(x),
        (Chunk::Bool(x), ChunkMut::Bool(o)) => o.copy_from_slice(x),
        _ => return false,
    }
    true
}

/// Converts as `elementwise::cast` does: through f64 (`Elem::{to_f64, from_f64}`).
fn cast(x: &Chunk, out: ChunkMut) {
    fn to<T: Elem, U: Elem>(x: &[T], o: &mut [U]) {
        for (o, &v) in o.iter_mut().zip(x) {
            *o = U::from_f64(v.to_f64());
        }
    }
    fn from<T: Elem>(x: &[T], out: ChunkMut) {
        match out {
            ChunkMut::F32(o) => to(x, o),
            ChunkMut::F64(o) => to(x, o),
            ChunkMut::F16(o) => to(x, o),
            ChunkMut::I32(o) => to(x, o),
            ChunkMut::Bool(o) => to(x, o),
        }
    }
    match x {
        Chunk::F32(x) => from(x, out),
        Chunk::F64(x) => from(x, out),
        Chunk::F16(x) => from(x, out),
        Chunk::I32(x) => from(x, out),
        Chunk::Bool(x) => from(x, out),
    }
}

#[cfg(test)]
mod tests {
    use super::gather;
    use crate::backend::cpu::gather_strided;
    use crate::shape::Layout;

    #[test]
    fn chunks_gather_what_the_whole_view_holds() {
        let src: Vec<f64> = (0..200).map(f64::from).collect();
        // A permutation with an offset, a broadcast middle dim, a step-2 inner dim.
        let layouts = [
            Layout { shape: smallvec::smallvec![5, 4, 3], strides: smallvec::smallvec![1, 5, 20], offset: 3 },
            Layout { shape: smallvec::smallvec![4, 7, 6], strides: smallvec::smallvec![40, 0, 2], offset: 1 },
            Layout { shape: smallvec::smallvec![9], strides: smallvec::smallvec![0], offset: 17 },
        ];
        for l in &layouts {
            let whole = gather_strided(&src, l);
            for width in [1, 2, 5, 7, whole.len()] {
                let mut got = Vec::new();
                for start in (0..whole.len()).step_by(width) {
                    let mut dst = vec![-1.0; width.min(whole.len() - start)];
                    gather(&src, &l.shape, &l.strides, l.offset, start, &mut dst);
                    got.extend(dst);
                }
                assert_eq!(got, whole, "{l:?} in chunks of {width}");
            }
        }
    }
}
