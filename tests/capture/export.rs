//! Saving captured programs (`save_inference_model`, `Traced::to_bytes`) and
//! running them again (`load`, `load_inference_model`): a trained model's
//! predictions come back bit for bit on the cpu and within tolerance on the
//! GPU, the serialised form is stable, and a file that is not a program a
//! capture could have made is an error, never a panic.

use crate::common;

use skiff::jit::{self, inference_bytes, load, load_inference_model, save_inference_model};
use skiff::nn::{Conv2d, Flatten, Layer, Linear, MaxPool2d, ReLU, Sequential};
use skiff::optim::{Adam, AdamConfig, Optimizer};
use skiff::{no_grad, Device, Reduction, Tensor};

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_f32_vec().unwrap().into_iter().map(f32::to_bits).collect()
}

fn values(seed: u64, n: usize) -> Vec<f32> {
    (0..n).map(|i| ((seed as f32 * 7.31 + i as f32 * 1.37).sin() * 43758.547).fract()).collect()
}

fn cnn() -> Sequential {
    Sequential::new()
        .push(Conv2d::new(1, 4, [3, 3]).unwrap())
        .push(ReLU::new())
        .push(MaxPool2d::new([2, 2]).unwrap())
        .push(Flatten::new())
        .push(Linear::new(4 * 3 * 3, 5).unwrap())
}

fn images(seed: u64, n: usize) -> Tensor {
    Tensor::from_vec(values(seed, n * 64), &[n, 1, 8, 8]).unwrap()
}

/// A few Adam steps, so the saved weights are trained ones.
fn train(model: &Sequential) {
    let mut opt = Adam::new(model.parameters(), AdamConfig { lr: 0.01, ..Default::default() }).unwrap();
    let y = Tensor::from_vec(vec![0i32, 1, 2, 3, 4, 0], &[6]).unwrap();
    for s in 0..3 {
        opt.zero_grad();
        model.forward(&images(s, 6)).unwrap().cross_entropy(&y, Reduction::Mean, 0.0).unwrap().backward().unwrap();
        opt.step().unwrap();
    }
}

#[test]
fn a_saved_model_predicts_what_the_live_one_does() {
    let model = cnn();
    train(&model);
    let x = images(9, 6);
    let path = std::env::temp_dir().join(format!("skiff-export-{}.safetensors", std::process::id()));
    save_inference_model(&path, &model, std::slice::from_ref(&x)).unwrap();
    let loaded = load_inference_model(&path, &Device::Cpu).unwrap();
    std::fs::remove_file(&path).ok();
    let want = no_grad(|| model.forward(&x)).unwrap();
    for seed in [9, 10] {
        let x = images(seed, 6);
        let want = no_grad(|| model.forward(&x)).unwrap();
        let got = loaded.run(std::slice::from_ref(&x)).unwrap();
        assert_eq!(bits(&got[0]), bits(&want), "batch {seed}");
    }
    assert!(model.is_training(), "saving restored the training flag");
    // The weights are in the file under their state-dict names.
    let bytes = inference_bytes(&model, std::slice::from_ref(&x)).unwrap();
    let names: Vec<String> =
        skiff::io::safetensors::from_bytes(&bytes, &Device::Cpu).unwrap().into_iter().map(|(n, _)| n).collect();
    for want in ["0.weight", "0.bias", "4.weight", "4.bias"] {
        assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
    }
    // No backward: the forward alone (conv as unfold + matmul, relu, pool, linear).
    let text = loaded.program().to_string();
    assert!(!text.contains("scatter_add") && text.contains("window_argmax") || text.contains("reduce:Max"), "{text}");
    assert_eq!(bits(&want), bits(&loaded.run(&[x]).unwrap()[0]));
}

#[test]
fn a_saved_model_runs_on_the_gpu() {
    let Some(device) = common::gpu() else { return };
    let model = cnn();
    let x = images(3, 6);
    let bytes = inference_bytes(&model, std::slice::from_ref(&x)).unwrap();
    let loaded = load(&bytes, &device).unwrap();
    let got = loaded.run(&[x.to(&device).unwrap()]).unwrap()[0].to_f32_vec().unwrap();
    let want = no_grad(|| model.forward(&x)).unwrap().to_f32_vec().unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
    }
}

#[test]
fn the_serialised_form_is_stable() {
    let model = Sequential::new().push(Linear::new(4, 3).unwrap()).push(ReLU::new());
    let x = Tensor::from_vec(values(1, 8), &[2, 4]).unwrap();
    let bytes = inference_bytes(&model, std::slice::from_ref(&x)).unwrap();
    let loaded = load(&bytes, &Device::Cpu).unwrap();
    // Written again, read again: the same program and the same file.
    let again = loaded.to_bytes_named(&|_| None).unwrap();
    let reloaded = load(&again, &Device::Cpu).unwrap();
    assert_eq!(reloaded.program().to_string(), loaded.program().to_string());
    assert_eq!(reloaded.to_bytes_named(&|_| None).unwrap(), again);
    // The JSON names kernels and rows in words.
    let meta = skiff::io::safetensors::from_bytes_with_metadata(&bytes, &Device::Cpu).unwrap().1;
    let json = &meta["skiff"];
    assert!(json.starts_with(r#"{"inputs":[{"dtype":"f32","layout":{"shape":[2,4],"#), "{json}");
    assert!(json.contains(r#""program":{"format":"skiff.program","version":1,"#), "{json}");
    assert!(json.contains(r#""matmul""#) && json.contains(r#""row":"relu""#), "{json}");
}

#[test]
fn every_captured_training_program_passes_the_load_checks() {
    // The checks a loaded program gets must accept whatever a capture makes:
    // a whole CNN training step (max-pool backward's windowed scatter, the
    // label checks of cross_entropy, fused Adam, host cells).
    let model = cnn();
    let opt = std::cell::RefCell::new(Adam::new(model.parameters(), AdamConfig::default()).unwrap());
    let y = Tensor::from_vec(vec![0i32, 1, 2, 3, 4, 0], &[6]).unwrap();
    let mut step = jit::compile(|xs: &[Tensor]| {
        let mut opt = opt.borrow_mut();
        opt.zero_grad();
        let loss = model.forward(&xs[0])?.cross_entropy(&xs[1], Reduction::Mean, 0.0)?;
        loss.backward()?;
        opt.step()?;
        Ok(vec![loss.detach()])
    });
    for s in 0..3 {
        step.call(&[images(s, 6), y.clone()]).unwrap();
    }
    let program = step.programs()[0].program();
    program.validate().unwrap();
    assert!(program.to_string().contains("scatter_add"), "{program}");
    // A training step reads and assigns .grad: it is no model to save.
    let e = step.programs()[0].to_bytes().unwrap_err().to_string();
    assert!(e.contains(".grad"), "{e}");
}

/// The bytes of `bytes` with its program's JSON edited by `edit`.
fn tampered(bytes: &[u8], edit: impl Fn(String) -> String) -> Vec<u8> {
    let (tensors, mut meta) = skiff::io::safetensors::from_bytes_with_metadata(bytes, &Device::Cpu).unwrap();
    // Only the program's part: the input specs come first.
    let doc = meta["skiff"].clone();
    let (inputs, program) = doc.split_once(r#""program":"#).expect("a program part");
    meta.insert("skiff".into(), format!(r#"{inputs}"program":{}"#, edit(program.to_string())));
    skiff::io::safetensors::to_bytes_with_metadata(&tensors, meta).unwrap()
}

/// The bytes of `bytes` with its program edited as a JSON value.
fn edited(bytes: &[u8], edit: impl Fn(&mut serde_json::Value)) -> Vec<u8> {
    tampered(bytes, |program| {
        let mut v: serde_json::Value = serde_json::from_str(&program[..program.len() - 1]).unwrap();
        edit(&mut v);
        format!("{v}}}")
    })
}

#[test]
fn a_file_that_is_no_program_is_an_error_not_a_panic() {
    let model = Sequential::new().push(Linear::new(4, 3).unwrap()).push(ReLU::new());
    let x = Tensor::from_vec(values(1, 8), &[2, 4]).unwrap();
    let good = inference_bytes(&model, std::slice::from_ref(&x)).unwrap();
    // One kernel: a product large enough to take its bias add and ReLU as an epilogue.
    let wide = Sequential::new().push(Linear::new(4, 64).unwrap()).push(ReLU::new());
    let wide_bytes = inference_bytes(&wide, &[Tensor::from_vec(values(2, 256), &[64, 4]).unwrap()]).unwrap();
    // An index the program takes as an input needs its check (max-pool's
    // window argmax, made by the program itself, needs none).
    let (_, indexed) = jit::trace(&[x.clone(), Tensor::from_vec(vec![1i32, 0], &[2]).unwrap()], |i| {
        Ok(vec![i[0].index_select(0, &i[1])?])
    })
    .unwrap();
    let indexed_bytes = indexed.to_bytes().unwrap();
    // An argmax over 5 positions gathering along an axis of 3: its own bound
    // does not cover that axis, so the capture keeps a check.
    let wide_index = Tensor::from_vec(vec![3.0f32, 2.0, 1.0, 0.0, -1.0, 0.0, 5.0, 1.0, 2.0, 3.0], &[2, 5]).unwrap();
    let narrow = Tensor::from_vec(values(4, 6), &[2, 3]).unwrap();
    let (_, argmax_gather) =
        jit::trace(&[wide_index, narrow], |i| Ok(vec![i[1].gather(1, &i[0].argmax(Some(1), true)?)?])).unwrap();
    let argmax_bytes = argmax_gather.to_bytes().unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", good[..good.len() / 2].to_vec(), "safetensors"),
        ("plain weights", skiff::io::safetensors::to_bytes(&model.state_dict()).unwrap(), "no \"skiff\" metadata"),
        ("not json", tampered(&good, |_| "{".into()), "not a skiff program"),
        (
            "an input spec outside its buffer",
            {
                let (t, mut meta) = skiff::io::safetensors::from_bytes_with_metadata(&good, &Device::Cpu).unwrap();
                let doc = meta["skiff"].replacen(r#""offset":0"#, r#""offset":5"#, 1);
                meta.insert("skiff".into(), doc);
                skiff::io::safetensors::to_bytes_with_metadata(&t, meta).unwrap()
            },
            "input 0's spec does not fit",
        ),
        ("another version", tampered(&good, |j| j.replace(r#""version":1"#, r#""version":7"#)), "version 7"),
        (
            "unknown row",
            tampered(&good, |j| j.replace(r#""row":"relu""#, r#""row":"rellu""#)),
            "unknown unary kernel \"rellu\"",
        ),
        (
            "view out of its buffer",
            tampered(&good, |j| j.replacen(r#""offset":0"#, r#""offset":99999"#, 1)),
            "lies outside",
        ),
        (
            "a slot read before it is made",
            // The relu (instruction 1) moved before the matmul it reads.
            edited(&good, |p| p["instrs"].as_array_mut().unwrap().swap(0, 1)),
            "instruction 0: %2 is read before it is made",
        ),
        (
            "a missing weight",
            tampered(&good, |j| j.replacen(r#"{"captured":"0.weight"}"#, r#"{"captured":"nope"}"#, 1)),
            "\"nope\"",
        ),
        (
            "an epilogue on a kernel that takes none",
            edited(&wide_bytes, |p| {
                p["instrs"][0]["run"]["spec"]["epilogue"]["head"] = serde_json::json!({"gather": {"axis": 0}})
            }),
            "not a matmul or reduction",
        ),
        ("a huge slot", edited(&good, |p| p["values"][2]["len"] = serde_json::json!(1u64 << 50)), "memory"),
        (
            "a result of another shape",
            edited(&good, |p| p["instrs"][0]["run"]["shape"] = serde_json::json!([1u64 << 40, 1u64 << 40])),
            "matmul needs shape [2, 3]",
        ),
        (
            "an index read without its check",
            edited(&indexed_bytes, |p| p["instrs"].as_array_mut().unwrap().retain(|i| i.get("check").is_none())),
            "without a range check",
        ),
        (
            "an argmax's index on a shorter axis without its check",
            edited(&argmax_bytes, |p| p["instrs"].as_array_mut().unwrap().retain(|i| i.get("check").is_none())),
            "gather indexes axis 1 with a check for another bound",
        ),
    ];
    for (label, bytes, want) in cases {
        let r = std::panic::catch_unwind(|| load(&bytes, &Device::Cpu).map(|_| ()));
        let Ok(r) = r else { panic!("{label}: load panicked") };
        let e = r.expect_err(label).to_string();
        assert!(e.contains(want), "{label}: {e}");
    }
}

#[test]
fn damaged_programs_load_as_errors_or_run_without_panicking() {
    // Every kind of edit a damaged or hostile file could carry, at random
    // places of the program's JSON: numbers changed, characters swapped.
    let model = cnn();
    let x = images(2, 2);
    let good = inference_bytes(&model, std::slice::from_ref(&x)).unwrap();
    let (_, meta) = skiff::io::safetensors::from_bytes_with_metadata(&good, &Device::Cpu).unwrap();
    let doc = meta["skiff"].clone();
    let digits: Vec<usize> = doc.char_indices().filter(|(_, c)| c.is_ascii_digit()).map(|(i, _)| i).collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut loaded, mut refused) = (0, 0);
    for _ in 0..400 {
        let mut bytes = doc.clone().into_bytes();
        let at = digits[next() as usize % digits.len()];
        bytes[at] = b"0123456789"[next() as usize % 10];
        if next() % 4 == 0 {
            let other = digits[next() as usize % digits.len()];
            bytes.swap(at, other);
        }
        let edited = String::from_utf8(bytes).unwrap();
        let file = tampered(&good, |_| edited.split_once(r#""program":"#).unwrap().1.to_string());
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match load(&file, &Device::Cpu) {
            Ok(m) => {
                // Whatever passed the checks runs (or fails with an error).
                let _ = m.run(std::slice::from_ref(&x));
                true
            }
            Err(_) => false,
        }));
        match outcome {
            Ok(true) => loaded += 1,
            Ok(false) => refused += 1,
            Err(_) => panic!("a damaged program panicked: {edited}"),
        }
    }
    assert!(refused > 0 && loaded > 0, "{loaded} loaded, {refused} refused");
}
