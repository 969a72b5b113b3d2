//! The cpu backend's `run`: a `KernelSpec` over views, to the slice kernels.

use super::elementwise as k;
use super::{contiguous, conv, gather_strided, matmul, optim, reduce, scatter_strided, CpuBuffer, Elem, Scratch};
use crate::backend::api::{mismatch, typed_inputs, wrong_entry, Backend};
use crate::backend::{Buffer, Storage, View, ViewMut};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::{IndexCheck, KernelSpec};
use crate::shape::Layout;

/// The cpu backend: ndarray and slice kernels over host buffers.
pub struct Cpu;

impl Backend for Cpu {
    type Buffer = CpuBuffer;
    type Place = ();

    fn run(op: &'static str, spec: &KernelSpec, inputs: &[View], out_shape: &[usize]) -> Result<CpuBuffer> {
        run(op, spec, inputs, out_shape)
    }
    fn run_into(op: &'static str, spec: &KernelSpec, inputs: &[View], outputs: &mut [ViewMut]) -> Result<()> {
        run_into(op, spec, inputs, outputs)
    }
    fn create(op: &'static str, spec: &KernelSpec, _: &(), out_shape: &[usize]) -> Result<CpuBuffer> {
        super::create::create(op, spec, out_shape)
    }
    fn check(check: &IndexCheck, _: &Storage, index: &CpuBuffer, layout: &Layout) -> Result<()> {
        super::create::check(check, index, layout)
    }
    fn download(buffer: &CpuBuffer, layout: &Layout) -> Result<CpuBuffer> {
        Ok(crate::with_cpu_buffer!(buffer, v, T => T::wrap(gather_strided(v, layout))))
    }
    fn upload(_: &(), host: &CpuBuffer, layout: &Layout) -> Result<CpuBuffer> {
        Self::download(host, layout)
    }
}

/// The cpu buffers of `inputs` (see `typed_inputs`).
fn cpu_inputs<'a, const N: usize>(
    op: &'static str,
    spec: &KernelSpec,
    inputs: &[View<'a>],
) -> Result<[(&'a CpuBuffer, &'a Layout); N]> {
    typed_inputs(op, spec, inputs, Buffer::as_cpu)
}

fn cast_to<T: Elem>(v: &[T], l: &Layout, dtype: DType) -> CpuBuffer {
    match dtype {
        DType::F32 => CpuBuffer::F32(k::cast(v, l)),
        DType::F64 => CpuBuffer::F64(k::cast(v, l)),
        DType::F16 => CpuBuffer::F16(k::cast(v, l)),
        DType::I32 => CpuBuffer::I32(k::cast(v, l)),
        DType::Bool => CpuBuffer::Bool(k::cast(v, l)),
    }
}

fn run(op: &'static str, spec: &KernelSpec, inputs: &[View], out_shape: &[usize]) -> Result<CpuBuffer> {
    let float_only = || Error::dtype(op, format!("expected a float tensor, got {}", inputs[0].buffer.dtype()));
    Ok(match spec {
        KernelSpec::Unary { row, params: [p0, p1] } => match cpu_inputs::<1>(op, spec, inputs)? {
            [(CpuBuffer::F32(v), l)] => CpuBuffer::F32(k::unary_map(v, l, row.cpu().f32, [p0.0 as f32, p1.0 as f32])),
            [(CpuBuffer::F64(v), l)] => CpuBuffer::F64(k::unary_map(v, l, row.cpu().f64, [p0.0, p1.0])),
            _ => return Err(mismatch(op, spec)),
        },
        KernelSpec::Binary { row } => match cpu_inputs::<2>(op, spec, inputs)? {
            [(CpuBuffer::F32(x), la), (CpuBuffer::F32(y), lb)] => {
                CpuBuffer::F32(k::binary_map(x, la, y, lb, out_shape, row.cpu().f32))
            }
            [(CpuBuffer::F64(x), la), (CpuBuffer::F64(y), lb)] => {
                CpuBuffer::F64(k::binary_map(x, la, y, lb, out_shape, row.cpu().f64))
            }
            _ => return Err(mismatch(op, spec)),
        },
        KernelSpec::Compare { row } => CpuBuffer::Bool(match cpu_inputs::<2>(op, spec, inputs)? {
            [(CpuBuffer::F32(x), la), (CpuBuffer::F32(y), lb)] => k::binary_map(x, la, y, lb, out_shape, row.f32),
            [(CpuBuffer::F64(x), la), (CpuBuffer::F64(y), lb)] => k::binary_map(x, la, y, lb, out_shape, row.f64),
            [(CpuBuffer::I32(x), la), (CpuBuffer::I32(y), lb)] => k::binary_map(x, la, y, lb, out_shape, row.i32),
            [(CpuBuffer::Bool(x), la), (CpuBuffer::Bool(y), lb)] => k::binary_map(x, la, y, lb, out_shape, row.bool),
            _ => return Err(mismatch(op, spec)),
        }),
        KernelSpec::Where => {
            let [(c, lc), (a, la), (b, lb)] = cpu_inputs::<3>(op, spec, inputs)?;
            let CpuBuffer::Bool(c) = c else { return Err(mismatch(op, spec)) };
            match (a, b) {
                (CpuBuffer::F32(x), CpuBuffer::F32(y)) => CpuBuffer::F32(k::where_map(c, lc, x, la, y, lb, out_shape)),
                (CpuBuffer::F64(x), CpuBuffer::F64(y)) => CpuBuffer::F64(k::where_map(c, lc, x, la, y, lb, out_shape)),
                (CpuBuffer::I32(x), CpuBuffer::I32(y)) => CpuBuffer::I32(k::where_map(c, lc, x, la, y, lb, out_shape)),
                (CpuBuffer::Bool(x), CpuBuffer::Bool(y)) => {
                    CpuBuffer::Bool(k::where_map(c, lc, x, la, y, lb, out_shape))
                }
                _ => return Err(mismatch(op, spec)),
            }
        }
        KernelSpec::Cast { to } => {
            let [(b, l)] = cpu_inputs::<1>(op, spec, inputs)?;
            crate::with_cpu_buffer!(b, v, T => cast_to(v, l, *to))
        }
        KernelSpec::Copy => {
            let [(b, l)] = cpu_inputs::<1>(op, spec, inputs)?;
            crate::with_cpu_buffer!(b, v, T => T::wrap(gather_strided(v, l)))
        }
        KernelSpec::Reduce { kind, axes } => match cpu_inputs::<1>(op, spec, inputs)? {
            [(CpuBuffer::F32(v), l)] => CpuBuffer::F32(reduce::reduce(v, l, axes, *kind)),
            [(CpuBuffer::F64(v), l)] => CpuBuffer::F64(reduce::reduce(v, l, axes, *kind)),
            _ => return Err(float_only()),
        },
        KernelSpec::ArgReduce { axis, max } => match cpu_inputs::<1>(op, spec, inputs)? {
            [(CpuBuffer::F32(v), l)] => CpuBuffer::I32(reduce::arg_reduce(v, l, *axis, *max)),
            [(CpuBuffer::F64(v), l)] => CpuBuffer::I32(reduce::arg_reduce(v, l, *axis, *max)),
            _ => return Err(float_only()),
        },
        KernelSpec::Scan { axis, kind, reverse } => match cpu_inputs::<1>(op, spec, inputs)? {
            [(CpuBuffer::F32(v), l)] => CpuBuffer::F32(super::scan::scan(v, l, *axis, *kind, *reverse)),
            [(CpuBuffer::F64(v), l)] => CpuBuffer::F64(super::scan::scan(v, l, *axis, *kind, *reverse)),
            _ => return Err(float_only()),
        },
        KernelSpec::Argsort { axis, descending } => match cpu_inputs::<1>(op, spec, inputs)? {
            [(CpuBuffer::F32(v), l)] => CpuBuffer::I32(super::scan::argsort(v, l, *axis, *descending)),
            [(CpuBuffer::F64(v), l)] => CpuBuffer::I32(super::scan::argsort(v, l, *axis, *descending)),
            [(CpuBuffer::I32(v), l)] => CpuBuffer::I32(super::scan::argsort(v, l, *axis, *descending)),
            [(b, _)] => return Err(Error::dtype(op, format!("expected a float or int32 tensor, got {}", b.dtype()))),
        },
        KernelSpec::Matmul { batch } => match cpu_inputs::<2>(op, spec, inputs)? {
            [(CpuBuffer::F32(x), la), (CpuBuffer::F32(y), lb)] => CpuBuffer::F32(matmul::matmul(x, la, y, lb, batch)),
            [(CpuBuffer::F64(x), la), (CpuBuffer::F64(y), lb)] => CpuBuffer::F64(matmul::matmul(x, la, y, lb, batch)),
            [(a, _), (b, _)] => {
                return Err(Error::dtype(op, format!("unsupported dtypes {} and {}", a.dtype(), b.dtype())))
            }
        },
        KernelSpec::Unfold(g) => match cpu_inputs::<1>(op, spec, inputs)? {
            [(CpuBuffer::F32(v), l)] => CpuBuffer::F32(conv::unfold(&contiguous(v, l), g)),
            [(CpuBuffer::F64(v), l)] => CpuBuffer::F64(conv::unfold(&contiguous(v, l), g)),
            _ => return Err(float_only()),
        },
        KernelSpec::Fold(g) => match cpu_inputs::<1>(op, spec, inputs)? {
            [(CpuBuffer::F32(v), l)] => CpuBuffer::F32(conv::fold(&contiguous(v, l), g)),
            [(CpuBuffer::F64(v), l)] => CpuBuffer::F64(conv::fold(&contiguous(v, l), g)),
            _ => return Err(float_only()),
        },
        // The cpu has no implicit GEMM: the columns, then the product.
        KernelSpec::ConvGemm(g) => match cpu_inputs::<2>(op, spec, inputs)? {
            [(CpuBuffer::F32(w), lw), (CpuBuffer::F32(x), lx)] => {
                CpuBuffer::F32(conv_gemm(w, lw, &Scratch::new(conv::unfold(&contiguous(x, lx), g)), g))
            }
            [(CpuBuffer::F64(w), lw), (CpuBuffer::F64(x), lx)] => {
                CpuBuffer::F64(conv_gemm(w, lw, &Scratch::new(conv::unfold(&contiguous(x, lx), g)), g))
            }
            [(a, _), (b, _)] => {
                return Err(Error::dtype(op, format!("unsupported dtypes {} and {}", a.dtype(), b.dtype())))
            }
        },
        KernelSpec::ConvWeightGemm(g) => match cpu_inputs::<2>(op, spec, inputs)? {
            [(CpuBuffer::F32(gy), lg), (CpuBuffer::F32(x), lx)] => {
                CpuBuffer::F32(conv_weight_gemm(gy, lg, &Scratch::new(conv::unfold(&contiguous(x, lx), g)), g))
            }
            [(CpuBuffer::F64(gy), lg), (CpuBuffer::F64(x), lx)] => {
                CpuBuffer::F64(conv_weight_gemm(gy, lg, &Scratch::new(conv::unfold(&contiguous(x, lx), g)), g))
            }
            [(a, _), (b, _)] => {
                return Err(Error::dtype(op, format!("unsupported dtypes {} and {}", a.dtype(), b.dtype())))
            }
        },
        KernelSpec::WindowArgmax(g) => match cpu_inputs::<1>(op, spec, inputs)? {
            [(CpuBuffer::F32(v), l)] => CpuBuffer::I32(conv::window_argmax(&contiguous(v, l), g)),
            [(CpuBuffer::F64(v), l)] => CpuBuffer::I32(conv::window_argmax(&contiguous(v, l), g)),
            _ => return Err(float_only()),
        },
        KernelSpec::IndexSelect { .. }
        | KernelSpec::Gather { .. }
        | KernelSpec::IndexAdd { .. }
        | KernelSpec::ScatterAdd { .. } => super::run_index::run(op, spec, inputs)?,
        KernelSpec::Fused(f) => super::fused::run(op, f, inputs, out_shape)?,
        KernelSpec::Epilogue(e) => {
            // The head's kernel, then the tail over its result while it is in
            // cache: each is eager's own kernel, so the bits are eager's.
            let (head_in, extras) = inputs.split_at(e.head.arity());
            let dtypes: Vec<DType> = extras.iter().map(|v| v.buffer.dtype()).collect();
            e.check(head_in[0].buffer.dtype(), &dtypes)
                .map_err(|m| Error::dtype(op, format!("internal: {} {m}", e.name())))?;
            let value = crate::backend::new_storage(Buffer::Cpu(run(op, &e.head, head_in, out_shape)?));
            let guard = value.read();
            let whole = Layout::contiguous(out_shape);
            let mut views = vec![View::new(&guard, &whole)];
            views.extend_from_slice(extras);
            super::fused::run(op, &e.tail, &views, out_shape)?
        }
        KernelSpec::Custom { kernel, scalars } => super::custom::run(op, spec, kernel, scalars, inputs, out_shape)?,
        KernelSpec::Fill { .. }
        | KernelSpec::Sequence { .. }
        | KernelSpec::Random { .. }
        | KernelSpec::IndexCheck(_)
        | KernelSpec::CopyInto
        | KernelSpec::Adam { .. } => return Err(wrong_entry(op, spec)),
    })
}

/// The cpu buffer an in-place kernel writes, or an error if it lives elsewhere.
fn cpu_out<'v>(op: &'static str, spec: &KernelSpec, o: &'v mut ViewMut<'_>) -> Result<(&'v mut CpuBuffer, &'v Layout)> {
    let layout = o.layout;
    #[allow(irrefutable_let_patterns)] // without the `gpu` feature
    let Buffer::Cpu(b) = &mut *o.buffer
    else {
        return Err(mismatch(op, spec));
    };
    Ok((b, layout))
}

fn run_into(op: &'static str, spec: &KernelSpec, inputs: &[View], outputs: &mut [ViewMut]) -> Result<()> {
    match spec {
        KernelSpec::CopyInto => {
            // The source is contiguous here (dispatch copies a strided one first).
            let [(s, ls)] = cpu_inputs::<1>(op, spec, inputs)?;
            let [out] = outputs else { return Err(mismatch(op, spec)) };
            let (d, ld) = cpu_out(op, spec, out)?;
            let (off, n) = (ls.offset, ls.numel());
            match (d, s) {
                (CpuBuffer::F32(d), CpuBuffer::F32(s)) => scatter_strided(d, ld, &s[off..off + n]),
                (CpuBuffer::F64(d), CpuBuffer::F64(s)) => scatter_strided(d, ld, &s[off..off + n]),
                (CpuBuffer::F16(d), CpuBuffer::F16(s)) => scatter_strided(d, ld, &s[off..off + n]),
                (CpuBuffer::I32(d), CpuBuffer::I32(s)) => scatter_strided(d, ld, &s[off..off + n]),
                (CpuBuffer::Bool(d), CpuBuffer::Bool(s)) => scatter_strided(d, ld, &s[off..off + n]),
                _ => return Err(mismatch(op, spec)),
            }
        }
        KernelSpec::Adam { hyper } => {
            let [(g, lg)] = cpu_inputs::<1>(op, spec, inputs)?;
            let [p, m, v] = outputs else { return Err(mismatch(op, spec)) };
            let ((p, _), (m, _), (v, _)) = (cpu_out(op, spec, p)?, cpu_out(op, spec, m)?, cpu_out(op, spec, v)?);
            let h = hyper.map(|s| s.0);
            let n = lg.numel();
            match (g, p, m, v) {
                (CpuBuffer::F32(g), CpuBuffer::F32(p), CpuBuffer::F32(m), CpuBuffer::F32(v)) => {
                    optim::adam(&g[..n], &mut p[..n], &mut m[..n], &mut v[..n], h)
                }
                (CpuBuffer::F64(g), CpuBuffer::F64(p), CpuBuffer::F64(m), CpuBuffer::F64(v)) => {
                    optim::adam(&g[..n], &mut p[..n], &mut m[..n], &mut v[..n], h)
                }
                (g, ..) => {
                    return Err(Error::dtype(op, format!("unsupported dtype {} for the fused update", g.dtype())))
                }
            }
        }
        _ => return Err(wrong_entry(op, spec)),
    }
    Ok(())
}

/// `w [o, k]` (any strides) times each image's columns `cols [n, k, l]`
/// (contiguous): the weight broadcast over the batch, as `conv2d` multiplies.
fn conv_gemm<T: matmul::Gemm>(w: &[T], lw: &Layout, cols: &[T], g: &crate::kernel::Window2d) -> Vec<T> {
    let (o, k) = (lw.shape[0], lw.shape[1]);
    let la = Layout {
        shape: [1, o, k].as_slice().into(),
        strides: [0, lw.strides[0], lw.strides[1]].as_slice().into(),
        offset: lw.offset,
    };
    matmul::matmul(w, &la, cols, &Layout::contiguous(&[g.n, k, g.windows()]), &[g.n])
}

/// Each image's `gy [n, o, l]` (any strides) times its columns transposed
/// (`cols [n, k, l]`, contiguous, read as `[n, l, k]`): `[n, o, k]`.
fn conv_weight_gemm<T: matmul::Gemm>(gy: &[T], lg: &Layout, cols: &[T], g: &crate::kernel::Window2d) -> Vec<T> {
    let (k, l) = (g.col_rows(), g.windows());
    let lt = Layout { shape: [g.n, l, k].as_slice().into(), strides: [k * l, 1, l].as_slice().into(), offset: 0 };
    matmul::matmul(gy, lg, cols, &lt, &[g.n])
}
