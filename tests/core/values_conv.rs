//! Values of conv2d, unfold2d/fold2d and the pools against hand-computed
//! cases and naive direct loops, plus the error paths (the gradients are
//! checked by the generated gradcheck).

use crate::common::{expect_err, Kind};
use skiff::random::Generator;
use skiff::{DType, Tensor};

type Shape4 = [usize; 4];
type Pair = [usize; 2];

fn rand_vec(n: usize, g: &mut Generator) -> Vec<f64> {
    (0..n).map(|_| 2.0 * g.uniform() - 1.0).collect()
}

fn t(v: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(v, shape).unwrap()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{what}: element {i}: got {a}, want {b}");
    }
}

/// One spatial convolution setting.
#[derive(Clone, Copy, Debug)]
struct Conv {
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
}

/// Direct cross-correlation with explicit bounds tests: [n, c, h, w] x [o, c/g, kh, kw] (+ bias).
fn naive_conv(
    x: &[f64],
    xs: [usize; 4],
    w: &[f64],
    ws: [usize; 4],
    bias: Option<&[f64]>,
    p: Conv,
) -> (Vec<f64>, [usize; 4]) {
    let [n, c, h, wd] = xs;
    let [o, cg, kh, kw] = ws;
    let out =
        |size: usize, k: usize, i: usize| (size + 2 * p.padding[i] - p.dilation[i] * (k - 1) - 1) / p.stride[i] + 1;
    let (oh, ow) = (out(h, kh, 0), out(wd, kw, 1));
    let og = o / p.groups;
    let mut y = vec![0.0; n * o * oh * ow];
    for b in 0..n {
        for oc in 0..o {
            let grp = oc / og;
            for i in 0..oh {
                for j in 0..ow {
                    let mut s = bias.map_or(0.0, |bv| bv[oc]);
                    for ci in 0..cg {
                        let ch = grp * cg + ci;
                        for ki in 0..kh {
                            for kj in 0..kw {
                                let r = (i * p.stride[0] + ki * p.dilation[0]) as isize - p.padding[0] as isize;
                                let q = (j * p.stride[1] + kj * p.dilation[1]) as isize - p.padding[1] as isize;
                                if r < 0 || q < 0 || r >= h as isize || q >= wd as isize {
                                    continue;
                                }
                                let xv = x[((b * c + ch) * h + r as usize) * wd + q as usize];
                                s += xv * w[((oc * cg + ci) * kh + ki) * kw + kj];
                            }
                        }
                    }
                    y[((b * o + oc) * oh + i) * ow + j] = s;
                }
            }
        }
    }
    (y, [n, o, oh, ow])
}

#[test]
fn conv2d_hand_computed() {
    let x = t((1..=9).map(f64::from).collect(), &[1, 1, 3, 3]);
    let w = t(vec![1.0, 2.0, 3.0, 4.0], &[1, 1, 2, 2]);
    let y = x.conv2d(&w, None, [1, 1], [0, 0], [1, 1], 1).unwrap();
    assert_eq!(y.shape(), &[1, 1, 2, 2]);
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![37.0, 47.0, 67.0, 77.0]);
    // Stride 2, padding 1: the corner windows see one, two or four pixels.
    let b = t(vec![0.5], &[1]);
    let y = x.conv2d(&w, Some(&b), [2, 2], [1, 1], [1, 1], 1).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![4.5, 18.5, 36.5, 77.5]);
}

#[test]
fn conv2d_matches_direct_convolution() {
    let mut g = Generator::new(42);
    let c = |stride, padding, dilation, groups| Conv { stride, padding, dilation, groups };
    let settings = [
        ([2, 3, 6, 5], [4, 3, 3, 3], c([1, 1], [0, 0], [1, 1], 1), true),
        ([2, 3, 7, 7], [2, 3, 3, 3], c([2, 2], [1, 1], [1, 1], 1), false),
        ([1, 2, 7, 6], [3, 2, 3, 2], c([1, 2], [2, 1], [2, 2], 1), true),
        ([2, 4, 5, 5], [6, 2, 3, 3], c([1, 1], [1, 1], [1, 1], 2), true),
        ([2, 6, 6, 6], [3, 2, 2, 2], c([2, 1], [0, 1], [1, 2], 3), false),
        ([1, 4, 5, 5], [4, 1, 3, 3], c([1, 1], [1, 1], [1, 1], 4), true), // depthwise
        ([3, 2, 4, 4], [5, 2, 1, 1], c([1, 1], [0, 0], [1, 1], 1), false), // pointwise
        ([1, 1, 3, 3], [1, 1, 3, 3], c([3, 3], [2, 2], [1, 1], 1), true), // mostly padding
    ];
    for (xs, ws, p, with_bias) in settings {
        let xv = rand_vec(xs.iter().product(), &mut g);
        let wv = rand_vec(ws.iter().product(), &mut g);
        let bv = rand_vec(ws[0], &mut g);
        let bias = with_bias.then(|| t(bv.clone(), &[ws[0]]));
        let (want, shape) = naive_conv(&xv, xs, &wv, ws, with_bias.then_some(&bv[..]), p);
        for dtype in [DType::F64, DType::F32] {
            let x = t(xv.clone(), &xs).to_dtype(dtype).unwrap();
            let w = t(wv.clone(), &ws).to_dtype(dtype).unwrap();
            let b = bias.as_ref().map(|b| b.to_dtype(dtype).unwrap());
            let y = x.conv2d(&w, b.as_ref(), p.stride, p.padding, p.dilation, p.groups).unwrap();
            assert_eq!(y.shape(), &shape, "{p:?}");
            let tol = if dtype == DType::F64 { 1e-12 } else { 1e-5 };
            assert_close(&y.to_f64_vec().unwrap(), &want, tol, &format!("conv2d {xs:?} * {ws:?} {p:?} {dtype}"));
        }
    }
}

#[test]
fn unfold_matches_pytorch_layout() {
    // One 3x3 channel, 2x2 kernel: rows are the taps (ki, kj), columns the windows.
    let x = t((0..9).map(f64::from).collect(), &[1, 1, 3, 3]);
    let cols = x.unfold2d([2, 2], [1, 1], [0, 0], [1, 1]).unwrap();
    assert_eq!(cols.shape(), &[1, 4, 4]);
    #[rustfmt::skip]
    let want = vec![
        0., 1., 3., 4.,
        1., 2., 4., 5.,
        3., 4., 6., 7.,
        4., 5., 7., 8.,
    ];
    assert_eq!(cols.to_vec::<f64>().unwrap(), want);
    // Padding 1, stride 2: windows at (-1,-1), (-1,1), (1,-1), (1,1); padding reads zero.
    let cols = x.unfold2d([2, 2], [2, 2], [1, 1], [1, 1]).unwrap();
    #[rustfmt::skip]
    let want = vec![
        0., 0., 0., 4.,
        0., 0., 3., 5.,
        0., 1., 0., 7.,
        0., 2., 6., 8.,
    ];
    assert_eq!(cols.to_vec::<f64>().unwrap(), want);
}

#[test]
fn fold_is_the_adjoint_of_unfold() {
    let mut g = Generator::new(7);
    // (input shape, kernel, stride, padding, dilation)
    let settings: [(Shape4, Pair, Pair, Pair, Pair); 5] = [
        ([2, 3, 5, 5], [3, 3], [1, 1], [0, 0], [1, 1]),
        ([1, 2, 7, 6], [2, 3], [2, 2], [1, 1], [1, 1]),
        ([2, 1, 8, 7], [3, 2], [3, 1], [2, 0], [2, 3]),
        ([1, 2, 4, 4], [1, 1], [2, 2], [0, 0], [1, 1]),
        ([1, 1, 5, 5], [2, 2], [4, 4], [1, 1], [1, 1]),
    ];
    for (xs, k, s, p, d) in settings {
        let x = t(rand_vec(xs.iter().product(), &mut g), &xs);
        let ux = x.unfold2d(k, s, p, d).unwrap();
        let y = t(rand_vec(ux.numel(), &mut g), ux.shape());
        let fy = y.fold2d([xs[2], xs[3]], k, s, p, d).unwrap();
        assert_eq!(fy.shape(), &xs);
        let lhs = fy.mul(&x).unwrap().sum_all().unwrap().item().unwrap();
        let rhs = y.mul(&ux).unwrap().sum_all().unwrap().item().unwrap();
        assert!(
            (lhs - rhs).abs() < 1e-10,
            "{xs:?} k{k:?} s{s:?} p{p:?} d{d:?}: <fold y, x> = {lhs}, <y, unfold x> = {rhs}"
        );
    }
}

/// Direct pooling: max treats padding as -inf, average divides by the full window.
fn naive_pool(x: &[f64], xs: [usize; 4], k: [usize; 2], s: [usize; 2], p: [usize; 2], max: bool) -> Vec<f64> {
    let [n, c, h, w] = xs;
    let (oh, ow) = ((h + 2 * p[0] - k[0]) / s[0] + 1, (w + 2 * p[1] - k[1]) / s[1] + 1);
    let mut y = Vec::new();
    for plane in 0..n * c {
        for i in 0..oh {
            for j in 0..ow {
                let mut acc = if max { f64::NEG_INFINITY } else { 0.0 };
                for ki in 0..k[0] {
                    for kj in 0..k[1] {
                        let r = (i * s[0] + ki) as isize - p[0] as isize;
                        let q = (j * s[1] + kj) as isize - p[1] as isize;
                        if r < 0 || q < 0 || r >= h as isize || q >= w as isize {
                            continue;
                        }
                        let v = x[(plane * h + r as usize) * w + q as usize];
                        acc = if max { acc.max(v) } else { acc + v };
                    }
                }
                y.push(if max { acc } else { acc / (k[0] * k[1]) as f64 });
            }
        }
    }
    y
}

#[test]
fn pools_match_direct_loops() {
    let mut g = Generator::new(3);
    // (input shape, kernel, stride, padding)
    let settings: [(Shape4, Pair, Pair, Pair); 5] = [
        ([2, 3, 6, 6], [2, 2], [2, 2], [0, 0]),
        ([1, 2, 5, 5], [3, 3], [2, 2], [1, 1]),
        ([2, 1, 7, 5], [3, 2], [1, 2], [1, 1]),
        ([1, 2, 5, 4], [3, 3], [1, 1], [0, 1]),
        ([1, 1, 4, 4], [4, 4], [1, 1], [2, 2]),
    ];
    for (xs, k, s, p) in settings {
        let xv = rand_vec(xs.iter().product(), &mut g);
        let x = t(xv.clone(), &xs);
        let mx = x.max_pool2d(k, s, p).unwrap();
        assert_close(
            &mx.to_f64_vec().unwrap(),
            &naive_pool(&xv, xs, k, s, p, true),
            1e-12,
            &format!("max_pool2d {xs:?} {k:?} {s:?} {p:?}"),
        );
        let av = x.avg_pool2d(k, s, p).unwrap();
        assert_close(
            &av.to_f64_vec().unwrap(),
            &naive_pool(&xv, xs, k, s, p, false),
            1e-12,
            &format!("avg_pool2d {xs:?} {k:?} {s:?} {p:?}"),
        );
        assert_eq!(mx.shape(), av.shape());
    }
}

#[test]
fn max_pool_padding_never_wins() {
    // All-negative input: zero padding would show up as 0 in the corners.
    let x = t((1..=9).map(|v| -f64::from(v)).collect(), &[1, 1, 3, 3]);
    let y = x.max_pool2d([2, 2], [2, 2], [1, 1]).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![-1.0, -2.0, -4.0, -5.0]);
    // avg_pool2d counts the padding toward the divisor (count_include_pad).
    let y = x.avg_pool2d([2, 2], [2, 2], [1, 1]).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![-0.25, -1.25, -2.75, -7.0]);
}

#[test]
fn pool_gradient_routes_to_the_max() {
    let x = t(vec![1.0, 5.0, 2.0, 3.0, 0.0, 4.0, 8.0, 6.0, 7.0], &[1, 1, 3, 3]).requires_grad_(true).unwrap();
    x.max_pool2d([2, 2], [1, 1], [0, 0]).unwrap().sum_all().unwrap().backward().unwrap();
    // Windows' maxima: 5, 5, 8, 7 (5 wins two windows).
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0]);
}

#[test]
fn max_pool_indices_and_ties() {
    let x = t(vec![1.0, 5.0, 2.0, 3.0, 0.0, 4.0, 8.0, 6.0, 7.0], &[1, 1, 3, 3]);
    let idx = x.max_pool2d_indices([2, 2], [1, 1], [0, 0]).unwrap();
    assert_eq!((idx.dtype(), idx.shape()), (DType::I32, &[1usize, 1, 2, 2][..]));
    assert_eq!(idx.to_vec::<i32>().unwrap(), vec![1, 1, 6, 8]);
    // Ties: the first maximum of the window takes the whole gradient (as PyTorch).
    let z = Tensor::zeros(&[1, 1, 2, 2], DType::F64).unwrap().requires_grad_(true).unwrap();
    z.max_pool2d([2, 2], [2, 2], [0, 0]).unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(z.grad().unwrap().to_vec::<f64>().unwrap(), vec![1.0, 0.0, 0.0, 0.0]);
    // NaN propagates, as in PyTorch.
    let n = t(vec![1.0, f64::NAN, 3.0, 0.0], &[1, 1, 2, 2]);
    assert!(n.max_pool2d([2, 2], [1, 1], [0, 0]).unwrap().item().unwrap().is_nan());
}

#[test]
fn conv2d_errors_name_op_and_shapes() {
    let x = Tensor::zeros(&[2, 3, 5, 5], DType::F32).unwrap();
    let w = Tensor::zeros(&[4, 3, 3, 3], DType::F32).unwrap();
    let conv = |x: &Tensor, w: &Tensor, b: Option<&Tensor>, stride, dilation, groups| {
        x.conv2d(w, b, stride, [0, 0], dilation, groups)
    };
    // Channel mismatch.
    let w2 = Tensor::zeros(&[4, 2, 3, 3], DType::F32).unwrap();
    expect_err(
        conv(&x, &w2, None, [1, 1], [1, 1], 1),
        Kind::Shape,
        "conv2d",
        &["weight [4, 2, 3, 3] expects 2 input channels (2 per group x 1 groups), input [2, 3, 5, 5] has 3"],
    );
    // Groups that do not divide the channels, and zero groups.
    let channels = "both the input channels (3, input [2, 3, 5, 5]) and the output channels (4, weight [4, 3, 3, 3])";
    expect_err(conv(&x, &w, None, [1, 1], [1, 1], 2), Kind::Value, "conv2d", &["groups 2 must divide", channels]);
    expect_err(conv(&x, &w, None, [1, 1], [1, 1], 0), Kind::Value, "conv2d", &["groups 0 must divide", channels]);
    let x4 = Tensor::zeros(&[2, 4, 5, 5], DType::F32).unwrap();
    let w3 = Tensor::zeros(&[3, 2, 3, 3], DType::F32).unwrap();
    expect_err(
        conv(&x4, &w3, None, [1, 1], [1, 1], 2),
        Kind::Value,
        "conv2d",
        &["groups 2 must divide", "input channels (4, input [2, 4, 5, 5])", "output channels (3, weight [3, 2, 3, 3])"],
    );
    // Kernel larger than the padded input.
    let small = Tensor::zeros(&[1, 3, 2, 2], DType::F32).unwrap();
    expect_err(
        conv(&small, &w, None, [1, 1], [1, 1], 1),
        Kind::Shape,
        "conv2d",
        &["kernel [3, 3] (dilation [1, 1]) is larger than the padded input: input shape [1, 3, 2, 2], padding [0, 0]"],
    );
    assert!(small.conv2d(&w, None, [1, 1], [1, 1], [1, 1], 1).is_ok(), "padding 1 makes a 3x3 kernel fit a 2x2 input");
    expect_err(
        conv(&x, &w, None, [1, 1], [3, 3], 1),
        Kind::Shape,
        "conv2d",
        &["kernel [3, 3] (dilation [3, 3]) is larger than the padded input: input shape [2, 3, 5, 5]"],
    );
    // Wrong rank of input or weight.
    let x3 = Tensor::zeros(&[3, 5, 5], DType::F32).unwrap();
    let facts = ["expected a 4-D input [N, C, H, W], got shape [3, 5, 5]"];
    expect_err(conv(&x3, &w, None, [1, 1], [1, 1], 1), Kind::Shape, "conv2d", &facts);
    let w_flat = Tensor::zeros(&[4, 27], DType::F32).unwrap();
    let facts = ["expected a 4-D weight [O, C/groups, kh, kw], got shape [4, 27]"];
    expect_err(conv(&x, &w_flat, None, [1, 1], [1, 1], 1), Kind::Shape, "conv2d", &facts);
    // Bias shape, zero stride, dtype mismatch.
    let b = Tensor::zeros(&[3], DType::F32).unwrap();
    expect_err(
        conv(&x, &w, Some(&b), [1, 1], [1, 1], 1),
        Kind::Shape,
        "conv2d",
        &["bias must have shape [4] (one per output channel of weight [4, 3, 3, 3]), got [3]"],
    );
    let facts = ["stride must be at least 1 in both dims, got [0, 1]"];
    expect_err(conv(&x, &w, None, [0, 1], [1, 1], 1), Kind::Value, "conv2d", &facts);
    let w64 = Tensor::zeros(&[4, 3, 3, 3], DType::F64).unwrap();
    let facts = ["dtypes differ: f32 [2, 3, 5, 5] vs f64 [4, 3, 3, 3]"];
    expect_err(conv(&x, &w64, None, [1, 1], [1, 1], 1), Kind::DType, "conv2d", &facts);
    let xi = Tensor::from_vec(vec![0i32; 75], &[1, 3, 5, 5]).unwrap();
    let facts = ["expected a float tensor, got i32 of shape [1, 3, 5, 5]"];
    expect_err(conv(&xi, &w, None, [1, 1], [1, 1], 1), Kind::DType, "conv2d", &facts);
}

#[test]
fn unfold_fold_and_pool_errors() {
    let x = Tensor::zeros(&[1, 2, 4, 4], DType::F32).unwrap();
    let too_large = |kernel: &str| {
        format!("kernel {kernel} (dilation [1, 1]) is larger than the padded input: input shape [1, 2, 4, 4], padding [0, 0]")
    };
    let not_4d = |shape: &str| format!("expected a 4-D input [N, C, H, W], got shape {shape}");
    expect_err(x.unfold2d([5, 5], [1, 1], [0, 0], [1, 1]), Kind::Shape, "unfold2d", &[&too_large("[5, 5]")]);
    let facts = ["kernel must be at least 1 in both dims, got [0, 2]"];
    expect_err(x.unfold2d([0, 2], [1, 1], [0, 0], [1, 1]), Kind::Value, "unfold2d", &facts);
    let flat = Tensor::zeros(&[4, 4], DType::F32).unwrap();
    expect_err(flat.unfold2d([2, 2], [1, 1], [0, 0], [1, 1]), Kind::Shape, "unfold2d", &[&not_4d("[4, 4]")]);
    // fold: channel rows not a multiple of kh*kw, window count that does not match.
    let misfit = |shape: &str| {
        format!(
            "input shape {shape} does not fit kernel [2, 2] over output size [4, 4]: expected [N, C*4, 9] (3x3 windows)"
        )
    };
    let cols = Tensor::zeros(&[1, 6, 9], DType::F32).unwrap();
    expect_err(cols.fold2d([4, 4], [2, 2], [1, 1], [0, 0], [1, 1]), Kind::Shape, "fold2d", &[&misfit("[1, 6, 9]")]);
    let cols = Tensor::zeros(&[1, 8, 8], DType::F32).unwrap();
    expect_err(cols.fold2d([4, 4], [2, 2], [1, 1], [0, 0], [1, 1]), Kind::Shape, "fold2d", &[&misfit("[1, 8, 8]")]);
    expect_err(
        cols.reshape(&[64]).unwrap().fold2d([4, 4], [2, 2], [1, 1], [0, 0], [1, 1]),
        Kind::Shape,
        "fold2d",
        &["expected a 3-D input [N, C*kh*kw, L], got shape [64]"],
    );
    // Pools: rank, too much padding, window larger than the input.
    let x3 = Tensor::zeros(&[2, 4, 4], DType::F32).unwrap();
    expect_err(x3.max_pool2d([2, 2], [2, 2], [0, 0]), Kind::Shape, "max_pool2d", &[&not_4d("[2, 4, 4]")]);
    let facts = ["padding [2, 2] must be at most half of kernel [2, 2]"];
    expect_err(x.max_pool2d([2, 2], [2, 2], [2, 2]), Kind::Value, "max_pool2d", &facts);
    expect_err(x.avg_pool2d([5, 5], [1, 1], [0, 0]), Kind::Shape, "avg_pool2d", &[&too_large("[5, 5]")]);
    let facts = ["stride must be at least 1 in both dims, got [1, 0]"];
    expect_err(x.avg_pool2d([2, 2], [1, 0], [0, 0]), Kind::Value, "avg_pool2d", &facts);
}
