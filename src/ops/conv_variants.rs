//! Convolutions composed from the 2-D primitives: `conv1d` (a conv2d over a
//! height of 1) and `conv_transpose2d` (the adjoint of conv2d: a product
//! with the weight, then `fold2d` summing the windows into the output).
//! Both backends, every derivative order and capture come from those ops.

#[cfg(feature = "testing")]
use super::reference::{self as r, Host, Kind};
use super::{composite_op, expect_float, same_device, same_dtype, OpDef};
#[cfg(feature = "testing")]
use super::{Case, Input, Sample};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// 1-D cross-correlation (PyTorch's `F.conv1d`): input `[N, C, L]` (or
    /// unbatched `[C, L]`), weight `[O, C/groups, k]`, bias `[O]`.
    pub fn conv1d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: usize,
        padding: usize,
        dilation: usize,
        groups: usize,
    ) -> Result<Tensor> {
        let op = "conv1d";
        super::as_op(op, || {
            if !(2..=3).contains(&self.ndim()) || weight.ndim() != 3 {
                return Err(Error::shape(
                    op,
                    format!(
                        "expects input [N, C, L] or [C, L] and weight [O, C/groups, k], got {:?} and {:?}",
                        self.shape(),
                        weight.shape()
                    ),
                ));
            }
            let batched = self.ndim() == 3;
            let x = if batched { self.clone() } else { self.unsqueeze(0)? };
            let y = x.unsqueeze(2)?.conv2d(
                &weight.unsqueeze(2)?,
                bias,
                [1, stride],
                [0, padding],
                [1, dilation],
                groups,
            )?;
            let y = y.squeeze(Some(2))?;
            if batched {
                Ok(y)
            } else {
                y.squeeze(Some(0))
            }
        })
    }

    /// Transposed 2-D convolution (PyTorch's `F.conv_transpose2d`, the
    /// gradient of conv2d with respect to its input): input `[N, Cin, H, W]`,
    /// weight `[Cin, Cout/groups, kh, kw]`, bias `[Cout]`; the output is
    /// `(H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1`
    /// high (likewise wide). `output_padding` must be below the stride.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_transpose2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: [usize; 2],
        padding: [usize; 2],
        output_padding: [usize; 2],
        groups: usize,
        dilation: [usize; 2],
    ) -> Result<Tensor> {
        let (x, weight, bias) =
            (crate::amp::lower(self)?, crate::amp::lower(weight)?, bias.map(crate::amp::lower).transpose()?);
        let (x, weight, bias) = (&x, &weight, bias.as_ref());
        let op = "conv_transpose2d";
        super::as_op(op, || {
            let mut all = vec![x, weight];
            all.extend(bias);
            same_device(op, &all)?;
            expect_float(op, x)?;
            same_dtype(op, x, weight)?;
            if x.ndim() != 4 || weight.ndim() != 4 {
                return Err(Error::shape(
                    op,
                    format!(
                        "expects input [N, Cin, H, W] and weight [Cin, Cout/groups, kh, kw], got {:?} and {:?}",
                        x.shape(),
                        weight.shape()
                    ),
                ));
            }
            let (s, ws) = (x.shape(), weight.shape());
            let (n, cin, h, w) = (s[0], s[1], s[2], s[3]);
            let (cout_g, kernel) = (ws[1], [ws[2], ws[3]]);
            if groups == 0 || cin % groups != 0 || ws[0] != cin {
                return Err(Error::shape(
                    op,
                    format!("weight {ws:?} must have the input's {cin} channels first, in {groups} equal groups (input {s:?})"),
                ));
            }
            for (what, v) in [("kernel", kernel), ("stride", stride), ("dilation", dilation)] {
                if v.contains(&0) {
                    return Err(Error::value(op, format!("{what} must be at least 1 in both dims, got {v:?}")));
                }
            }
            if output_padding[0] >= stride[0] || output_padding[1] >= stride[1] {
                return Err(Error::value(
                    op,
                    format!("output_padding {output_padding:?} must be smaller than the stride {stride:?}"),
                ));
            }
            if h == 0 || w == 0 {
                return Err(Error::shape(op, format!("expects non-empty spatial dims, got input {s:?}")));
            }
            let side = |i: usize, size: usize| -> Result<usize> {
                let full = (size - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + output_padding[i] + 1;
                match full.checked_sub(2 * padding[i]) {
                    Some(o) if o > 0 => Ok(o),
                    _ => Err(Error::shape(
                        op,
                        format!("padding {padding:?} leaves no output for input {s:?} with kernel {kernel:?} and stride {stride:?}"),
                    )),
                }
            };
            let out = [side(0, h)?, side(1, w)?];
            let cout = cout_g * groups;
            if let Some(b) = bias {
                if b.shape() != [cout] {
                    return Err(Error::shape(op, format!("bias must have shape [{cout}], got {:?}", b.shape())));
                }
            }
            // Per group: columns = W_g^T x_g, [N, Cout_g * kh * kw, H * W], then
            // fold sums each input position's window into the output.
            let cin_g = cin / groups;
            let rows = cout_g * kernel[0] * kernel[1];
            let mut parts = Vec::with_capacity(groups);
            // One group takes the whole input and weight: a narrow over all of
            // one would cost its backward a zero-filled copy.
            let group = |t: &Tensor, axis: isize, g: usize| {
                if groups == 1 {
                    Ok(t.clone())
                } else {
                    t.narrow(axis, g * cin_g, cin_g)
                }
            };
            for g in 0..groups {
                let xg = group(x, 1, g)?.reshape_dims(&[n, cin_g, h * w])?;
                let wg = group(weight, 0, g)?.reshape_dims(&[cin_g, rows])?;
                let cols = wg.transpose(0, 1)?.matmul(&xg)?;
                parts.push(cols.fold2d(out, kernel, stride, padding, dilation)?);
            }
            let y = if groups == 1 { parts.remove(0) } else { Tensor::concat(&parts, 1)? };
            match bias {
                Some(b) => y.add(&b.reshape_dims(&[cout, 1, 1])?),
                None => Ok(y),
            }
        })
    }
}

/// y[n, o, l] = b[o] + sum over the group's channels c and taps k of
/// x[n, c, l * stride - padding + k * dilation] * w[o, c, k] (zero outside).
#[cfg(feature = "testing")]
fn conv1d_ref(
    x: &Host,
    w: &Host,
    b: Option<&Host>,
    stride: usize,
    padding: usize,
    dilation: usize,
    groups: usize,
) -> Host {
    let (n, len) = (x.shape[0], x.shape[2]);
    let (o, cg, k) = (w.shape[0], w.shape[1], w.shape[2]);
    let out = (len + 2 * padding - dilation * (k - 1) - 1) / stride + 1;
    let og = o / groups;
    Host::build(&[n, o, out], Kind::Float, |i| {
        let (bi, oi, li) = (i[0], i[1], i[2]);
        let g = oi / og;
        let mut acc = b.map_or(0.0, |b| b.data[oi]);
        for ci in 0..cg {
            for ki in 0..k {
                let pos = (li * stride + ki * dilation) as isize - padding as isize;
                if pos >= 0 && (pos as usize) < len {
                    acc += x.at(&[bi, g * cg + ci, pos as usize]) * w.at(&[oi, ci, ki]);
                }
            }
        }
        acc
    })
}

/// Every input element x[n, c, a, b] times w[c, o, ki, kj] added at output
/// (a * stride - padding + ki * dilation, likewise for columns), from the
/// definition of the transposed convolution.
#[cfg(feature = "testing")]
#[allow(clippy::too_many_arguments)]
fn conv_transpose2d_ref(
    x: &Host,
    w: &Host,
    b: Option<&Host>,
    stride: [usize; 2],
    padding: [usize; 2],
    output_padding: [usize; 2],
    groups: usize,
    dilation: [usize; 2],
) -> Host {
    let (n, cin, h, wd) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    let (cout_g, kh, kw) = (w.shape[1], w.shape[2], w.shape[3]);
    let cin_g = cin / groups;
    let oh = (h - 1) * stride[0] + dilation[0] * (kh - 1) + output_padding[0] + 1 - 2 * padding[0];
    let ow = (wd - 1) * stride[1] + dilation[1] * (kw - 1) + output_padding[1] + 1 - 2 * padding[1];
    let cout = cout_g * groups;
    let mut y = vec![0.0; n * cout * oh * ow];
    for i in r::indices(&x.shape) {
        let (bi, ci, a, bb) = (i[0], i[1], i[2], i[3]);
        let g = ci / cin_g;
        for o in 0..cout_g {
            for ki in 0..kh {
                for kj in 0..kw {
                    let row = (a * stride[0] + ki * dilation[0]) as isize - padding[0] as isize;
                    let col = (bb * stride[1] + kj * dilation[1]) as isize - padding[1] as isize;
                    if row >= 0 && col >= 0 && (row as usize) < oh && (col as usize) < ow {
                        let oc = g * cout_g + o;
                        y[((bi * cout + oc) * oh + row as usize) * ow + col as usize] +=
                            x.at(&i) * w.at(&[ci, o, ki, kj]);
                    }
                }
            }
        }
    }
    let y = Host::new(&[n, cout, oh, ow], Kind::Float, y);
    match b {
        Some(b) => Host::build(&y.shape.clone(), Kind::Float, |i| y.at(i) + b.data[i[1]]),
        None => y,
    }
}

#[cfg(feature = "testing")]
fn u(shape: &[usize]) -> Input {
    Input::Uniform(shape.to_vec(), -1.0, 1.0)
}

composite_op!(CONV1D, "conv1d", sig: "conv1d(self, weight: Tensor, bias: Tensor | None = None, *, stride: int = 1, padding: int = 0, dilation: int = 1, groups: int = 1) -> Tensor", doc: "1-D cross-correlation of [N, C, L] with weight [O, C/groups, k].", fwd: |a| a.this()?.conv1d(a.tensor("weight")?, a.opt_tensor("bias")?, a.size("stride")?, a.size("padding")?, a.size("dilation")?, a.size("groups")?), cases: || vec![
    Case::new("conv1d with bias, padded", vec![u(&[2, 3, 7]), u(&[4, 3, 3]), u(&[4])], |x| x[0].conv1d(&x[1], Some(&x[2]), 1, 1, 1, 1))
        .reference(|h| conv1d_ref(&h[0], &h[1], Some(&h[2]), 1, 1, 1, 1)),
    Case::new("conv1d strided, dilated, grouped", vec![u(&[1, 4, 9]), u(&[2, 2, 2])], |x| x[0].conv1d(&x[1], None, 2, 0, 2, 2))
        .also(Sample::Empty, &[&[0, 4, 9], &[2, 2, 2]])
        .reference(|h| conv1d_ref(&h[0], &h[1], None, 2, 0, 2, 2)),
]);
composite_op!(CONV_TRANSPOSE2D, "conv_transpose2d", sig: "conv_transpose2d(self, weight: Tensor, bias: Tensor | None = None, *, stride: int | (int, int) = 1, padding: int | (int, int) = 0, output_padding: int | (int, int) = 0, groups: int = 1, dilation: int | (int, int) = 1) -> Tensor", doc: "Transposed 2-D convolution of [N, Cin, H, W] with weight [Cin, Cout/groups, kh, kw] (the gradient of conv2d).", fwd: |a| a.this()?.conv_transpose2d(a.tensor("weight")?, a.opt_tensor("bias")?, a.pair("stride")?, a.pair("padding")?, a.pair("output_padding")?, a.size("groups")?, a.pair("dilation")?), cases: || vec![
    Case::new("conv_transpose2d stride 2 with bias", vec![u(&[2, 3, 3, 2]), u(&[3, 2, 3, 3]), u(&[2])], |x| x[0].conv_transpose2d(&x[1], Some(&x[2]), [2, 2], [1, 1], [1, 0], 1, [1, 1]))
        .reference(|h| conv_transpose2d_ref(&h[0], &h[1], Some(&h[2]), [2, 2], [1, 1], [1, 0], 1, [1, 1])),
    Case::new("conv_transpose2d grouped, dilated", vec![u(&[1, 4, 2, 3]), u(&[4, 1, 2, 2])], |x| x[0].conv_transpose2d(&x[1], None, [1, 2], [0, 0], [0, 1], 2, [2, 1]))
        .also(Sample::Empty, &[&[0, 4, 2, 3], &[4, 1, 2, 2]])
        .reference(|h| conv_transpose2d_ref(&h[0], &h[1], None, [1, 2], [0, 0], [0, 1], 2, [2, 1])),
]);

pub fn ops() -> Vec<&'static OpDef> {
    vec![&CONV1D, &CONV_TRANSPOSE2D]
}
