//! The program passes on their own: each removes what it should, keeps what
//! it must (in-place writes, random draws, range checks), and the optimised
//! program replays what eager code computes, bit for bit.

use skiff::jit;
use skiff::{DType, Tensor};

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_f32_vec().unwrap().into_iter().map(f32::to_bits).collect()
}

fn input() -> Tensor {
    Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.25, -0.75, 1.5], &[2, 3]).unwrap()
}

#[test]
fn a_repeated_kernel_is_computed_once() {
    let x = input();
    let f = |x: &Tensor| x.exp()?.add(&x.exp()?);
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |xs| Ok(vec![f(&xs[0])?])).unwrap();
    assert_eq!(traced.program().kernels(), 3, "{}", traced.program());
    let stats = traced.optimize();
    // Fusion then puts the exp and the add into one kernel (tests/capture/fusion.rs).
    assert_eq!((stats.merged, stats.dead, stats.fused), (1, 0, 1));
    let text = traced.program().to_string();
    assert_eq!(text.matches("exp(").count(), 1, "{text}");
    assert!(text.contains("t0 = exp(x0; 0, 0); t1 = add(t0, t0)"), "one exp, read twice:\n{text}");
    let x2 = x.mul_scalar(-0.5).unwrap();
    assert_eq!(bits(&traced.run(std::slice::from_ref(&x2)).unwrap()[0]), bits(&f(&x2).unwrap()));
}

#[test]
fn what_nothing_reads_is_dropped() {
    let x = input();
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |xs| {
        let _unused = xs[0].sin()?.mul_scalar(3.0)?;
        Ok(vec![xs[0].cos()?])
    })
    .unwrap();
    assert_eq!(traced.program().kernels(), 3);
    assert_eq!(traced.optimize().dead, 2);
    let text = traced.program().to_string();
    assert!(!text.contains("sin") && text.contains("unary:cos"), "{text}");
    assert_eq!(bits(&traced.run(std::slice::from_ref(&x)).unwrap()[0]), bits(&x.cos().unwrap()));
}

#[test]
fn reads_on_either_side_of_an_in_place_write_stay_apart() {
    let x = input();
    let b = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let f = |x: &Tensor, b: &Tensor| -> skiff::Result<Tensor> {
        let before = b.mul_scalar(2.0)?;
        b.add_scalar_(1.0)?; // a write into a captured storage: an effect, never dropped
        let after = b.mul_scalar(2.0)?;
        x.add(&before)?.add(&after)
    };
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |xs| Ok(vec![f(&xs[0], &b)?])).unwrap();
    let stats = traced.optimize();
    // Only the two adds fuse (the [3] operands have another shape).
    assert_eq!(stats, skiff::program::PassStats { fused: 1, ..Default::default() }, "{}", traced.program());
    // b is now [2, 3, 4]; a run adds 1 again, as the eager function would.
    let expect_b = Tensor::from_vec(vec![2.0f32, 3.0, 4.0], &[3]).unwrap();
    let eager = f(&x, &expect_b).unwrap();
    let replayed = traced.run(std::slice::from_ref(&x)).unwrap();
    assert_eq!(bits(&replayed[0]), bits(&eager));
    assert_eq!(b.to_f32_vec().unwrap(), vec![3.0, 4.0, 5.0]);
}

#[test]
fn random_draws_are_never_merged() {
    let x = Tensor::ones(&[500], DType::F32).unwrap();
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |xs| {
        Ok(vec![xs[0].dropout(0.5, true)?.sub(&xs[0].dropout(0.5, true)?)?])
    })
    .unwrap();
    // The zero fills the two dropouts use are folded into constants and
    // their scaling merged; their draws are neither.
    let s = traced.optimize();
    assert_eq!((s.folded, s.merged), (2, 1), "{s:?}\n{}", traced.program());
    assert_eq!(traced.program().to_string().matches("= random:bernoulli").count(), 2, "{}", traced.program());
    let diff = traced.run(std::slice::from_ref(&x)).unwrap()[0].to_f32_vec().unwrap();
    assert!(diff.iter().any(|&d| d != 0.0), "two independent masks differ somewhere");
}

#[test]
fn range_checks_are_kept() {
    let x = input();
    let idx = Tensor::from_vec(vec![1i32, 0], &[2]).unwrap();
    let (_, mut traced) = jit::trace(&[x.clone(), idx.clone()], |i| {
        let _unused = i[0].index_select(0, &i[1])?;
        Ok(vec![i[0].neg()?])
    })
    .unwrap();
    traced.optimize();
    let text = traced.program().to_string();
    assert!(text.contains("check"), "a range check is an effect:\n{text}");
    let bad = Tensor::from_vec(vec![5i32, 0], &[2]).unwrap();
    let e = traced.run(&[x, bad]).expect_err("an index out of range is still an error");
    assert!(e.to_string().contains('5'), "{e}");
}

#[test]
fn a_result_written_in_place_later_is_not_shared() {
    let x = input();
    let f = |x: &Tensor| -> skiff::Result<Tensor> {
        let a = x.exp()?;
        let c = x.exp()?; // the same kernel as `a`, but written below
        c.add_scalar_(1.0)?;
        a.add(&c)
    };
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |xs| Ok(vec![f(&xs[0])?])).unwrap();
    assert_eq!(traced.optimize().merged, 0, "{}", traced.program());
    assert_eq!(bits(&traced.run(std::slice::from_ref(&x)).unwrap()[0]), bits(&f(&x).unwrap()));
}

#[test]
fn an_index_input_is_range_checked_at_every_run_whatever_made_it() {
    // Indices from argmax carry a bound that lets eager code skip their
    // check; a program's next input may not, so a trace records the check.
    let x = input();
    let idx = Tensor::from_vec(vec![0.0f32, 3.0, 1.0, 2.0], &[2, 2]).unwrap().argmax(Some(1), false).unwrap();
    let (_, traced) = jit::trace(&[x.clone(), idx], |i| Ok(vec![i[0].index_select(1, &i[1])?])).unwrap();
    let bad = Tensor::from_vec(vec![0i32, 7], &[2]).unwrap();
    let e = traced.run(&[x, bad]).expect_err("index 7 of an axis of 3 is an error, not a panic");
    assert!(e.to_string().contains('7'), "{e}");
}

#[test]
fn the_memory_plan_shares_buffers_only_between_slots_never_live_at_once() {
    let x = Tensor::from_vec(vec![1.0f32; 12], &[3, 4]).unwrap();
    let (_, traced) = jit::trace(std::slice::from_ref(&x), |xs| {
        let a = xs[0].exp()?;
        let b = a.neg()?; // a's last use
        let c = b.sum(&[1], false)?; // [3]: fits in a's dead buffer
        let d = b.abs()?; // b's last use; a's buffer is c's now
        let m = d.gt_scalar(0.0)?; // bool: shares no f32 buffer
        Ok(vec![c.add_scalar(1.0)?, m])
    })
    .unwrap();
    let (p, plan) = (traced.program(), traced.memory_plan());
    let made: Vec<(usize, usize)> = p
        .instrs
        .iter()
        .enumerate()
        .filter_map(|(i, instr)| match instr {
            skiff::program::Instr::Run { out, .. } => Some((*out, i)),
            _ => None,
        })
        .collect();
    let id = |k: usize| made[k].0;
    let (a, c, m) = (id(0), id(2), id(4));
    assert_eq!(plan.buffer_of[c], plan.buffer_of[a], "a dead slot's buffer is reused\n{plan:?}\n{p}");
    // Outputs are not in the arena: c + 1 (f32 [3]) and the mask (bool [3, 4]).
    let outputs: Vec<usize> = p.outputs.iter().map(|o| o.value).collect();
    assert!(outputs.iter().all(|&o| plan.buffer_of[o].is_none()));
    assert_eq!(plan.buffer_of[m], None);
    assert_eq!(plan.output_bytes, 12 + 12);
    assert_eq!(plan.arena_bytes, plan.buffers.iter().sum::<usize>());
    assert_eq!(plan.peak_bytes, plan.arena_bytes + plan.output_bytes);
    // No two slots live at once share a buffer; each fits its buffer.
    let last = |v: usize| plan.last_use.iter().position(|l| l.contains(&v)).unwrap_or(usize::MAX);
    for &(v, dv) in &made {
        if let Some(b) = plan.buffer_of[v] {
            assert!(plan.buffers[b] >= p.values[v].len * p.values[v].dtype.size_in_bytes());
        }
        for &(w, dw) in &made {
            let overlap = v != w && dv <= last(w) && dw <= last(v);
            assert!(
                !(overlap && plan.buffer_of[v].is_some() && plan.buffer_of[v] == plan.buffer_of[w]),
                "%{v} and %{w}"
            );
        }
    }
}

#[test]
fn constants_the_program_makes_are_folded_but_captured_values_are_not() {
    let x = input();
    let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let f = |x: &Tensor| -> skiff::Result<Tensor> {
        let half = Tensor::full(&[], 0.5, DType::F32)?.mul_scalar(2.0)?; // a constant chain
        x.mul(&half)?.add(&w.mul_scalar(3.0)?) // w is captured: read at every run
    };
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |xs| Ok(vec![f(&xs[0])?])).unwrap();
    let stats = traced.optimize();
    assert_eq!(stats.folded, 2, "the fill and the mul_scalar over it: {stats:?}\n{}", traced.program());
    let text = traced.program().to_string();
    assert!(!text.contains("fill:") && text.contains("mul_scalar"), "w * 3 stays:\n{text}");
    // The caller writes w: a replay reads the new values, the folded constant stays.
    w.add_scalar_(1.0).unwrap();
    let x2 = x.mul_scalar(-2.0).unwrap();
    assert_eq!(bits(&traced.run(std::slice::from_ref(&x2)).unwrap()[0]), bits(&f(&x2).unwrap()));
}

#[test]
fn a_copy_of_a_value_never_written_is_read_through() {
    let x = input();
    let (_, mut traced) =
        jit::trace(std::slice::from_ref(&x), |xs| Ok(vec![xs[0].exp()?.contiguous_copy()?.neg()?])).unwrap();
    let stats = traced.optimize();
    assert_eq!(stats.forwarded, 1, "{stats:?}");
    assert!(!traced.program().to_string().contains("copy("), "{}", traced.program());
    let x2 = x.mul_scalar(0.5).unwrap();
    let want = x2.exp().unwrap().neg().unwrap();
    assert_eq!(bits(&traced.run(std::slice::from_ref(&x2)).unwrap()[0]), bits(&want));
    // A copy written in place later, or of a value also returned, stays a copy.
    let written = |x: &Tensor| -> skiff::Result<Vec<Tensor>> {
        let a = x.exp()?;
        let c = a.contiguous_copy()?;
        c.add_scalar_(1.0)?;
        Ok(vec![a, c])
    };
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |xs| written(&xs[0])).unwrap();
    assert_eq!(traced.optimize().forwarded, 0, "{}", traced.program());
    let got = traced.run(std::slice::from_ref(&x2)).unwrap();
    let want = written(&x2).unwrap();
    assert_eq!((bits(&got[0]), bits(&got[1])), (bits(&want[0]), bits(&want[1])));
    let returned = |x: &Tensor| -> skiff::Result<Vec<Tensor>> {
        let a = x.exp()?;
        Ok(vec![a.clone(), a.contiguous_copy()?])
    };
    let (_, mut traced) = jit::trace(std::slice::from_ref(&x), |xs| returned(&xs[0])).unwrap();
    assert_eq!(traced.optimize().forwarded, 0, "two outputs must not alias");
}

#[test]
fn a_repeated_range_check_is_dropped_and_the_first_still_fails() {
    let x = input();
    let idx = Tensor::from_vec(vec![0i32, 2], &[2]).unwrap();
    let f =
        |x: &Tensor, i: &Tensor| -> skiff::Result<Tensor> { x.index_select(1, i)?.add(&x.index_select(1, i)?.exp()?) };
    let (_, mut traced) = jit::trace(&[x.clone(), idx.clone()], |t| Ok(vec![f(&t[0], &t[1])?])).unwrap();
    let checks = |t: &jit::Traced| t.program().to_string().matches("index_check:").count();
    assert_eq!(checks(&traced), 2, "{}", traced.program());
    let stats = traced.optimize();
    assert_eq!((stats.checks, checks(&traced)), (1, 1), "{stats:?}");
    let bad = Tensor::from_vec(vec![0i32, 9], &[2]).unwrap();
    let e = traced.run(&[x.clone(), bad]).expect_err("index 9 of an axis of 3 still fails");
    assert!(e.to_string().contains("index_select") && e.to_string().contains('9'), "{e}");
    // A write into the index between the two reads keeps both checks.
    let g = |x: &Tensor, i: &Tensor| -> skiff::Result<Tensor> {
        let a = x.index_select(1, i)?;
        i.copy_(&Tensor::from_vec(vec![1i32, 1], &[2])?)?;
        a.add(&x.index_select(1, i)?)
    };
    let i2 = idx.contiguous_copy().unwrap();
    let (_, mut traced) = jit::trace(&[x, i2], |t| Ok(vec![g(&t[0], &t[1])?])).unwrap();
    assert_eq!(traced.optimize().checks, 0, "{}", traced.program());
}

#[test]
fn checks_of_the_same_labels_through_another_view_are_one_check() {
    // cross_entropy checks its [N] labels, then gathers through their [N, 1] view.
    let logits = Tensor::from_vec((0..12).map(|i| i as f32 / 7.0).collect(), &[4, 3]).unwrap();
    let labels = Tensor::from_vec(vec![0i32, 2, 1, 2], &[4]).unwrap();
    let f = |x: &Tensor, y: &Tensor| x.cross_entropy(y, skiff::Reduction::Mean, 0.0);
    let (_, mut traced) = jit::trace(&[logits.clone(), labels.clone()], |t| Ok(vec![f(&t[0], &t[1])?])).unwrap();
    let checks = |t: &jit::Traced| t.program().to_string().matches("index_check:").count();
    assert_eq!(checks(&traced), 2, "{}", traced.program());
    traced.optimize();
    assert_eq!(checks(&traced), 1, "{}", traced.program());
    traced.program().validate().unwrap();
    let bad = Tensor::from_vec(vec![0i32, 3, 1, 2], &[4]).unwrap();
    let e = traced.run(&[logits.clone(), bad]).expect_err("label 3 of 3 classes is an error");
    assert!(e.to_string().contains("cross_entropy"), "{e}");
    let good = Tensor::from_vec(vec![2i32, 0, 0, 1], &[4]).unwrap();
    assert_eq!(bits(&traced.run(&[logits.clone(), good.clone()]).unwrap()[0]), bits(&f(&logits, &good).unwrap()));
}

#[test]
fn indices_the_function_makes_with_argmax_are_not_checked_again() {
    // max-pool gathers at its window argmax, and argmax's values lie in their
    // axis by construction: a replay makes them again with the same kernels,
    // so the program needs no range check for them (eager code has none).
    let x = Tensor::from_vec((0..32).map(|i| ((i * 7) % 11) as f32).collect(), &[2, 1, 4, 4]).unwrap();
    let f = |x: &Tensor| -> skiff::Result<Vec<Tensor>> {
        let flat = x.reshape(&[2, 16])?;
        let at = flat.argmax(Some(1), true)?;
        Ok(vec![x.max_pool2d([2, 2], [2, 2], [0, 0])?, flat.gather(1, &at)?])
    };
    let (_, traced) = jit::trace(std::slice::from_ref(&x), |i| f(&i[0])).unwrap();
    let text = traced.program().to_string();
    assert!(!text.contains("index_check:"), "{text}");
    let x2 = x.neg().unwrap();
    let (got, want) = (traced.run(std::slice::from_ref(&x2)).unwrap(), f(&x2).unwrap());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(bits(g), bits(w));
    }
}

#[test]
fn indices_from_outside_the_function_are_checked_even_with_a_known_bound() {
    // An argmax made before the capture, read inside directly or through a
    // copy made inside: a later run may see other values there, so both keep
    // their check.
    let x = input();
    let at = x.argmax(Some(1), true).unwrap();
    let (_, traced) = jit::trace(std::slice::from_ref(&x), |i| {
        Ok(vec![i[0].gather(1, &at)?, i[0].gather(1, &at.contiguous_copy()?)?])
    })
    .unwrap();
    let text = traced.program().to_string();
    assert_eq!(text.matches("index_check:").count(), 2, "{text}");
}
