//! Forward values of matmul (by hand, batched broadcast vs a loop of 2-D
//! products, 1-D promotion) and of movement ops (views share storage; copies
//! do not).

use skiff::{no_grad, DType, Result, Tensor};

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

fn vals(x: &Tensor) -> Vec<f64> {
    x.to_f64_vec().unwrap()
}

fn range(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::arange(0.0, n as f64, 1.0, DType::F64).unwrap().reshape_dims(shape).unwrap()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "length: got {got:?}, want {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {i}: got {g}, want {w} (all: {got:?} vs {want:?})");
    }
}

#[test]
fn matmul_2x3_by_3x2_by_hand() -> Result<()> {
    let a = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = t(&[7.0, 8.0, 9.0, 10.0, 11.0, 12.0], &[3, 2]);
    let c = a.matmul(&b)?;
    assert_eq!(c.shape(), &[2, 2]);
    assert_eq!(vals(&c), vec![58.0, 64.0, 139.0, 154.0]);
    // f32 too, and with transposed (strided) operands: (B^T A^T) = (AB)^T.
    let c32 = a.to_dtype(DType::F32)?.matmul(&b.to_dtype(DType::F32)?)?;
    assert_eq!(c32.to_vec::<f32>()?, vec![58.0, 64.0, 139.0, 154.0]);
    let ct = b.transpose(0, 1)?.matmul(&a.transpose(0, 1)?)?;
    assert_eq!(vals(&ct), vec![58.0, 139.0, 64.0, 154.0]);
    Ok(())
}

#[test]
fn batched_broadcast_matmul_matches_a_loop_of_2d_products() -> Result<()> {
    let a = range(&[2, 1, 2, 3]).mul_scalar(0.1)?;
    let b = range(&[3, 3, 4]).sub_scalar(10.0)?;
    let c = a.matmul(&b)?;
    assert_eq!(c.shape(), &[2, 3, 2, 4]);
    for i in 0..2 {
        for j in 0..3 {
            let ai = a.narrow(0, i, 1)?.reshape(&[2, 3])?;
            let bj = b.narrow(0, j, 1)?.reshape(&[3, 4])?;
            let want = vals(&ai.matmul(&bj)?);
            let got = vals(&c.narrow(0, i, 1)?.narrow(1, j, 1)?);
            assert_close(&got, &want, 1e-14);
        }
    }
    // A 2-D right operand broadcasts over a batch.
    let x = range(&[4, 2, 3]);
    let w = range(&[3, 5]).mul_scalar(-0.5)?;
    let y = x.matmul(&w)?;
    assert_eq!(y.shape(), &[4, 2, 5]);
    for i in 0..4 {
        let want = vals(&x.narrow(0, i, 1)?.reshape(&[2, 3])?.matmul(&w)?);
        assert_close(&vals(&y.narrow(0, i, 1)?), &want, 1e-14);
    }
    Ok(())
}

#[test]
fn matmul_with_1d_operands() -> Result<()> {
    let m = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let v3 = t(&[1.0, 0.0, -1.0], &[3]);
    let v2 = t(&[1.0, 2.0], &[2]);
    let mv = m.matmul(&v3)?;
    assert_eq!(mv.shape(), &[2]);
    assert_eq!(vals(&mv), vec![-2.0, -2.0]);
    let vm = v2.matmul(&m)?;
    assert_eq!(vm.shape(), &[3]);
    assert_eq!(vals(&vm), vec![9.0, 12.0, 15.0]);
    let dot = v3.matmul(&t(&[4.0, 5.0, 6.0], &[3]))?;
    assert_eq!(dot.shape(), &[] as &[usize]);
    assert_eq!(dot.item()?, -2.0);
    // A batch of matrices times a vector.
    let bv = range(&[2, 2, 3]).matmul(&v3)?;
    assert_eq!(bv.shape(), &[2, 2]);
    assert_eq!(vals(&bv), vec![-2.0, -2.0, -2.0, -2.0]);
    Ok(())
}

#[test]
fn permute_transpose_expand_values() -> Result<()> {
    let x = range(&[2, 3, 4]);
    let p = x.permute(&[2, 0, 1])?;
    assert_eq!(p.shape(), &[4, 2, 3]);
    let (xv, pv) = (vals(&x), vals(&p));
    for k in 0..4 {
        for i in 0..2 {
            for j in 0..3 {
                assert_eq!(pv[k * 6 + i * 3 + j], xv[i * 12 + j * 4 + k]);
            }
        }
    }
    let m = range(&[2, 3]);
    let tr = m.transpose(0, 1)?;
    assert_eq!(tr.shape(), &[3, 2]);
    assert!(!tr.is_contiguous());
    assert_eq!(vals(&tr), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    assert_eq!(vals(&m.transpose(-1, -2)?), vals(&tr));
    let e = t(&[1.0, 2.0, 3.0], &[3, 1]).expand(&[2, 3, 4])?;
    assert_eq!(e.shape(), &[2, 3, 4]);
    let ev = vals(&e);
    assert!(ev[..12].chunks(4).zip([1.0, 2.0, 3.0]).all(|(c, v)| c.iter().all(|&x| x == v)));
    assert_eq!(&ev[..12], &ev[12..]);
    assert_eq!(vals(&t(&[1.0, 2.0], &[2]).expand(&[2, -1])?), vec![1.0, 2.0, 1.0, 2.0]);
    assert_eq!(vals(&t(&[5.0], &[1]).broadcast_to(&[3])?), vec![5.0; 3]);
    Ok(())
}

#[test]
fn slice_narrow_squeeze_flatten() -> Result<()> {
    let r = range(&[10]);
    assert_eq!(vals(&r.slice(0, 1, 8, 3)?), vec![1.0, 4.0, 7.0]);
    assert_eq!(vals(&r.slice(0, -4, -1, 1)?), vec![6.0, 7.0, 8.0]);
    assert_eq!(vals(&r.slice(0, 7, 100, 2)?), vec![7.0, 9.0]);
    assert_eq!(r.slice(0, 5, 2, 1)?.shape(), &[0]);
    let m = range(&[3, 5]);
    let s = m.slice(1, 0, 5, 2)?;
    assert_eq!(s.shape(), &[3, 3]);
    assert_eq!(vals(&s), vec![0.0, 2.0, 4.0, 5.0, 7.0, 9.0, 10.0, 12.0, 14.0]);
    // Slicing a slice: rows 1.. of the strided view.
    assert_eq!(vals(&s.slice(0, 1, 3, 1)?.slice(1, 1, 3, 1)?), vec![7.0, 9.0, 12.0, 14.0]);
    assert_eq!(vals(&m.narrow(0, 1, 2)?.narrow(1, 3, 2)?), vec![8.0, 9.0, 13.0, 14.0]);
    let q = range(&[2, 1, 3, 1]);
    assert_eq!(q.squeeze(None)?.shape(), &[2, 3]);
    assert_eq!(q.squeeze(Some(1))?.shape(), &[2, 3, 1]);
    assert_eq!(q.squeeze(Some(0))?.shape(), &[2, 1, 3, 1], "squeezing a non-1 axis is a no-op");
    assert_eq!(q.squeeze(Some(-1))?.shape(), &[2, 1, 3]);
    assert_eq!(m.unsqueeze(0)?.shape(), &[1, 3, 5]);
    assert_eq!(m.unsqueeze(-1)?.shape(), &[3, 5, 1]);
    assert_eq!(m.unsqueeze(1)?.shape(), &[3, 1, 5]);
    assert_eq!(range(&[2, 3, 4]).flatten(1, -1)?.shape(), &[2, 12]);
    assert_eq!(range(&[2, 3, 4]).flatten(0, 1)?.shape(), &[6, 4]);
    assert_eq!(Tensor::scalar(1.0, DType::F64).flatten(0, -1)?.shape(), &[1]);
    Ok(())
}

#[test]
fn concat_stack_split_chunk() -> Result<()> {
    let a = range(&[2, 2]);
    let b = range(&[2, 1]).add_scalar(10.0)?;
    let c = Tensor::concat(&[a.clone(), b.clone()], 1)?;
    assert_eq!(c.shape(), &[2, 3]);
    assert_eq!(vals(&c), vec![0.0, 1.0, 10.0, 2.0, 3.0, 11.0]);
    let c0 = Tensor::concat(&[a.clone(), a.mul_scalar(-1.0)?], 0)?;
    assert_eq!(vals(&c0), vec![0.0, 1.0, 2.0, 3.0, -0.0, -1.0, -2.0, -3.0]);
    let s = Tensor::stack(&[a.clone(), a.add_scalar(4.0)?], 0)?;
    assert_eq!(s.shape(), &[2, 2, 2]);
    assert_eq!(vals(&s), (0..8).map(f64::from).collect::<Vec<_>>());
    let s1 = Tensor::stack(&[a.clone(), a.add_scalar(4.0)?], 1)?;
    assert_eq!(s1.shape(), &[2, 2, 2]);
    assert_eq!(vals(&s1), vec![0.0, 1.0, 4.0, 5.0, 2.0, 3.0, 6.0, 7.0]);
    let s2 = Tensor::stack(&[a.clone(), a.clone()], -1)?;
    assert_eq!(s2.shape(), &[2, 2, 2]);
    assert_eq!(vals(&s2), vec![0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);

    let r = range(&[5, 2]);
    let parts = r.split(2, 0)?;
    assert_eq!(parts.iter().map(|p| p.shape()[0]).collect::<Vec<_>>(), vec![2, 2, 1]);
    assert_eq!(vals(&parts[2]), vec![8.0, 9.0]);
    let parts = r.split_sizes(&[1, 4], 0)?;
    assert_eq!(vals(&parts[0]), vec![0.0, 1.0]);
    assert_eq!(parts[1].shape(), &[4, 2]);
    let ch = range(&[2, 6]).chunk(3, 1)?;
    assert_eq!(ch.len(), 3);
    assert_eq!(vals(&ch[1]), vec![2.0, 3.0, 8.0, 9.0]);
    let ch = range(&[5]).chunk(2, 0)?; // sizes 3 and 2, as PyTorch
    assert_eq!(ch.iter().map(|p| p.shape()[0]).collect::<Vec<_>>(), vec![3, 2]);
    // Concat of the split pieces restores the input.
    assert_eq!(vals(&Tensor::concat(&r.split(2, 0)?, 0)?), vals(&r));
    Ok(())
}

#[test]
fn pad_values() -> Result<()> {
    let x = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let p = x.pad(&[(1, 0), (0, 2)], 9.0)?;
    assert_eq!(p.shape(), &[3, 4]);
    assert_eq!(vals(&p), vec![9.0, 9.0, 9.0, 9.0, 1.0, 2.0, 9.0, 9.0, 3.0, 4.0, 9.0, 9.0]);
    // Fewer pairs than dims pad the last axes only.
    let p = x.pad(&[(1, 1)], 0.0)?;
    assert_eq!(p.shape(), &[2, 4]);
    assert_eq!(vals(&p), vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 4.0, 0.0]);
    // Padding a strided view.
    let p = x.transpose(0, 1)?.pad(&[(0, 1)], -1.0)?;
    assert_eq!(vals(&p), vec![1.0, 3.0, -1.0, 2.0, 4.0, -1.0]);
    Ok(())
}

#[test]
fn views_share_storage_and_contiguous_copies() -> Result<()> {
    let base = range(&[2, 3]);
    let flat = base.reshape(&[6])?; // contiguous: a view
    let tr = base.transpose(0, 1)?;
    let row = base.narrow(0, 1, 1)?;
    let ex = base.narrow(0, 0, 1)?.expand(&[4, 3])?;
    no_grad(|| flat.narrow(0, 1, 1)?.fill_(100.0)).unwrap();
    assert_eq!(vals(&base), vec![0.0, 100.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(vals(&tr), vec![0.0, 3.0, 100.0, 4.0, 2.0, 5.0]);
    assert_eq!(vals(&ex)[1], 100.0);
    assert_eq!(vals(&ex)[10], 100.0);
    row.mul_scalar_(2.0)?;
    assert_eq!(vals(&base), vec![0.0, 100.0, 2.0, 6.0, 8.0, 10.0]);

    // contiguous() of a strided view is a copy; of a contiguous tensor, itself.
    let c = tr.contiguous()?;
    assert!(c.is_contiguous() && !tr.is_contiguous());
    assert_eq!(vals(&c), vals(&tr));
    c.fill_(-1.0)?;
    assert_eq!(vals(&base), vec![0.0, 100.0, 2.0, 6.0, 8.0, 10.0], "the copy does not alias");
    let same = base.contiguous()?;
    same.add_scalar_(1.0)?;
    assert_eq!(vals(&base)[0], 1.0, "contiguous() of a contiguous tensor aliases it");
    let copy = base.contiguous_copy()?;
    copy.zero_()?;
    assert_eq!(vals(&base)[0], 1.0, "contiguous_copy never aliases");
    Ok(())
}

#[test]
fn reshape_of_a_non_contiguous_tensor() -> Result<()> {
    let m = range(&[2, 3]);
    let tr = m.transpose(0, 1)?;
    let r = tr.reshape(&[6])?;
    assert_eq!(vals(&r), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    assert_eq!(vals(&tr.reshape(&[2, -1])?), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let st = range(&[4, 4]).slice(1, 0, 4, 2)?; // strided columns
    assert_eq!(vals(&st.reshape(&[8])?), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]);
    // It is a copy: writing into it leaves the source alone.
    r.fill_(0.0)?;
    assert_eq!(vals(&m), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    // Gradients flow back through the transposing reshape.
    let x = range(&[2, 3]).requires_grad_(true)?;
    let w = range(&[6]);
    x.transpose(0, 1)?.reshape(&[6])?.mul(&w)?.sum_all()?.backward()?;
    assert_eq!(vals(&x.grad().unwrap()), vec![0.0, 2.0, 4.0, 1.0, 3.0, 5.0]);
    Ok(())
}
