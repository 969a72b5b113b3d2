//! skiff::io: safetensors files and checkpoints, datasets and the DataLoader,
//! and the MNIST IDX reader. Bad input gives an `Error`, never a panic.

use crate::common;
use crate::common::{check_err, expect_err, Kind};

use safetensors::tensor::{Dtype as StDtype, TensorView};
use skiff::io::data::{collate, Dataset, Sample};
use skiff::io::{mnist, safetensors as st, DataLoader, Mnist, TensorDataset};
use skiff::{DType, Device, Error, Result, Tensor};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("skiff-io-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn named(entries: Vec<(&str, Tensor)>) -> Vec<(String, Tensor)> {
    entries.into_iter().map(|(n, t)| (n.to_string(), t)).collect()
}

fn assert_same(a: &Tensor, b: &Tensor) {
    assert_eq!(a.shape(), b.shape());
    assert_eq!(a.dtype(), b.dtype());
    assert_eq!(a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap());
}

fn every_dtype() -> Vec<(String, Tensor)> {
    named(vec![
        ("a.f32", Tensor::from_vec(vec![1.5f32, -2.25, 3.0e-8, f32::MAX, 0.0, -0.0], &[2, 3]).unwrap()),
        ("b.f64", Tensor::from_vec(vec![std::f64::consts::PI, -1e300, 5.0], &[3]).unwrap()),
        ("c.i32", Tensor::from_vec(vec![i32::MIN, -1, 0, 7, i32::MAX, 42], &[3, 1, 2]).unwrap()),
        ("d.bool", Tensor::from_bools(&[true, false, false, true], &[2, 2]).unwrap()),
        ("e.scalar", Tensor::scalar(0.5, DType::F32)),
        ("f.empty", Tensor::zeros(&[0, 4], DType::F32).unwrap()),
        // A non-contiguous view is written in row-major order of its shape.
        (
            "g.transposed",
            Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap().transpose(0, 1).unwrap(),
        ),
    ])
}

#[test]
fn safetensors_round_trips_every_dtype_through_bytes_and_files() {
    let entries = every_dtype();
    let bytes = st::to_bytes(&entries).unwrap();
    let back = st::from_bytes(&bytes, &Device::Cpu).unwrap();
    assert_eq!(back.len(), entries.len());
    // Loaded tensors come back sorted by name (the names above are sorted).
    for ((n0, t0), (n1, t1)) in entries.iter().zip(&back) {
        assert_eq!(n0, n1);
        assert_same(t0, t1);
    }
    assert_eq!(back[6].1.to_vec::<f32>().unwrap(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);

    let path = temp_path("every_dtype.safetensors");
    st::save(&path, &entries).unwrap();
    let loaded = st::load(&path, &Device::Cpu).unwrap();
    for ((n0, t0), (n1, t1)) in entries.iter().zip(&loaded) {
        assert_eq!(n0, n1);
        assert_same(t0, t1);
    }
    // Metadata survives.
    let meta = HashMap::from([("author".to_string(), "skiff".to_string())]);
    let bytes = st::to_bytes_with_metadata(&entries[..1], meta.clone()).unwrap();
    assert_eq!(st::from_bytes_with_metadata(&bytes, &Device::Cpu).unwrap().1, meta);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn safetensors_saves_gpu_tensors_and_loads_onto_a_gpu() {
    let Some(gpu) = common::gpu() else { return };
    let w = Tensor::from_vec(vec![0.25f32, -1.0, 8.0, 3.5], &[2, 2]).unwrap();
    let labels = Tensor::from_vec(vec![3i32, 1, 4], &[3]).unwrap();
    let entries =
        named(vec![("labels", labels.to(&gpu).unwrap()), ("w", w.to(&gpu).unwrap().mul_scalar(2.0).unwrap())]);
    let bytes = st::to_bytes(&entries).unwrap();
    let on_cpu = st::from_bytes(&bytes, &Device::Cpu).unwrap();
    assert_same(&on_cpu[0].1, &labels);
    assert_eq!(on_cpu[1].1.to_vec::<f32>().unwrap(), vec![0.5, -2.0, 16.0, 7.0]);
    let on_gpu = st::from_bytes(&bytes, &gpu).unwrap();
    assert_eq!(on_gpu[1].1.device(), gpu);
    assert_eq!(on_gpu[1].1.to_vec::<f32>().unwrap(), vec![0.5, -2.0, 16.0, 7.0]);
    // A DataLoader moves its batches to the GPU.
    let ds = TensorDataset::new(vec![w, Tensor::from_vec(vec![0i32, 1], &[2]).unwrap()]).unwrap();
    let loader = DataLoader::new(ds, 2).unwrap().device(&gpu);
    let (x, y) = loader.epoch(0).next().unwrap().unwrap();
    assert_eq!((x.device(), y.device()), (gpu.clone(), gpu));
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![0.25, -1.0, 8.0, 3.5]);
}

#[test]
fn a_file_written_by_the_safetensors_crate_loads() {
    // As PyTorch would write it: f32 weights, i64 labels, a bool mask.
    let w: Vec<u8> = [1.0f32, 2.0, -3.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let y: Vec<u8> = [5i64, -7, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
    let m = vec![1u8, 0, 1, 1];
    let views = vec![
        ("weight", TensorView::new(StDtype::F32, vec![3], &w).unwrap()),
        ("labels", TensorView::new(StDtype::I64, vec![1, 3], &y).unwrap()),
        ("mask", TensorView::new(StDtype::BOOL, vec![2, 2], &m).unwrap()),
    ];
    let bytes = safetensors::serialize(views, None).unwrap();
    let back = st::from_bytes(&bytes, &Device::Cpu).unwrap();
    let names: Vec<&str> = back.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["labels", "mask", "weight"]);
    assert_eq!(back[0].1.shape(), &[1, 3]);
    assert_eq!(back[0].1.to_vec::<i32>().unwrap(), vec![5, -7, 9]);
    assert_eq!(back[1].1.dtype(), DType::Bool);
    assert_eq!(back[1].1.to_f64_vec().unwrap(), vec![1.0, 0.0, 1.0, 1.0]);
    assert_eq!(back[2].1.to_vec::<f32>().unwrap(), vec![1.0, 2.0, -3.0]);

    // i64 values beyond i32, and dtypes skiff lacks, are errors.
    let big: Vec<u8> = (i64::from(i32::MAX) + 1).to_le_bytes().to_vec();
    let bytes = safetensors::serialize([("x", TensorView::new(StDtype::I64, vec![1], &big).unwrap())], None).unwrap();
    expect_err(
        st::from_bytes(&bytes, &Device::Cpu),
        Kind::Value,
        "safetensors",
        &["tensor \"x\": I64 value 2147483648 does not fit in i32"],
    );
    // f16 as PyTorch writes it (little-endian IEEE half): 1.0, -2.0.
    let half = vec![0x00u8, 0x3c, 0x00, 0xc0];
    let bytes = safetensors::serialize([("h", TensorView::new(StDtype::F16, vec![2], &half).unwrap())], None).unwrap();
    let back = st::from_bytes(&bytes, &Device::Cpu).unwrap();
    assert_eq!(back[0].1.dtype(), DType::F16);
    assert_eq!(back[0].1.to_f64_vec().unwrap(), vec![1.0, -2.0]);
    let bf16 = vec![0u8; 4];
    let bytes = safetensors::serialize([("b", TensorView::new(StDtype::BF16, vec![2], &bf16).unwrap())], None).unwrap();
    let facts = ["tensor \"b\" has dtype BF16", "skiff reads F32, F64, F16, I32, I64 (narrowed) and BOOL"];
    expect_err(st::from_bytes(&bytes, &Device::Cpu), Kind::DType, "safetensors", &facts);
}

fn header_file(header: &str, data_len: usize) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend(std::iter::repeat_n(0u8, data_len));
    out
}

#[test]
fn truncated_garbage_and_lying_safetensors_are_errors_not_panics() {
    let good = st::to_bytes(&every_dtype()).unwrap();
    for cut in 0..good.len() {
        // The parser's own reason (header too small, invalid length, file not covered) follows.
        expect_err(
            st::from_bytes(&good[..cut], &Device::Cpu),
            Kind::Value,
            "safetensors",
            &["invalid safetensors data: "],
        );
    }
    let mut longer = good.clone();
    longer.push(0);
    expect_err(
        st::from_bytes(&longer, &Device::Cpu),
        Kind::Value,
        "safetensors",
        &["incomplete metadata, file not fully covered"],
    );

    let mut s = 0x1234_5678_9abc_def0u64;
    for len in [1usize, 8, 9, 64, 1000] {
        let garbage: Vec<u8> = (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
            .collect();
        expect_err(st::from_bytes(&garbage, &Device::Cpu), Kind::Value, "safetensors", &["invalid safetensors data: "]);
    }
    expect_err(
        st::from_bytes(&[0xff; 64], &Device::Cpu),
        Kind::Value,
        "safetensors",
        &["invalid safetensors data: header too large"],
    );

    // The safetensors crate's reasons (it does not name the tensor for the first two).
    let invalid = "invalid shape, data type, or offset for tensor";
    let lies = [
        // Offsets past the data.
        (r#"{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,64]}}"#, 16, invalid),
        // Shape needs more bytes than the offsets span.
        (r#"{"x":{"dtype":"F32","shape":[100],"data_offsets":[0,16]}}"#, 16, invalid),
        // Shape whose element count overflows.
        (
            r#"{"x":{"dtype":"F64","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}}"#,
            8,
            "overflow computing buffer size",
        ),
        // Not JSON, unknown dtype.
        (r#"{"x": nope"#, 0, "invalid JSON in header: expected ident"),
        (r#"{"x":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}}"#, 1, "unknown variant `Q7`"),
    ];
    for (header, data, want) in lies {
        expect_err(st::from_bytes(&header_file(header, data), &Device::Cpu), Kind::Value, "safetensors", &[want]);
    }
    // A header length far beyond the file.
    let mut huge = u64::MAX.to_le_bytes().to_vec();
    huge.extend_from_slice(b"{}");
    expect_err(
        st::from_bytes(&huge, &Device::Cpu),
        Kind::Value,
        "safetensors",
        &["invalid safetensors data: header too large"],
    );

    let missing = temp_path("does-not-exist.safetensors");
    expect_err(
        st::load(&missing, &Device::Cpu),
        Kind::Value,
        "safetensors",
        &[&format!("reading {}: ", missing.display())],
    );
    let dup =
        named(vec![("w", Tensor::ones(&[1], DType::F32).unwrap()), ("w", Tensor::ones(&[1], DType::F32).unwrap())]);
    expect_err(st::to_bytes(&dup), Kind::Value, "safetensors", &["tensor name \"w\" appears twice"]);
}

#[test]
fn checkpoints_round_trip_model_optimizer_and_step() {
    let model = named(vec![
        ("fc1.weight", Tensor::from_vec(vec![0.1f32, 0.2, 0.3, 0.4], &[2, 2]).unwrap()),
        ("fc1.bias", Tensor::from_vec(vec![-0.5f32, 0.5], &[2]).unwrap()),
    ]);
    let optim = named(vec![
        ("0.exp_avg", Tensor::full(&[2, 2], 0.01, DType::F32).unwrap()),
        ("0.step", Tensor::scalar(3.0, DType::F32)),
    ]);
    let path = temp_path("ckpt.safetensors");
    st::save_checkpoint(&path, &model, &optim, u64::MAX - 1).unwrap();
    let ck = st::load_checkpoint(&path, &Device::Cpu).unwrap();
    assert_eq!(ck.step, u64::MAX - 1);
    let names: Vec<&str> = ck.model.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["fc1.bias", "fc1.weight"]);
    assert_same(&ck.model[0].1, &model[1].1);
    assert_same(&ck.model[1].1, &model[0].1);
    let names: Vec<&str> = ck.optimizer.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["0.exp_avg", "0.step"]);
    assert_same(&ck.optimizer[0].1, &optim[0].1);
    // The file is plain safetensors with prefixed names.
    let raw = st::load(&path, &Device::Cpu).unwrap();
    assert_eq!(raw[0].0, "model.fc1.bias");
    // A plain weights file is not a checkpoint.
    let plain = temp_path("plain.safetensors");
    st::save(&plain, &model).unwrap();
    let facts = [format!("{} is not a skiff checkpoint (no `step` metadata)", plain.display())];
    expect_err(st::load_checkpoint(&plain, &Device::Cpu), Kind::Value, "safetensors", &[&facts[0]]);
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(&plain).unwrap();
}

fn toy(n: usize) -> TensorDataset {
    let x = Tensor::from_vec((0..n * 3).map(|v| v as f32).collect(), &[n, 3]).unwrap();
    let y = Tensor::from_vec((0..n as i32).collect(), &[n]).unwrap();
    TensorDataset::new(vec![x, y]).unwrap()
}

fn epoch_labels(loader: &DataLoader, epoch: u64) -> Vec<Vec<i32>> {
    loader.epoch(epoch).map(|b| b.unwrap().1.to_vec::<i32>().unwrap()).collect()
}

#[test]
fn tensor_dataset_indexes_the_first_axis() {
    let ds = toy(5);
    assert_eq!(ds.len(), 5);
    let s = ds.get(2).unwrap();
    assert_eq!(s[0].shape(), &[3]);
    assert_eq!(s[0].to_vec::<f32>().unwrap(), vec![6.0, 7.0, 8.0]);
    assert_eq!(s[1].shape(), &[] as &[usize]);
    assert_eq!(s[1].item().unwrap(), 2.0);
    expect_err(ds.get(5), Kind::Value, "TensorDataset::get", &["index 5 out of range for 5 samples"]);
    expect_err(ds.get_batch(&[0, 9]), Kind::Value, "TensorDataset::get", &["index 9 out of range for 5 samples"]);
    let mismatched = vec![Tensor::zeros(&[4, 2], DType::F32).unwrap(), Tensor::zeros(&[3], DType::F32).unwrap()];
    let facts = ["same first axis, got shapes [4, 2] and [3]"];
    expect_err(TensorDataset::new(mismatched), Kind::Shape, "TensorDataset", &facts);
    expect_err(TensorDataset::new(vec![]), Kind::Value, "TensorDataset", &["needs at least one tensor"]);
    let facts = ["tensors need at least one axis, got shape []"];
    expect_err(TensorDataset::new(vec![Tensor::scalar(1.0, DType::F32)]), Kind::Shape, "TensorDataset", &facts);
}

#[test]
fn collate_stacks_fields_and_batch_shapes_follow_batch_size() {
    let ds = toy(10);
    let b = collate(&[ds.get(1).unwrap(), ds.get(4).unwrap()]).unwrap();
    assert_eq!(b[0].shape(), &[2, 3]);
    assert_eq!(b[0].to_vec::<f32>().unwrap(), vec![3.0, 4.0, 5.0, 12.0, 13.0, 14.0]);
    assert_eq!(b[1].to_vec::<i32>().unwrap(), vec![1, 4]);
    // The dataset's own get_batch agrees with collating single samples.
    let fast = ds.get_batch(&[1, 4]).unwrap();
    assert_same(&fast[0], &b[0]);
    assert_same(&fast[1], &b[1]);
    expect_err(collate(&[]), Kind::Value, "collate", &["needs at least one sample"]);
    let facts = ["samples have different numbers of fields (1 and 0)"];
    expect_err(collate(&[vec![Tensor::ones(&[2], DType::F32).unwrap()], vec![]]), Kind::Value, "collate", &facts);

    let loader = DataLoader::new(ds, 4).unwrap();
    let shapes: Vec<(Vec<usize>, Vec<usize>)> =
        loader.epoch(0).map(|b| b.unwrap()).map(|(x, y)| (x.shape().to_vec(), y.shape().to_vec())).collect();
    assert_eq!(shapes, [(vec![4, 3], vec![4]), (vec![4, 3], vec![4]), (vec![2, 3], vec![2])]);
    expect_err(DataLoader::new(toy(3), 0), Kind::Value, "DataLoader", &["batch_size must be at least 1, got 0"]);
}

#[test]
fn drop_last_controls_the_final_partial_batch() {
    let keep = DataLoader::new(toy(10), 3).unwrap().prefetch(0);
    assert_eq!(keep.num_batches(), 4);
    let sizes: Vec<usize> = epoch_labels(&keep, 0).iter().map(Vec::len).collect();
    assert_eq!(sizes, [3, 3, 3, 1]);
    let drop = keep.clone().drop_last(true);
    assert_eq!(drop.num_batches(), 3);
    assert_eq!(epoch_labels(&drop, 0), [vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8]]);
    // An exact multiple loses nothing either way.
    let exact = DataLoader::new(toy(9), 3).unwrap().drop_last(true);
    assert_eq!(epoch_labels(&exact, 0).concat(), (0..9).collect::<Vec<_>>());
    // Fewer samples than one batch: one short batch, or none.
    assert_eq!(epoch_labels(&DataLoader::new(toy(2), 5).unwrap(), 0), [vec![0, 1]]);
    assert!(epoch_labels(&DataLoader::new(toy(2), 5).unwrap().drop_last(true), 0).is_empty());
}

#[test]
fn seeded_shuffle_covers_each_sample_once_and_changes_per_epoch() {
    let loader = DataLoader::new(toy(50), 8).unwrap().shuffle(1234);
    let mut orders = Vec::new();
    for epoch in 0..4 {
        let seen = epoch_labels(&loader, epoch).concat();
        assert_eq!(seen.len(), 50);
        assert_eq!(seen.iter().copied().collect::<BTreeSet<_>>(), (0..50).collect::<BTreeSet<_>>());
        assert_ne!(seen, (0..50).collect::<Vec<_>>(), "epoch {epoch} was not shuffled");
        orders.push(seen);
    }
    for i in 0..orders.len() {
        for j in i + 1..orders.len() {
            assert_ne!(orders[i], orders[j], "epochs {i} and {j} share an order");
        }
    }
    // The same seed reproduces every epoch; another seed does not.
    let again = DataLoader::new(toy(50), 8).unwrap().shuffle(1234);
    assert_eq!(epoch_labels(&again, 2).concat(), orders[2]);
    let other = DataLoader::new(toy(50), 8).unwrap().shuffle(99);
    assert_ne!(epoch_labels(&other, 2).concat(), orders[2]);
    // Inputs stay paired with their targets.
    for b in loader.epoch(1) {
        let (x, y) = b.unwrap();
        let want: Vec<f32> =
            y.to_vec::<i32>().unwrap().iter().flat_map(|&i| (0..3).map(move |k| (i * 3 + k) as f32)).collect();
        assert_eq!(x.to_vec::<f32>().unwrap(), want);
    }
}

#[test]
fn prefetch_yields_the_same_batches_as_inline_loading() {
    let base = DataLoader::new(toy(37), 5).unwrap().shuffle(7);
    for epoch in 0..3 {
        let inline: Vec<Sample> = base.clone().prefetch(0).batches(epoch).map(|b| b.unwrap()).collect();
        let ahead: Vec<Sample> = base.clone().prefetch(3).batches(epoch).map(|b| b.unwrap()).collect();
        assert_eq!(inline.len(), 8);
        assert_eq!(inline.len(), ahead.len());
        for (a, b) in inline.iter().zip(&ahead) {
            assert_same(&a[0], &b[0]);
            assert_same(&a[1], &b[1]);
        }
    }
    // Stopping early does not hang (the worker is unblocked and joined).
    let mut it = base.clone().prefetch(1).batches(0);
    assert!(it.next().is_some());
    drop(it);
}

/// A dataset with three fields whose reads fail at one index.
struct Flaky;
impl Dataset for Flaky {
    fn len(&self) -> usize {
        6
    }
    fn get(&self, i: usize) -> Result<Sample> {
        if i == 4 {
            return Err(Error::Value { op: "Flaky", msg: "sample 4 is unreadable".into() });
        }
        let v = Tensor::from_vec(vec![i as f32], &[1])?;
        Ok(vec![v.clone(), v.clone(), v])
    }
}

#[test]
fn dataset_errors_reach_the_consumer_through_prefetch() {
    for prefetch in [0, 2] {
        let loader = DataLoader::new(Flaky, 2).unwrap().prefetch(prefetch);
        let batches: Vec<Result<Sample>> = loader.batches(0).collect();
        assert_eq!(batches.len(), 3);
        assert_eq!(batches[0].as_ref().unwrap().len(), 3);
        // The dataset's own error, unchanged by the prefetch thread.
        check_err(batches[2].as_ref().unwrap_err(), Kind::Value, "Flaky", &["sample 4 is unreadable"]);
        // epoch() wants (input, target) pairs.
        let facts = ["samples have 3 fields, not 2; use batches()"];
        expect_err(loader.epoch(0).next().unwrap(), Kind::Value, "DataLoader::epoch", &facts);
    }
}

fn idx(magic: [u8; 4], dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = magic.to_vec();
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

#[test]
fn idx_files_read_as_images_and_labels() {
    let dir = temp_path("mnist-small");
    std::fs::create_dir_all(&dir).unwrap();
    let pixels: Vec<u8> = (0..3 * 28 * 28).map(|i| (i % 256) as u8).collect();
    std::fs::write(dir.join("t10k-images-idx3-ubyte"), idx([0, 0, 8, 3], &[3, 28, 28], &pixels)).unwrap();
    std::fs::write(dir.join("t10k-labels-idx1-ubyte"), idx([0, 0, 8, 1], &[3], &[7, 0, 9])).unwrap();
    let m = Mnist::load(&dir, false).unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(m.images.shape(), &[3, 1, 28, 28]);
    assert_eq!(m.images.dtype(), DType::F32);
    let v = m.images.to_vec::<f32>().unwrap();
    assert_eq!((v[0], v[1], v[255]), (0.0, 1.0 / 255.0, 1.0));
    assert_eq!(m.labels.to_vec::<i32>().unwrap(), vec![7, 0, 9]);
    let (x, y) = DataLoader::new(m.dataset().unwrap(), 2).unwrap().epoch(0).next().unwrap().unwrap();
    assert_eq!((x.shape(), y.shape()), (&[2, 1, 28, 28][..], &[2][..]));
    // The train split is missing: the error names the file and the fix.
    let file = dir.join("train-images-idx3-ubyte");
    let facts = [format!("cannot read {}: ", file.display()), "(run `npm run data` to create data/mnist)".to_string()];
    expect_err(Mnist::load(&dir, true), Kind::Value, "mnist", &[&facts[0], &facts[1]]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_idx_files_are_clear_errors() {
    let labels = idx([0, 0, 8, 1], &[4], &[1, 2, 3, 4]);
    assert_eq!(mnist::labels_from_idx(&labels, "ok").unwrap().to_vec::<i32>().unwrap(), vec![1, 2, 3, 4]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (idx([1, 2, 8, 1], &[4], &[1, 2, 3, 4]), "bad IDX magic 01020801 (expected 0000 08 nd)"),
        (idx([0, 0, 0x0d, 1], &[1], &[0; 4]), "IDX element type 0x0d is not unsigned byte (0x08)"),
        (vec![0, 0], "2 bytes is too short for an IDX header"),
        (idx([0, 0, 8, 3], &[], &[]), "truncated IDX header (4 of 16 bytes)"),
        (labels[..10].to_vec(), "IDX dimensions [4] need 4 data bytes, the file has 2"),
        (idx([0, 0, 8, 1], &[2], &[1, 2, 3]), "IDX dimensions [2] need 2 data bytes, the file has 3"),
        (idx([0, 0, 8, 3], &[1, 2, 2], &[0; 4]), "label files have 1 dimension, this one has [1, 2, 2]"),
    ];
    for (bytes, want) in cases {
        expect_err(
            mnist::labels_from_idx(&bytes, "labels.idx"),
            Kind::Value,
            "mnist",
            &[&format!("labels.idx: {want}")],
        );
    }
    let facts = ["img: image files have 3 dimensions, this one has [4]"];
    expect_err(mnist::images_from_idx(&labels, "img"), Kind::Value, "mnist", &facts);
    let huge_dims = idx([0, 0, 8, 4], &[u32::MAX; 4], &[]);
    let facts = ["big: IDX dimensions [4294967295, 4294967295, 4294967295, 4294967295] overflow"];
    expect_err(mnist::parse_idx(&huge_dims, "big"), Kind::Value, "mnist", &facts);
}

#[test]
fn the_converted_mnist_data_loads_when_present() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mnist");
    if !dir.join("train-images-idx3-ubyte").exists() {
        // npm test converts the digits first: there, missing data is a broken step.
        assert!(!common::required(), "{} is missing: run npm run data", dir.display());
        eprintln!("SKIPPED: {} is missing (npm run data)", dir.display());
        return;
    }
    let (train, test) = (Mnist::load(&dir, true).unwrap(), Mnist::load(&dir, false).unwrap());
    assert_eq!((train.len(), test.len()), (8000, 2000));
    assert_eq!(train.images.shape(), &[8000, 1, 28, 28]);
    for split in [&train, &test] {
        let labels = split.labels.to_vec::<i32>().unwrap();
        let mut counts = [0usize; 10];
        labels.iter().for_each(|&l| counts[l as usize] += 1);
        assert!(counts.iter().all(|&c| c > split.len() / 20), "{counts:?}");
        let px = split.images.to_vec::<f32>().unwrap();
        assert!(px.iter().all(|&p| (0.0..=1.0).contains(&p)));
        let mean = px.iter().sum::<f32>() / px.len() as f32;
        assert!((0.05..0.3).contains(&mean), "mean pixel {mean}");
    }
}

// ---- DistributedSampler -------------------------------------------------------

fn shards(n: usize, world: usize, drop_tail: bool, epoch: u64) -> Vec<Vec<usize>> {
    let data = TensorDataset::new(vec![Tensor::from_vec((0..n as i32).collect::<Vec<i32>>(), &[n]).unwrap()]).unwrap();
    (0..world)
        .map(|r| {
            let s = skiff::io::DistributedSampler::new(r, world).unwrap().drop_tail(drop_tail);
            DataLoader::new(data.clone(), 3).unwrap().shuffle(4).distributed(s).indices(epoch)
        })
        .collect()
}

#[test]
fn distributed_sampler_pads_so_every_rank_gets_as_many_samples() {
    for (n, world) in [(10, 3), (12, 4), (2, 3), (7, 1)] {
        let s = shards(n, world, false, 0);
        let per = n.div_ceil(world);
        assert!(s.iter().all(|x| x.len() == per), "{n} over {world}: {s:?}");
        let mut all: Vec<usize> = s.concat();
        all.sort();
        all.dedup();
        assert_eq!(all, (0..n).collect::<Vec<_>>(), "{n} over {world}: every sample in some shard");
    }
    // Shard r takes positions r, r + world, ... of the shared permutation.
    let data = TensorDataset::new(vec![Tensor::zeros(&[10], DType::F32).unwrap()]).unwrap();
    let whole = DataLoader::new(data, 3).unwrap().shuffle(4).indices(2);
    let s = shards(10, 3, false, 2);
    assert_eq!(s[1], vec![whole[1], whole[4], whole[7], whole[0]], "padding repeats the order's start");
}

#[test]
fn distributed_sampler_drop_tail_cuts_to_a_multiple_and_shards_are_disjoint() {
    let s = shards(10, 3, true, 1);
    assert!(s.iter().all(|x| x.len() == 3));
    let mut all: Vec<usize> = s.concat();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 9, "disjoint: {s:?}");
    let data = TensorDataset::new(vec![Tensor::zeros(&[10], DType::F32).unwrap()]).unwrap();
    let sampler = skiff::io::DistributedSampler::new(2, 3).unwrap();
    assert_eq!(DataLoader::new(data.clone(), 3).unwrap().distributed(sampler).num_batches(), 2); // 4 samples
    let cut = DataLoader::new(data, 3).unwrap().drop_last(true).distributed(sampler.drop_tail(true));
    assert_eq!(cut.num_batches(), 1); // 3 samples, one full batch
    let e = skiff::io::DistributedSampler::new(3, 3).map(|_| ());
    expect_err(e, Kind::Value, "DistributedSampler", &["rank 3", "world of 3"]);
}
