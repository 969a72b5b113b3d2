//! Index tensors made on the GPU (int32 `zeros`/`full`, casts, argmax results)
//! used as indices and labels. The host holds no copy of their values, and a
//! browser cannot block to read them back, so their range check runs on the
//! device with the op and reports at the next readback or `synchronize()`:
//!
//! - every index op (gather, index_select, index_add, scatter_add, embedding,
//!   cross_entropy and nll_loss labels; scatter, scatter_reduce and index_put) runs on such indices without reading
//!   anything back (readback counter unchanged), forward and backward, and
//!   matches the cpu; an empty batch works too;
//! - out-of-range values give the op's error (naming the op, the value, the
//!   axis size and the shapes) at the next readback, exactly once; the failed
//!   op's result is the documented one (0 where gather read an out-of-range
//!   index, nothing added for a scatter's); the device keeps working;
//! - a device check that reads back clean promotes the values to a trusted
//!   bound, so later ops on them dispatch no check;
//! - the cpu (and host-mirrored GPU indices) still report synchronously.
//!
//! Each test opens a private device so its counters are its own.
#![cfg(feature = "gpu")]

use crate::common;

use crate::common::{check_err, expect_err, Kind};
use skiff::device::GpuDevice;
use skiff::{DType, Device, Reduction, Tensor};

fn floats(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| ((i as u64 * 7919 + seed * 104_729) % 1000) as f32 / 500.0 - 1.0).collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// i32 indices computed on the GPU (a cast of uploaded floats): the host
/// never sees their values.
fn device_ints(vals: &[i32], shape: &[usize], dev: &Device) -> Tensor {
    let f: Vec<f32> = vals.iter().map(|&v| v as f32).collect();
    Tensor::from_vec(f, shape).unwrap().to(dev).unwrap().to_dtype(DType::I32).unwrap()
}

fn host_ints(vals: &[i32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(vals.to_vec(), shape).unwrap()
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{what}: element {i}: {g} vs {w} ({got:?} vs {want:?})");
    }
}

fn readbacks(g: &GpuDevice) -> u64 {
    g.counters().readbacks
}

/// One index op on data, an index and (for the adding ops) a source, with
/// the gradient of sum(out * w) for data and source.
struct IndexCase {
    name: &'static str,
    data: Vec<usize>,
    index: (Vec<i32>, Vec<usize>),
    src: Option<Vec<usize>>,
    run: fn(&Tensor, &Tensor, Option<&Tensor>) -> skiff::Result<Tensor>,
}

fn cases() -> Vec<IndexCase> {
    vec![
        IndexCase {
            name: "gather",
            data: vec![3, 4],
            index: (vec![3, 0, 1, 1, 2, 0], vec![3, 2]),
            src: None,
            run: |x, i, _| x.gather(1, i),
        },
        IndexCase {
            name: "index_select",
            data: vec![5, 3],
            index: (vec![4, 0, 0, 2], vec![4]),
            src: None,
            run: |x, i, _| x.index_select(0, i),
        },
        IndexCase {
            name: "index_add",
            data: vec![4, 3],
            index: (vec![1, 3, 1, 0, 2], vec![5]),
            src: Some(vec![5, 3]),
            run: |x, i, s| x.index_add(0, i, s.unwrap()),
        },
        IndexCase {
            name: "scatter_add",
            data: vec![3, 4],
            index: (vec![2, 0, 1, 0, 1, 1, 0, 2], vec![2, 4]),
            src: Some(vec![2, 4]),
            run: |x, i, s| x.scatter_add(0, i, s.unwrap()),
        },
        IndexCase {
            name: "embedding",
            data: vec![5, 3],
            index: (vec![4, 0, 2, 2, 1, 3], vec![2, 3]),
            src: None,
            run: |w, i, _| w.embedding(i),
        },
    ]
}

/// (output, gradient of data, gradient of src) of `c` on `dev`, given the index there.
fn run_case(c: &IndexCase, dev: &Device, index: &Tensor) -> (Vec<f32>, Vec<f32>, Option<Vec<f32>>) {
    // Fresh tensors each call: on the cpu, `to` returns the same handle.
    let x = floats(&c.data, 1).to(dev).unwrap().requires_grad_(true).unwrap();
    let s = c.src.as_ref().map(|sh| floats(sh, 2).to(dev).unwrap().requires_grad_(true).unwrap());
    let y = (c.run)(&x, index, s.as_ref()).unwrap();
    let w = floats(y.shape(), 3).to(dev).unwrap();
    y.mul(&w).unwrap().sum_all().unwrap().backward().unwrap();
    (f32s(&y), f32s(&x.grad().unwrap()), s.map(|s| f32s(&s.grad().unwrap())))
}

#[test]
fn every_index_op_runs_on_device_made_indices_forward_and_backward_without_reading_them_back() {
    let Some((dev, g)) = common::private_gpu() else { return };
    for c in cases() {
        let (vals, shape) = &c.index;
        let index = device_ints(vals, shape, &dev);
        let x = floats(&c.data, 1).to(&dev).unwrap();
        let s = c.src.as_ref().map(|sh| floats(sh, 2).to(&dev).unwrap());
        let before = readbacks(&g);
        let y = (c.run)(&x, &index, s.as_ref()).unwrap();
        assert_eq!(readbacks(&g), before, "{}: the op read its indices back", c.name);
        drop(y);
        let (y_gpu, gx_gpu, gs_gpu) = run_case(&c, &dev, &index);
        let (y_cpu, gx_cpu, gs_cpu) = run_case(&c, &Device::Cpu, &host_ints(vals, shape));
        assert_close(&y_gpu, &y_cpu, c.name);
        assert_close(&gx_gpu, &gx_cpu, &format!("{} grad of the data", c.name));
        if let (Some(a), Some(b)) = (gs_gpu, gs_cpu) {
            assert_close(&a, &b, &format!("{} grad of the source", c.name));
        }
    }
}

#[test]
fn zeros_full_and_argmax_indices_made_on_the_device_work_as_indices_and_labels() {
    let Some((dev, g)) = common::private_gpu() else { return };
    let logits = floats(&[4, 5], 7);
    let on = |d: &Device, labels: &Tensor| {
        let x = logits.detach().to(d).unwrap().requires_grad_(true).unwrap();
        let loss = x.cross_entropy(labels, Reduction::Mean, 0.1).unwrap();
        loss.backward().unwrap();
        let nll = x.log_softmax(1).unwrap().nll_loss(labels, Reduction::Sum).unwrap();
        (loss.item().unwrap(), nll.item().unwrap(), f32s(&x.grad().unwrap()))
    };
    let labelled = [
        (Tensor::full_on(&[4], 0.0, DType::I32, &dev).unwrap(), vec![0; 4]),
        (Tensor::full_on(&[4], 3.0, DType::I32, &dev).unwrap(), vec![3; 4]),
        (floats(&[4, 5], 9).to(&dev).unwrap().argmax(Some(1), false).unwrap(), {
            floats(&[4, 5], 9).argmax(Some(1), false).unwrap().to_vec::<i32>().unwrap()
        }),
    ];
    for (labels, want) in &labelled {
        let before = readbacks(&g);
        let loss = logits.to(&dev).unwrap().cross_entropy(labels, Reduction::Mean, 0.0).unwrap();
        assert_eq!(readbacks(&g), before, "cross_entropy read labels {want:?} back");
        drop(loss);
        let (l_gpu, n_gpu, g_gpu) = on(&dev, labels);
        let (l_cpu, n_cpu, g_cpu) = on(&Device::Cpu, &host_ints(want, &[4]));
        assert!((l_gpu - l_cpu).abs() < 1e-5 && (n_gpu - n_cpu).abs() < 1e-5, "labels {want:?}");
        assert_close(&g_gpu, &g_cpu, &format!("cross_entropy grad at labels {want:?}"));
    }
    // zeros/full as indices of gather and index_select.
    let x = floats(&[3, 4], 11);
    let zeros = Tensor::full_on(&[3, 2], 0.0, DType::I32, &dev).unwrap();
    let twos = Tensor::full_on(&[5], 2.0, DType::I32, &dev).unwrap();
    assert_eq!(
        f32s(&x.to(&dev).unwrap().gather(1, &zeros).unwrap()),
        f32s(&x.gather(1, &host_ints(&[0; 6], &[3, 2])).unwrap())
    );
    assert_eq!(
        f32s(&x.to(&dev).unwrap().index_select(0, &twos).unwrap()),
        f32s(&x.index_select(0, &host_ints(&[2; 5], &[5])).unwrap())
    );
}

#[test]
fn an_empty_batch_of_device_made_indices_works() {
    let Some((dev, _g)) = common::private_gpu() else { return };
    let none = Tensor::full_on(&[0], 0.0, DType::I32, &dev).unwrap();
    let scores = Tensor::zeros(&[0, 5], DType::F32).unwrap().to(&dev).unwrap().requires_grad_(true).unwrap();
    let loss = scores.cross_entropy(&none, Reduction::Sum, 0.0).unwrap();
    loss.backward().unwrap();
    assert_eq!(loss.item().unwrap(), 0.0);
    assert_eq!(scores.grad().unwrap().shape(), &[0, 5]);
    let x = floats(&[4, 3], 5).to(&dev).unwrap();
    assert_eq!(x.index_select(0, &none).unwrap().shape(), &[0, 3]);
    assert_eq!(x.gather(1, &Tensor::full_on(&[4, 0], 0.0, DType::I32, &dev).unwrap()).unwrap().shape(), &[4, 0]);
    let w = floats(&[5, 2], 6).to(&dev).unwrap();
    assert_eq!(w.embedding(&none).unwrap().to_vec::<f32>().unwrap(), Vec::<f32>::new());
    let added = x.index_add(0, &none, &Tensor::zeros(&[0, 3], DType::F32).unwrap().to(&dev).unwrap()).unwrap();
    assert_eq!(f32s(&added), f32s(&floats(&[4, 3], 5)));
    let idx = Tensor::full_on(&[0, 3], 0.0, DType::I32, &dev).unwrap();
    let scattered = x.scatter_add(0, &idx, &Tensor::zeros(&[0, 3], DType::F32).unwrap().to(&dev).unwrap()).unwrap();
    assert_eq!(f32s(&scattered), f32s(&floats(&[4, 3], 5)));
}

/// Each op with an out-of-range device-made index: the op returns, the next
/// readback is its error (once), the result is the documented one, and the
/// device keeps working.
#[test]
fn out_of_range_device_made_indices_fail_the_next_readback_with_the_op_error() {
    let Some((dev, _g)) = common::private_gpu() else { return };
    let x = floats(&[5, 3], 1);
    let xd = x.to(&dev).unwrap();
    let src = floats(&[4, 3], 2).to(&dev).unwrap();
    let src2 = floats(&[2, 3], 2).to(&dev).unwrap();
    let run = |op: &str, i: &Tensor| match op {
        "gather" => xd.gather(0, i),
        "index_select" => xd.index_select(0, i),
        "index_add" => xd.index_add(0, i, &src),
        "scatter_add" => xd.scatter_add(0, i, &src2),
        "embedding" => xd.embedding(i),
        _ => unreachable!(),
    };
    // (op, index values, index shape, facts its error states)
    let cases = [
        (
            "gather",
            vec![0, 7, 1, 2, 4, 0],
            vec![2, 3],
            vec!["index 7 is out of range for axis 0 of size 5", "input shape [5, 3], index shape [2, 3]"],
        ),
        (
            "index_select",
            vec![1, -2, 4, 9],
            vec![4],
            vec!["index 9 is out of range for axis 0 of size 5", "index shape [4]", "2 index value(s) out of range"],
        ),
        ("index_add", vec![1, 5, 0, 2], vec![4], vec!["index 5 is out of range for axis 0 of size 5"]),
        (
            "scatter_add",
            vec![0, -3, 1, 4, 4, 2],
            vec![2, 3],
            vec!["index -3 is out of range for axis 0 of size 5", "input shape [5, 3], index shape [2, 3]"],
        ),
        (
            "embedding",
            vec![2, 6, 0, 1],
            vec![2, 2],
            vec!["index 6 is out of range for axis 0 of size 5", "input shape [5, 3], index shape [2, 2]"],
        ),
    ];
    for (op, vals, shape, facts) in cases {
        let idx = device_ints(&vals, &shape, &dev);
        let y = run(op, &idx).unwrap_or_else(|e| panic!("{op} must not fail before its readback: {e}"));
        let e = expect_err(y.to_vec::<f32>(), Kind::Value, op, &facts);
        assert!(e.to_string().contains("found on the device"), "{e}");
        // Reported once: the same result reads back now, deterministically.
        let got = f32s(&y);
        let want = documented_result(op, &x, &vals, &shape);
        assert_eq!(got, want, "{op}: the result of the failed call");
        // The device keeps working, the same indices fail again if used again.
        assert_eq!(
            f32s(&floats(&[2], 3).to(&dev).unwrap().mul_scalar(2.0).unwrap()),
            f32s(&floats(&[2], 3).mul_scalar(2.0).unwrap())
        );
        let again = run(op, &idx).unwrap();
        expect_err(again.to_vec::<f32>(), Kind::Value, op, &facts);
    }
}

/// The result the device computes for a call with out-of-range indices: the
/// cpu's result with gather reading 0 and the scatters skipping them.
fn documented_result(op: &str, x: &Tensor, vals: &[i32], shape: &[usize]) -> Vec<f32> {
    let xs = f32s(x);
    let cols = 3;
    let ok = |v: i32| (0..5).contains(&v);
    match op {
        "gather" => {
            (0..vals.len()).map(|p| if ok(vals[p]) { xs[vals[p] as usize * cols + p % cols] } else { 0.0 }).collect()
        }
        "index_select" | "embedding" => vals
            .iter()
            .flat_map(|&v| (0..cols).map(move |c| (v, c)))
            .map(|(v, c)| if ok(v) { xs[v as usize * cols + c] } else { 0.0 })
            .collect(),
        "index_add" => {
            let src = f32s(&floats(&[4, 3], 2));
            let mut out = xs.clone();
            for (k, &v) in vals.iter().enumerate().filter(|(_, &v)| ok(v)) {
                for c in 0..cols {
                    out[v as usize * cols + c] += src[k * cols + c];
                }
            }
            out
        }
        "scatter_add" => {
            let src = f32s(&floats(&[2, 3], 2));
            let mut out = xs.clone();
            for (p, &v) in vals.iter().enumerate().filter(|(_, &v)| ok(v)) {
                out[v as usize * cols + p % shape[1]] += src[p];
            }
            out
        }
        _ => unreachable!(),
    }
}

#[test]
fn out_of_range_device_made_labels_name_the_loss_and_are_reported_once() {
    let Some((dev, g)) = common::private_gpu() else { return };
    let logits = floats(&[3, 4], 5).to(&dev).unwrap().requires_grad_(true).unwrap();
    let labels = device_ints(&[1, 4, 2], &[3], &dev);
    let loss = logits.cross_entropy(&labels, Reduction::None, 0.0).unwrap();
    let facts = ["label 4 is out of range [0, 4) for scores of shape [3, 4]", "found on the device", "1 label(s)"];
    let e = expect_err(loss.to_vec::<f32>(), Kind::Value, "cross_entropy", &facts);
    // The inner gather's check was covered by the loss's own: one error, no second one.
    assert!(!e.to_string().contains("more range check"), "{e}");
    // The row with the bad label reads 0 as its log-probability: its loss is 0.
    let per_row = f32s(&loss);
    let cpu = floats(&[3, 4], 5).cross_entropy(&host_ints(&[1, 0, 2], &[3]), Reduction::None, 0.0).unwrap();
    let cpu = f32s(&cpu);
    assert_close(&[per_row[0], per_row[1], per_row[2]], &[cpu[0], 0.0, cpu[2]], "per-row losses");
    // nll_loss names itself; synchronize() reports natively too.
    let nll = logits.log_softmax(1).unwrap().nll_loss(&labels, Reduction::Mean).unwrap();
    let facts = ["label 4 is out of range [0, 4)"];
    check_err(&g.synchronize().unwrap_err(), Kind::Value, "nll_loss", &facts);
    assert!(g.synchronize().is_ok(), "the error is reported once");
    assert!(nll.item().is_ok(), "the flags were cleared by synchronize");
    // The device keeps working: a loss on good labels trains.
    let good = device_ints(&[1, 3, 2], &[3], &dev);
    let loss = logits.cross_entropy(&good, Reduction::Mean, 0.0).unwrap();
    loss.backward().unwrap();
    assert!(loss.item().unwrap().is_finite());
}

#[test]
fn a_clean_device_check_promotes_the_indices_so_later_ops_skip_it() {
    let Some((dev, g)) = common::private_gpu() else { return };
    let logits = floats(&[6, 5], 3).to(&dev).unwrap();
    let labels = device_ints(&[0, 4, 1, 3, 3, 2], &[6], &dev);
    let step = || {
        let before = g.counters().dispatches;
        let loss = logits.cross_entropy(&labels, Reduction::Mean, 0.0).unwrap();
        let n = g.counters().dispatches - before;
        (loss.item().unwrap(), n)
    };
    let (l1, d1) = step();
    let (l2, d2) = step();
    assert_eq!(l1, l2);
    // The first step checked the labels on the device (one dispatch, which
    // also covered the inner gather's check); it read back clean, so the
    // second step trusts them.
    assert_eq!(d1, d2 + 1, "dispatches per step: first {d1}, second {d2}");
    // A write revokes the trust: the next use checks again.
    labels.copy_(&device_ints(&[0, 1, 1, 3, 3, 2], &[6], &dev)).unwrap();
    let (_, d3) = step();
    assert_eq!(d3, d2 + 1);
}

#[test]
fn the_cpu_and_host_mirrored_gpu_indices_still_fail_at_the_call() {
    let bad = host_ints(&[0, 5], &[2]);
    let x = floats(&[5, 3], 1);
    let facts = ["index 5 is out of range for axis 0 of size 5 (input shape [5, 3], index shape [2])"];
    expect_err(x.index_select(0, &bad), Kind::Value, "index_select", &facts);
    let Some((dev, g)) = common::private_gpu() else { return };
    let before = readbacks(&g);
    expect_err(x.to(&dev).unwrap().index_select(0, &bad.to(&dev).unwrap()), Kind::Value, "index_select", &facts);
    assert_eq!(readbacks(&g), before, "uploaded indices are checked from their host copy");
}

/// one_hot's class indices made on the device: encoded without a readback,
/// and an out-of-range class is the next readback's error, naming one_hot,
/// with that index's row all 0.
#[test]
fn one_hot_of_device_made_indices_checks_them_on_the_device() {
    let Some((dev, g)) = common::private_gpu() else { return };
    let idx = device_ints(&[2, 0, 3, 1], &[2, 2], &dev);
    let before = readbacks(&g);
    let y = idx.one_hot(4).unwrap();
    assert_eq!(readbacks(&g), before, "one_hot read its indices back");
    assert_eq!(y.shape(), &[2, 2, 4]);
    let want: Vec<i32> = [2, 0, 3, 1].iter().flat_map(|&c| (0..4).map(move |k| i32::from(k == c))).collect();
    assert_eq!(y.to_vec::<i32>().unwrap(), want);
    let bad = device_ints(&[1, 5], &[2], &dev);
    let y = bad.one_hot(4).unwrap();
    let e = expect_err(y.to_vec::<i32>(), Kind::Value, "one_hot", &["class index 5", "[0, 4)", "index shape [2]"]);
    assert!(e.to_string().contains("found on the device"), "{e}");
    assert_eq!(y.to_vec::<i32>().unwrap(), vec![0, 1, 0, 0, 0, 0, 0, 0]);
}

/// scatter, scatter_reduce and index_put on device-made indices: no
/// readback during the call, the cpu's values, and an out-of-range index is
/// the next readback's error naming the called op, its writes left out.
#[test]
fn scatters_and_index_put_check_device_made_indices_on_the_device() {
    let Some((dev, g)) = common::private_gpu() else { return };
    let x = floats(&[5, 3], 1);
    let src = floats(&[2, 3], 2);
    let (xd, srcd) = (x.to(&dev).unwrap(), src.to(&dev).unwrap());
    let names = ["scatter", "scatter_reduce", "scatter_reduce"];
    let scatter = |k: usize, x: &Tensor, i: &Tensor, s: &Tensor| match k {
        0 => x.scatter(0, i, s),
        1 => x.scatter_reduce(0, i, s, skiff::ScatterReduce::Amax, true),
        _ => x.scatter_reduce(0, i, s, skiff::ScatterReduce::Prod, false),
    };
    let good = [0, 4, 1, 0, 4, 4];
    // Index 7 at (0, 1): the later (1, 1) aims at row 4 of column 1 anyway,
    // so leaving the bad write out gives the cpu's result for 4 there.
    let (bad, fixed) = ([0, 7, 1, 0, 4, 4], [0, 4, 1, 0, 4, 4]);
    for (k, op) in names.into_iter().enumerate() {
        let before = readbacks(&g);
        let y = scatter(k, &xd, &device_ints(&good, &[2, 3], &dev), &srcd).unwrap();
        assert_eq!(readbacks(&g), before, "{op} read its indices back");
        let want = scatter(k, &x, &host_ints(&good, &[2, 3]), &src).unwrap();
        assert_close(&f32s(&y), &f32s(&want), op);
        let y = scatter(k, &xd, &device_ints(&bad, &[2, 3], &dev), &srcd)
            .unwrap_or_else(|e| panic!("{op} must not fail before its readback: {e}"));
        let e = expect_err(y.to_vec::<f32>(), Kind::Value, op, &["index 7 is out of range for axis 0 of size 5"]);
        assert!(e.to_string().contains("found on the device"), "{e}");
        if op == "scatter" {
            let want = scatter(k, &x, &host_ints(&fixed, &[2, 3]), &src).unwrap();
            assert_close(&f32s(&y), &f32s(&want), "scatter leaves the bad write out");
        }
    }

    let values = floats(&[3], 4);
    let vd = values.to(&dev).unwrap();
    for accumulate in [true, false] {
        let put =
            |i0: &Tensor, i1: &Tensor, x: &Tensor, v: &Tensor| x.index_put(&[i0.clone(), i1.clone()], v, accumulate);
        let (i0, i1) = ([1, 2, 1], [0, 2, 0]);
        let before = readbacks(&g);
        let y = put(&device_ints(&i0, &[3], &dev), &device_ints(&i1, &[3], &dev), &xd, &vd).unwrap();
        assert_eq!(readbacks(&g), before, "index_put read its indices back");
        let want = put(&host_ints(&i0, &[3]), &host_ints(&i1, &[3]), &x, &values).unwrap();
        assert_close(&f32s(&y), &f32s(&want), "index_put on device-made indices");
        // Row 6 is out of range: that write is left out (not aliased into row 2, column 0).
        let y = put(&device_ints(&[1, 6, 2], &[3], &dev), &device_ints(&[0, 0, 2], &[3], &dev), &xd, &vd).unwrap();
        let e =
            expect_err(y.to_vec::<f32>(), Kind::Value, "index_put", &["index 6 is out of range for axis 0 of size 5"]);
        assert!(e.to_string().contains("found on the device"), "{e}");
        let keep = |t: &Tensor, at: &[i64]| {
            t.index_select(0, &host_ints(&at.iter().map(|&a| a as i32).collect::<Vec<_>>(), &[2])).unwrap()
        };
        let want = put(&host_ints(&[1, 2], &[2]), &host_ints(&[0, 2], &[2]), &x, &keep(&values, &[0, 2])).unwrap();
        assert_close(&f32s(&y), &f32s(&want), "index_put leaves the bad write out");
    }
}

/// index_put's negative indices count from the end on a GPU too: wrapped on
/// the device for device-made indices (no readback; -6 past the start of a
/// dim of 5 is the next readback's error, naming the value passed), and on
/// the host for uploaded ones, whose out-of-range values still fail at the call.
#[test]
fn index_put_wraps_negative_indices_made_on_the_device_and_uploaded() {
    let Some((dev, g)) = common::private_gpu() else { return };
    let x = floats(&[5, 3], 1);
    let values = floats(&[3], 4);
    let (xd, vd) = (x.to(&dev).unwrap(), values.to(&dev).unwrap());
    let (i0, i1) = ([-4, 2, -1], [0, -1, -3]);
    let want = x.index_put(&[host_ints(&i0, &[3]), host_ints(&i1, &[3])], &values, true).unwrap();
    let at = |r: usize, c: usize| f32s(&want)[r * 3 + c] - f32s(&x)[r * 3 + c];
    let v = f32s(&values);
    assert_close(&[at(1, 0), at(2, 2), at(4, 0)], &v, "-4 is row 1, -1 row 4 and column 2, -3 column 0");
    let before = readbacks(&g);
    let y = xd.index_put(&[device_ints(&i0, &[3], &dev), device_ints(&i1, &[3], &dev)], &vd, true).unwrap();
    assert_eq!(readbacks(&g), before, "index_put read its indices back");
    assert_close(&f32s(&y), &f32s(&want), "index_put with device-made negative indices");
    let y = xd.index_put(&[host_ints(&i0, &[3]).to(&dev).unwrap(), host_ints(&i1, &[3]).to(&dev).unwrap()], &vd, true);
    assert_close(&f32s(&y.unwrap()), &f32s(&want), "index_put with uploaded negative indices");

    let y = xd.index_put(&[device_ints(&[-6, 0, 1], &[3], &dev)], &floats(&[3, 3], 5).to(&dev).unwrap(), true).unwrap();
    let e = expect_err(y.to_vec::<f32>(), Kind::Value, "index_put", &["index -6 is out of range for axis 0 of size 5"]);
    assert!(e.to_string().contains("found on the device"), "{e}");
    let uploaded = host_ints(&[-6, 0, 1], &[3]).to(&dev).unwrap();
    let facts = ["index -6 is out of range for axis 0 of size 5"];
    expect_err(
        xd.index_put(&[uploaded], &floats(&[3, 3], 5).to(&dev).unwrap(), true),
        Kind::Value,
        "index_put",
        &facts,
    );
}
