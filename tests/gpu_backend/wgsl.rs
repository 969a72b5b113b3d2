//! Every WGSL source the GPU backend can build validates with naga (DESIGN
//! principle 7), without a GPU: the catalog instantiates each template for
//! every registry row and dtype, plus each standalone shader. Besides naga's
//! own validation, each module must fit the WebGPU default limits, because a
//! browser grants no more than those unless asked (and skiff does not ask).
#![cfg(feature = "gpu")]

use naga::valid::{Capabilities, ValidationFlags, Validator};
use skiff::ops::gpu_kernel_sources as all_kernel_sources;

/// WebGPU's default limits (https://www.w3.org/TR/webgpu/#limits) that a
/// compute shader's source alone decides.
const MAX_INVOCATIONS_PER_WORKGROUP: u32 = 256;
const MAX_WORKGROUP_SIZE: [u32; 3] = [256, 256, 64];
const MAX_WORKGROUP_STORAGE_BYTES: u32 = 16384;
const MAX_STORAGE_BUFFERS_PER_STAGE: usize = 8;
const MAX_UNIFORM_BUFFERS_PER_STAGE: usize = 12;

/// Parses and validates one source; the error says what naga (or the limit check) found.
fn check(source: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    // Capabilities::default() is the WebGPU baseline: no optional features;
    // a kernel with f16 values (only built where the device has shader-f16) says so first.
    let mut caps =
        if source.starts_with("enable f16;") { Capabilities::SHADER_FLOAT16 } else { Capabilities::default() };
    // The blocked matmul's shared loads of B use subgroups, which only native
    // software adapters' devices enable.
    let subgroups = skiff::backend::shader_needs_subgroups(source);
    if subgroups {
        caps |= Capabilities::SUBGROUP;
    }
    let mut validator = Validator::new(ValidationFlags::all(), caps);
    if subgroups {
        validator
            .subgroup_stages(naga::valid::ShaderStages::COMPUTE)
            .subgroup_operations(naga::valid::SubgroupOperationSet::BALLOT);
    }
    validator.validate(&module).map_err(|e| e.emit_to_string(source))?;
    webgpu_limits(&module)
}

fn webgpu_limits(module: &naga::Module) -> Result<(), String> {
    let mut problems = Vec::new();
    let computes: Vec<_> = module.entry_points.iter().filter(|e| e.stage == naga::ShaderStage::Compute).collect();
    if computes.is_empty() {
        problems.push("no compute entry point".to_string());
    }
    for ep in &computes {
        let [x, y, z] = ep.workgroup_size;
        if x * y * z > MAX_INVOCATIONS_PER_WORKGROUP || (0..3).any(|d| ep.workgroup_size[d] > MAX_WORKGROUP_SIZE[d]) {
            problems.push(format!(
                "entry point '{}': workgroup size {:?} exceeds WebGPU's defaults ({MAX_WORKGROUP_SIZE:?}, \
                 {MAX_INVOCATIONS_PER_WORKGROUP} invocations)",
                ep.name, ep.workgroup_size
            ));
        }
    }
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).map_err(|e| format!("layout: {e}"))?;
    let (mut shared, mut storage, mut uniform) = (0u32, 0usize, 0usize);
    for (_, var) in module.global_variables.iter() {
        match var.space {
            naga::AddressSpace::WorkGroup => shared += layouter[var.ty].size,
            naga::AddressSpace::Storage { .. } => storage += 1,
            naga::AddressSpace::Uniform => uniform += 1,
            _ => {}
        }
    }
    // Counted over the whole module: an upper bound for each entry point.
    if shared > MAX_WORKGROUP_STORAGE_BYTES {
        problems.push(format!("{shared} bytes of workgroup memory > WebGPU's default {MAX_WORKGROUP_STORAGE_BYTES}"));
    }
    if storage > MAX_STORAGE_BUFFERS_PER_STAGE {
        problems
            .push(format!("{storage} storage buffers > WebGPU's default {MAX_STORAGE_BUFFERS_PER_STAGE} per stage"));
    }
    if uniform > MAX_UNIFORM_BUFFERS_PER_STAGE {
        problems
            .push(format!("{uniform} uniform buffers > WebGPU's default {MAX_UNIFORM_BUFFERS_PER_STAGE} per stage"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

#[test]
fn every_kernel_source_validates_with_naga() {
    let sources = all_kernel_sources();
    let mut names = std::collections::HashSet::new();
    let mut failures = Vec::new();
    for (name, src) in &sources {
        assert!(names.insert(name.as_str()), "kernel '{name}' appears twice in the catalog");
        if let Err(e) = check(src) {
            failures.push(format!("--- {name}:\n{e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} WGSL sources are invalid:\n{}",
        failures.len(),
        sources.len(),
        failures.join("\n")
    );
    eprintln!("wgsl: {} sources validated", sources.len());
}

/// Every registry row the GPU runs from a template is in the catalog (a row
/// without a kernel would fail only on a machine with a GPU).
#[test]
fn catalog_covers_every_elementwise_row() {
    let names: std::collections::HashSet<String> = all_kernel_sources().into_iter().map(|(n, _)| n).collect();
    let mut missing = Vec::new();
    for r in skiff::ops::unary::rows() {
        missing.extend(Some(format!("unary:{}", r.op.name)).filter(|k| !names.contains(k)));
    }
    for r in skiff::ops::binary::rows() {
        missing.extend(Some(format!("binary:{}:f32", r.op.name)).filter(|k| !names.contains(k)));
    }
    for r in skiff::ops::compare::rows() {
        for dt in ["f32", "i32", "bool"] {
            missing.extend(Some(format!("binary:{}:{dt}", r.op.name)).filter(|k| !names.contains(k)));
        }
    }
    assert!(missing.is_empty(), "kernels missing from the catalog: {missing:?}");
}

/// The validator itself is not vacuous: a broken template instantiation fails.
#[test]
fn an_invalid_expression_is_reported() {
    use skiff::backend::gpu::kernels::{Input, Lanes, Template};
    let bad = Template {
        inputs: vec![Input { name: "A", var: "x", dtype: skiff::DType::F32 }],
        out: skiff::DType::F32,
        expr: "x + 1u".into(),
        strided_out: false,
    };
    for lanes in [None, Some(&[Lanes::Vector][..]), Some(&[Lanes::Splat][..])] {
        let err = check(&bad.source(lanes)).expect_err("f32 + u32 must not validate");
        assert!(!err.is_empty());
    }
}
