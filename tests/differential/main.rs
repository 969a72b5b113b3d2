//! Property-based differential test: random programs of 1-8 ops over the
//! public `Tensor` API (elementwise ops with broadcasting, comparisons and
//! `where_`, reductions, softmax, matmul, views, joins, index ops, in-place
//! ops, dtype casts, losses) on random shapes (rank 0-4, dims 0-5), run on
//! the cpu in f64 (the truth), on the cpu in f32 and on the GPU (f32), then
//! differentiated. Every call must return the same `Ok`/`Err` on every
//! backend and never panic; results must agree (see `differential/check.rs`
//! for how rounding is told apart from bugs), and the f64 gradients must
//! match a central difference of the program.
//!
//! Environment: `SKIFF_DIFF_CASES` (or `PROPTEST_CASES`) programs per run
//! (default 200); `SKIFF_DIFF_SEED` the run's seed (default fixed, so CI is
//! reproducible; `random` draws one); `SKIFF_DIFF_CASE=<case seed>` replays
//! one program (a failure prints it); `SKIFF_DIFF_MAX_OPS` longer programs
//! (default 8). Failing programs are shrunk by proptest
//! (no persistence file is written) and printed as Rust.

mod check;
#[path = "../common/mod.rs"]
mod common;
mod exec;
mod found;
mod gen;
mod print;
mod program;
mod resolve;
mod run;
mod selftest;

use check::{Stats, Truth};
use exec::{ErrKey, Host};
use program::{Cx, Input, Op};
use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use skiff::{DType, Device, Tensor};
use std::cell::RefCell;
use std::fmt::Write as _;

const DEFAULT_CASES: usize = 200;
const DEFAULT_SEED: u64 = 0x5EED_D1FF_2024;
const MAX_OPS: usize = 8;

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    v.strip_prefix("0x").map_or_else(|| v.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
}

fn case_seed(base: u64, i: usize) -> u64 {
    gen::Rng(base ^ (i as u64).wrapping_mul(0xA24B_AED4_963E_E407)).next()
}

// ---- panics: caught per program, reported with the program ------------------

thread_local! {
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// A panic hook that records panics on threads inside `catching` (the message
/// and where) instead of printing them; other threads keep the default hook.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let mine = CAUGHT.with(|c| {
                let mut c = c.borrow_mut();
                if let Some(slot) = c.as_mut() {
                    let loc = info.location().map(|l| format!(" at {l}")).unwrap_or_default();
                    *slot = format!("{}{loc}", payload(info.payload()));
                    true
                } else {
                    false
                }
            });
            if !mine {
                previous(info);
            }
        }));
    });
}

fn payload(p: &(dyn std::any::Any + Send)) -> &str {
    p.downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(non-string payload)")
}

fn catching<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    CAUGHT.with(|c| *c.borrow_mut() = Some(String::new()));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    let msg = CAUGHT.with(|c| c.borrow_mut().take()).unwrap_or_default();
    r.map_err(|_| format!("PANIC: {msg}"))
}

// ---- the readable program ---------------------------------------------------

fn print_inputs(out: &mut String, inputs: &[Input]) {
    out.push_str(
        "    // FLOAT: the run's float dtype (f64, or f32 on the cpu and the GPU); dev: its device;\n    \
         // input(values, shape, requires_grad): a contiguous leaf of FLOAT on dev; ints(values, shape): i32 on dev\n",
    );
    for (i, x) in inputs.iter().enumerate() {
        let vals: Vec<String> = x.values.iter().map(|&v| format!("{:?}", v as f32)).collect();
        let _ = writeln!(out, "    let v{i} = input(&[{}], &{:?}, {})?;", vals.join(", "), x.shape, x.requires_grad);
    }
}

fn print_step(out: &mut String, values: &mut usize, op: &Op, r: Option<&Result<Host, ErrKey>>) {
    match r {
        // Printed before the op runs, replaced by its outcome after: a panic leaves this line.
        None => {
            let _ = writeln!(out, "    {op}; // <- PANICKED here");
        }
        Some(Ok(h)) => {
            drop_last_line(out);
            let _ = writeln!(out, "    let v{} = {op}?; // {} {:?}", *values, h.dtype, h.shape);
            *values += 1;
        }
        Some(Err(e)) => {
            drop_last_line(out);
            let _ = writeln!(out, "    {op}.unwrap_err(); // {e}");
        }
    }
}

fn drop_last_line(out: &mut String) {
    out.pop();
    out.truncate(out.rfind('\n').map_or(0, |i| i + 1));
}

// ---- one program --------------------------------------------------------------

/// Runs a raw program everywhere and compares; the error is the whole report
/// (program, and what differed or panicked).
fn check_program(raw: &gen::RawProgram, gpu: Option<&Device>, stats: &mut Stats) -> Result<(), String> {
    let text = RefCell::new(String::new());
    let stage = RefCell::new(String::from("the f64 cpu run"));
    let result = catching(|| -> Result<(), String> {
        let values = std::cell::Cell::new(0);
        let (prog, rec64) = exec::run_truth(
            raw,
            |op, r| {
                let mut n = values.get();
                print_step(&mut text.borrow_mut(), &mut n, op, r);
                values.set(n);
            },
            |inputs| {
                values.set(inputs.len());
                print_inputs(&mut text.borrow_mut(), inputs);
            },
        )
        .map_err(|e| format!("the f64 run failed outside an op (readback): {e}"))?;
        if let Some((k, _)) = &prog.loss {
            let _ = writeln!(text.borrow_mut(), "    v{k}.mul(&w)?.sum_all()?.backward()?; // w in [0.5, 1.5]");
        }
        let mut s = Stats { programs: 1, ..Default::default() };
        s.steps = rec64.steps.len();
        s.steps_err = rec64.steps.iter().filter(|st| st.out.is_err()).count();
        *stage.borrow_mut() = "checking the f64 run".into();
        let truth = Truth::new(&prog, &rec64)?;
        if check::directional(&prog, &rec64, raw.inputs[0].seed ^ 0xD1)? {
            s.fd_checked += 1;
        }
        let ok: Vec<bool> = rec64.steps.iter().map(|st| st.out.is_ok()).collect();
        let mut runs = vec![("the cpu f32 run", Device::Cpu, &check::CPU_F32)];
        if let Some(g) = gpu {
            runs.push(("the GPU run", g.clone(), &check::GPU_F32));
            s.gpu_programs += 1;
        }
        for (name, device, tols) in runs {
            *stage.borrow_mut() = name.to_string();
            let cx = Cx { float: DType::F32, device, local: false };
            let rec = exec::run_replay(&prog, &ok, &cx, |op, r| {
                if r.is_none() {
                    *stage.borrow_mut() = format!("{name}, at `{op}`");
                }
            })
            .map_err(|e| format!("{name} failed outside an op (readback): {e}"))?;
            *stage.borrow_mut() = format!("comparing {name}");
            check::compare(name, &truth, &rec, tols, DType::F32, &mut s)?;
        }
        stats.add(&s);
        Ok(())
    });
    let why = match result {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(m)) => m,
        Err(panic) => format!("{panic} (during {})", stage.borrow()),
    };
    Err(format!("{why}\n  program (as it ran in f64):\n{}", text.borrow()))
}

/// f64 does not exist on the GPU: asking for it must be a clean error.
fn f64_is_refused_on(gpu: &Device) {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
    let e = x.to(gpu).expect_err("an f64 tensor moved to the GPU");
    assert_eq!(common::kind_and_op(&e).0, common::Kind::DType, "{e}");
    let y = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap().to(gpu).unwrap();
    let e = y.to_dtype(DType::F64).expect_err("to_dtype(F64) on the GPU");
    assert_eq!(common::kind_and_op(&e).0, common::Kind::DType, "{e}");
}

#[test]
fn random_programs_agree_across_cpu_f64_cpu_f32_and_gpu() {
    let cases = env_u64("SKIFF_DIFF_CASES").or_else(|| env_u64("PROPTEST_CASES")).unwrap_or(DEFAULT_CASES as u64);
    let base = match std::env::var("SKIFF_DIFF_SEED").as_deref() {
        Ok("random") => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64,
        _ => env_u64("SKIFF_DIFF_SEED").unwrap_or(DEFAULT_SEED),
    };
    let seeds: Vec<u64> = match env_u64("SKIFF_DIFF_CASE") {
        Some(one) => vec![one],
        None => (0..cases as usize).map(|i| case_seed(base, i)).collect(),
    };
    let gpu = common::gpu();
    if let Some(g) = &gpu {
        f64_is_refused_on(g);
    }
    install_panic_hook();
    let max_ops = env_u64("SKIFF_DIFF_MAX_OPS").map_or(MAX_OPS, |n| n.max(1) as usize);
    let strategy = gen::program(max_ops);
    let config = Config { failure_persistence: None, max_shrink_iters: 400, ..Config::default() };
    let mut total = Stats::default();
    let start = std::time::Instant::now();
    for (i, &seed) in seeds.iter().enumerate() {
        let mut runner =
            TestRunner::new_with_rng(config.clone(), TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed)));
        let tree = strategy.new_tree(&mut runner).expect("the program strategy never rejects");
        let first = RefCell::new(None::<String>);
        let stats = RefCell::new(Stats::default());
        let result = runner.run_one(tree, |raw| {
            let r = check_program(&raw, gpu.as_ref(), &mut stats.borrow_mut());
            if let Err(m) = &r {
                first.borrow_mut().get_or_insert_with(|| m.clone());
            }
            r.map_err(TestCaseError::fail)
        });
        match result {
            Ok(_) => total.add(&stats.borrow()),
            Err(TestError::Fail(why, _minimal)) => panic!(
                "differential program failed: SKIFF_DIFF_SEED={base:#x}, program {i}; replay it alone with \
                 SKIFF_DIFF_CASE={seed:#x}\n\nshrunk to:\n{why}\n\nas first found:\n{}",
                first.borrow().as_deref().unwrap_or("(same)")
            ),
            Err(TestError::Abort(why)) => panic!("proptest aborted program {i} (SKIFF_DIFF_CASE={seed:#x}): {why}"),
        }
    }
    eprintln!(
        "differential: {} programs in {:.1?} (seed {base:#x}, GPU {}): {total:?}",
        seeds.len(),
        start.elapsed(),
        if gpu.is_some() { "on" } else { "SKIPPED" }
    );
    // The comparisons must actually happen: most steps succeed and most
    // values and gradients are compared end to end.
    if seeds.len() >= 100 && max_ops == MAX_OPS {
        assert!(total.steps_err * 2 < total.steps, "more than half the steps failed: {total:?}");
        assert!(total.unstable * 5 < total.stable, "too many steps unstable to compare: {total:?}");
        assert!(total.grads_compared * 2 > total.programs, "gradients compared in too few programs: {total:?}");
        assert!(total.fd_checked * 5 > total.programs, "too few central-difference checks: {total:?}");
    }
}

fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut g = gen::Rng(seed);
    let mut b = [0u8; 32];
    for c in b.chunks_mut(8) {
        c.copy_from_slice(&g.next().to_le_bytes());
    }
    b
}
