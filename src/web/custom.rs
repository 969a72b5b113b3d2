//! Custom ops from JS (`skiff.customOp`, web/custom.js): the kernel
//! registered with JS functions as its cpu implementation and shape rule,
//! checked by the browser's WGSL compiler when WebGPU is open, and run one
//! call at a time for the wrapper, which makes it differentiable as a
//! `Function` with the user's JS backward.

use super::args::{self, thrown_text};
use super::runtime::gpu_device;
use super::{js_error, JsResult, JsTensor, Kind, Named, SingleThreaded};
use crate::custom::CustomOp;
use crate::kernel::custom::{self, CpuCall};
use crate::kernel::CustomKernel;
use js_sys::{Array, Float32Array, Float64Array};
use wasm_bindgen::prelude::*;

const OP: &str = "customOp";

fn dims_array(d: &[usize]) -> JsValue {
    d.iter().map(|&n| JsValue::from(n as f64)).collect::<Array>().into()
}

/// What a cpu function returned, as numbers: an Array of numbers, a
/// Float64Array or a Float32Array.
fn numbers(v: &JsValue) -> Result<Vec<f64>, String> {
    if let Some(a) = v.dyn_ref::<Float64Array>() {
        return Ok(a.to_vec());
    }
    if let Some(a) = v.dyn_ref::<Float32Array>() {
        return Ok(a.to_vec().into_iter().map(f64::from).collect());
    }
    let Some(list) = args::as_array(v) else {
        return Err(format!(
            "it must return an Array, Float32Array or Float64Array of numbers, got {}",
            args::describe(v)
        ));
    };
    list.iter()
        .enumerate()
        .map(|(i, x)| x.as_f64().ok_or_else(|| format!("element {i} of what it returned is {}", args::describe(&x))))
        .collect()
}

/// Registers a kernel: `cpu(datas, shapes, scalars, outShape)` returns the
/// output's elements; `shape(shapes)` (optional) the output's shape. The
/// WGSL is compiled by `compileCustomOp`, not here (it needs to await).
#[wasm_bindgen(js_name = registerCustomOp, skip_typescript)]
pub fn register_custom_op(
    name: JsValue,
    inputs: JsValue,
    scalars: JsValue,
    wgsl: JsValue,
    cpu: JsValue,
    shape: JsValue,
) -> JsResult<()> {
    let name = args::string_arg(OP, "name", &name)?;
    let inputs = args::usize_arg(OP, "inputs", &inputs)?;
    let scalars = args::usize_arg(OP, "scalars", &scalars)?;
    let wgsl = args::string_arg(OP, "wgsl", &wgsl)?;
    let cpu = SingleThreaded(args::function_arg(OP, "cpu", &cpu)?);
    let shape = match shape.is_undefined() || shape.is_null() {
        true => None,
        false => Some(SingleThreaded(args::function_arg(OP, "shape", &shape)?)),
    };
    let cpu_fn = move |c: &CpuCall| -> Result<Vec<f64>, String> {
        let datas: Array = c.inputs.iter().map(|i| JsValue::from(Float64Array::from(&i.data[..]))).collect();
        let shapes: Array = c.inputs.iter().map(|i| dims_array(&i.shape)).collect();
        let call_args = Array::of4(&datas, &shapes, &Float64Array::from(c.scalars), &dims_array(c.out_shape));
        let out = cpu.0.apply(&JsValue::NULL, &call_args).map_err(|e| format!("it threw: {}", thrown_text(&e)))?;
        numbers(&out)
    };
    let shape_fn = shape.map(|f| {
        Box::new(move |shapes: &[&[usize]]| -> Result<Vec<usize>, String> {
            let list: Array = shapes.iter().map(|s| dims_array(s)).collect();
            let out =
                f.0.call1(&JsValue::NULL, &list)
                    .map_err(|e| format!("its shape function threw: {}", thrown_text(&e)))?;
            let bad = || {
                format!(
                    "its shape function must return an array of non-negative integers, got {}",
                    args::describe(&out)
                )
            };
            let list = args::as_array(&out).ok_or_else(bad)?;
            list.iter()
                .map(|v| {
                    v.as_f64().filter(|n| *n >= 0.0 && n.fract() == 0.0 && *n <= u32::MAX as f64).map(|n| n as usize)
                })
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(bad)
        }) as Box<custom::ShapeFn>
    });
    let kernel = CustomKernel {
        name: crate::kernel::intern(&name),
        inputs,
        scalars,
        wgsl,
        cpu: Box::new(cpu_fn),
        shape: shape_fn,
    };
    kernel.check().named(OP)?;
    custom::register(kernel).named(OP)?;
    Ok(())
}

/// Compiles a registered kernel with the browser's WGSL compiler when WebGPU
/// is open (an error points at the user's line, and the op is forgotten);
/// without WebGPU there is nothing to compile.
#[wasm_bindgen(js_name = compileCustomOp, skip_typescript)]
pub async fn compile_custom_op(name: JsValue) -> JsResult<()> {
    let name = args::string_arg(OP, "name", &name)?;
    let op = CustomOp::find(&name)
        .ok_or_else(|| js_error(OP, Kind::Argument, format!("no custom op {name:?} is registered")))?;
    let Ok(gpu) = gpu_device(OP) else { return Ok(()) };
    if let Err(e) = op.compile(&gpu).await {
        custom::unregister(&name);
        return Err(e).named(OP);
    }
    Ok(())
}

/// One forward call of a registered kernel (no recording: the wrapper's
/// `Function` records it).
#[wasm_bindgen(js_name = callCustomOp, skip_typescript)]
pub fn call_custom_op(name: JsValue, inputs: JsValue, scalars: JsValue) -> JsResult<JsTensor> {
    let name = args::string_arg(OP, "name", &name)?;
    let kernel = custom::find(&name)
        .ok_or_else(|| js_error(OP, Kind::Argument, format!("no custom op {name:?} is registered")))?;
    let op = kernel.name;
    let inputs = args::tensors(op, "inputs", &inputs)?;
    let Some(list) = args::as_array(&scalars) else {
        return Err(js_error(
            op,
            Kind::Argument,
            format!("scalars must be an array of numbers, got {}", args::describe(&scalars)),
        ));
    };
    let scalars = list
        .iter()
        .enumerate()
        .map(|(i, v)| args::number(op, &format!("scalars[{i}]"), &v))
        .collect::<JsResult<Vec<f64>>>()?;
    let refs: Vec<&crate::tensor::Tensor> = inputs.iter().collect();
    crate::dispatch::custom::run(&kernel, &refs, &scalars).named(op).map(JsTensor::wrap)
}
