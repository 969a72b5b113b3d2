//! Reference sliding windows, softmax, losses and normalisation (see
//! `mod.rs`), each written from PyTorch's definition of the function.

use super::{gather, indices, logsumexp, map, mean, sum, unsqueeze, zip, Host, Kind};

/// Kernel, stride, padding and dilation of a 2-D window op.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
}

impl Window {
    pub fn new(kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2], dilation: [usize; 2]) -> Window {
        Window { kernel, stride, padding, dilation }
    }
    /// Windows along each spatial axis of an `[h, w]` input (floor mode).
    fn grid(&self, hw: [usize; 2]) -> [usize; 2] {
        [0, 1].map(|i| (hw[i] + 2 * self.padding[i] - self.dilation[i] * (self.kernel[i] - 1) - 1) / self.stride[i] + 1)
    }
    /// The input position of tap `t` of window `o` along axis `i`, or None in the padding.
    fn tap(&self, i: usize, o: usize, t: usize, size: usize) -> Option<usize> {
        let p = (o * self.stride[i] + t * self.dilation[i]) as isize - self.padding[i] as isize;
        (p >= 0 && (p as usize) < size).then_some(p as usize)
    }
}

/// im2col: `[N, C, H, W]` -> `[N, C*kh*kw, L]`, rows (channel, ki, kj), columns
/// the windows in row-major order; zero padding.
pub fn unfold2d(x: &Host, w: Window) -> Host {
    let (n, c, h, wd) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    let [oh, ow] = w.grid([h, wd]);
    let [kh, kw] = w.kernel;
    Host::build(&[n, c * kh * kw, oh * ow], Kind::Float, |o| {
        let (ch, ki, kj) = (o[1] / (kh * kw), o[1] / kw % kh, o[1] % kw);
        let (wi, wj) = (o[2] / ow, o[2] % ow);
        match (w.tap(0, wi, ki, h), w.tap(1, wj, kj, wd)) {
            (Some(r), Some(s)) => x.at(&[o[0], ch, r, s]),
            _ => 0.0,
        }
    })
}

/// col2im (the adjoint of unfold2d): sums every column entry into its pixel.
pub fn fold2d(cols: &Host, out: [usize; 2], w: Window) -> Host {
    let [kh, kw] = w.kernel;
    let (n, c) = (cols.shape[0], cols.shape[1] / (kh * kw));
    let [_, ow] = w.grid(out);
    let mut y = Host::new(&[n, c, out[0], out[1]], Kind::Float, vec![0.0; n * c * out[0] * out[1]]);
    for i in indices(&cols.shape) {
        let (ch, ki, kj) = (i[1] / (kh * kw), i[1] / kw % kh, i[1] % kw);
        if let (Some(r), Some(s)) = (w.tap(0, i[2] / ow, ki, out[0]), w.tap(1, i[2] % ow, kj, out[1])) {
            y.data[super::ravel(&[i[0], ch, r, s], &y.shape)] += cols.at(&i);
        }
    }
    y
}

/// Cross-correlation: `out[n, o, i, j] = bias[o] + sum` over the group's input
/// channels and taps of x * weight, with zero padding.
pub fn conv2d(
    x: &Host,
    weight: &Host,
    bias: Option<&Host>,
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
) -> Host {
    let (n, h, wd) = (x.shape[0], x.shape[2], x.shape[3]);
    let (o, cg) = (weight.shape[0], weight.shape[1]);
    let w = Window::new([weight.shape[2], weight.shape[3]], stride, padding, dilation);
    let [oh, ow] = w.grid([h, wd]);
    Host::build(&[n, o, oh, ow], Kind::Float, |i| {
        let g = i[1] / (o / groups);
        let mut acc = bias.map_or(0.0, |b| b.at(&[i[1]]));
        for cin in 0..cg {
            for ki in 0..w.kernel[0] {
                for kj in 0..w.kernel[1] {
                    if let (Some(r), Some(s)) = (w.tap(0, i[2], ki, h), w.tap(1, i[3], kj, wd)) {
                        acc += x.at(&[i[0], g * cg + cin, r, s]) * weight.at(&[i[1], cin, ki, kj]);
                    }
                }
            }
        }
        acc
    })
}

/// The first largest value of each window (padding never wins), with its flat
/// index into the H*W plane: (values, indices).
fn pool_max(x: &Host, w: Window) -> (Host, Host) {
    let (h, wd) = (x.shape[2], x.shape[3]);
    let [oh, ow] = w.grid([h, wd]);
    let shape = [x.shape[0], x.shape[1], oh, ow];
    let best = |o: &[usize]| {
        let mut best: Option<(f64, usize)> = None;
        for ki in 0..w.kernel[0] {
            for kj in 0..w.kernel[1] {
                if let (Some(r), Some(s)) = (w.tap(0, o[2], ki, h), w.tap(1, o[3], kj, wd)) {
                    let v = x.at(&[o[0], o[1], r, s]);
                    if best.is_none_or(|(b, _)| v > b) {
                        best = Some((v, r * wd + s));
                    }
                }
            }
        }
        best.expect("every window covers a real element")
    };
    (Host::build(&shape, Kind::Float, |o| best(o).0), Host::build(&shape, Kind::I32, |o| best(o).1 as f64))
}

pub fn max_pool2d(x: &Host, kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Host {
    pool_max(x, Window::new(kernel, stride, padding, [1, 1])).0
}

pub fn max_pool2d_indices(x: &Host, kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Host {
    pool_max(x, Window::new(kernel, stride, padding, [1, 1])).1
}

/// The mean of each window, padding counted as zeros (count_include_pad).
pub fn avg_pool2d(x: &Host, kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Host {
    let w = Window::new(kernel, stride, padding, [1, 1]);
    let (h, wd) = (x.shape[2], x.shape[3]);
    let [oh, ow] = w.grid([h, wd]);
    Host::build(&[x.shape[0], x.shape[1], oh, ow], Kind::Float, |o| {
        let mut acc = 0.0;
        for ki in 0..kernel[0] {
            for kj in 0..kernel[1] {
                if let (Some(r), Some(s)) = (w.tap(0, o[2], ki, h), w.tap(1, o[3], kj, wd)) {
                    acc += x.at(&[o[0], o[1], r, s]);
                }
            }
        }
        acc / (kernel[0] * kernel[1]) as f64
    })
}

/// exp(x) / sum(exp(x)) along `axis`.
pub fn softmax(x: &Host, ax: isize) -> Host {
    let s = sum(&map(x, f64::exp), &[ax], true);
    zip(&map(x, f64::exp), &s, Kind::Float, |a, b| a / b)
}

/// x - log(sum(exp(x))) along `axis`.
pub fn log_softmax(x: &Host, ax: isize) -> Host {
    zip(x, &logsumexp(x, &[ax], true), Kind::Float, |a, b| a - b)
}

/// How a loss reduces (PyTorch's reduction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    Mean,
    Sum,
    None,
}

fn reduce_loss(l: Host, r: Reduce) -> Host {
    match r {
        Reduce::Mean => mean(&l, &[], false),
        Reduce::Sum => sum(&l, &[], false),
        Reduce::None => l,
    }
}

/// `-log_probs[i, label[i]]` per row.
pub fn nll_loss(log_probs: &Host, labels: &Host, r: Reduce) -> Host {
    let picked = gather(log_probs, 1, &unsqueeze(labels, 1));
    reduce_loss(Host::new(&[labels.numel()], Kind::Float, picked.data.iter().map(|v| -v).collect()), r)
}

/// Cross-entropy with label smoothing `s`: the target puts 1 - s + s/C on
/// the label and s/C on every other class.
pub fn cross_entropy(logits: &Host, labels: &Host, r: Reduce, s: f64) -> Host {
    let lp = log_softmax(logits, 1);
    let c = logits.shape[1];
    let per_row = Host::build(&[logits.shape[0]], Kind::Float, |i| {
        let label = labels.index_at(&[i[0]]);
        -(0..c).map(|j| lp.at(&[i[0], j]) * ((j == label) as u8 as f64 * (1.0 - s) + s / c as f64)).sum::<f64>()
    });
    reduce_loss(per_row, r)
}

pub fn mse_loss(x: &Host, t: &Host, r: Reduce) -> Host {
    reduce_loss(zip(x, t, Kind::Float, |a, b| (a - b) * (a - b)), r)
}

pub fn l1_loss(x: &Host, t: &Host, r: Reduce) -> Host {
    reduce_loss(zip(x, t, Kind::Float, |a, b| (a - b).abs()), r)
}

/// `-[y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))]`, written that way.
pub fn bce_with_logits(x: &Host, y: &Host, r: Reduce) -> Host {
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    reduce_loss(zip(x, y, Kind::Float, |a, b| -(b * sig(a).ln() + (1.0 - b) * (1.0 - sig(a)).ln())), r)
}

/// Normalises over the last `dims` axes to mean 0 and biased variance 1, then
/// the optional affine.
pub fn layer_norm(x: &Host, dims: usize, weight: Option<&Host>, bias: Option<&Host>, eps: f64) -> Host {
    let axes: Vec<isize> = (x.rank() - dims..x.rank()).map(|a| a as isize).collect();
    let m = mean(x, &axes, true);
    let v = super::var(x, &axes, 0.0, true);
    Host::build(&x.shape, Kind::Float, |i| {
        let tail = &i[x.rank() - dims..];
        let y = (x.at(i) - super::broadcast_at(&m, i)) / (super::broadcast_at(&v, i) + eps).sqrt();
        y * weight.map_or(1.0, |w| w.at(tail)) + bias.map_or(0.0, |b| b.at(tail))
    })
}

/// Rows of the `[V, D]` table at each index: shape `indices.shape + [D]`.
pub fn embedding(table: &Host, idx: &Host) -> Host {
    let d = table.shape[1];
    let mut shape = idx.shape.clone();
    shape.push(d);
    Host::build(&shape, Kind::Float, |o| table.at(&[idx.index_at(&o[..o.len() - 1]), o[o.len() - 1]]))
}

/// Dropout's output in training: every element is 0 or x / (1 - p), and
/// (over at least 16 elements) both occur.
pub fn dropout_property(x: &Host, out: &Host, p: f64) -> std::result::Result<(), String> {
    if out.shape != x.shape {
        return Err(format!("dropout: output shape {:?} differs from the input's {:?}", out.shape, x.shape));
    }
    let mut zeros = 0;
    for (i, (&o, &v)) in out.data.iter().zip(&x.data).enumerate() {
        let kept = v / (1.0 - p);
        if o == 0.0 {
            zeros += 1;
        } else if (o - kept).abs() > 1e-6 * (1.0 + kept.abs()) {
            return Err(format!("dropout element {i}: {o} is neither 0 nor x / (1 - p) = {kept}"));
        }
    }
    if x.numel() >= 16 && (zeros == 0 || zeros == x.numel()) {
        return Err(format!("dropout with p = {p} zeroed {zeros} of {} elements", x.numel()));
    }
    Ok(())
}

/// x where positive, else the slope of x's channel (axis 1; one slope for all when it has one).
pub fn prelu(x: &Host, weight: &Host) -> Host {
    Host::build(&x.shape, Kind::Float, |i| {
        let v = x.at(i);
        let c = if weight.numel() == 1 { 0 } else { i[1] };
        if v > 0.0 {
            v
        } else {
            weight.data[c] * v
        }
    })
}
