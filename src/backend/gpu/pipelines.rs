//! Kernel pipelines and their bind groups. A pipeline is compiled once per
//! key (kernel, dtype, specialisation) with an explicit bind group layout
//! read from its WGSL (binding 0: the params ring at a dynamic offset), so
//! bind groups depend only on (pipeline, buffers) and are cached.

use super::context;
use super::runtime::{GpuContext, PARAM_BYTES};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The explicit bind group layout of a kernel and its cached bind groups.
pub(crate) struct KernelLayout {
    pub(crate) layout: wgpu::BindGroupLayout,
    pub(crate) bind_groups: HashMap<Vec<wgpu::Buffer>, wgpu::BindGroup>,
}

/// Bind groups cached per kernel before the cache is cleared (buffers held by
/// cached bind groups stay alive, so the cache must not grow without bound).
const MAX_CACHED_BIND_GROUPS: usize = 1024;

/// Reads the storage bindings a WGSL source declares: (binding, read-only).
fn storage_bindings(src: &str) -> Vec<(u32, bool)> {
    let mut out = Vec::new();
    for (i, _) in src.match_indices("@binding(") {
        let rest = &src[i + 9..];
        let Some(close) = rest.find(')') else { continue };
        let Ok(n) = rest[..close].trim().parse::<u32>() else { continue };
        let decl = rest[close..].split(';').next().unwrap_or("");
        if let Some(k) = decl.find("var<storage") {
            let access = &decl[k..];
            out.push((n, !access.contains("read_write")));
        }
    }
    out
}

impl GpuContext {
    /// The cached pipeline for `key`, compiling `source()` on first use.
    /// A kernel that fails validation is an error for the op that needed it,
    /// and leaves the context usable.
    pub(crate) fn pipeline(&self, key: &str, source: impl FnOnce() -> String) -> Result<Arc<wgpu::ComputePipeline>> {
        self.build(key, source, wgpu::ShaderRuntimeChecks::checked())
    }

    /// `pipeline`, its kernel built without wgpu's shader runtime checks
    /// (bounds clamps on every storage and workgroup access, loop bounding,
    /// guarded divisions), which cost the tiled matmul a quarter of its speed
    /// on a real GPU (benches/HISTORY.md).
    ///
    /// # Safety
    ///
    /// Every index the kernel computes must lie inside its bindings for every
    /// parameter block it is dispatched with, its loops must end and its
    /// divisors must not be 0: the caller checks what the kernel relies on
    /// before each dispatch (as `matmul::product` checks each operand's
    /// layout against its buffer).
    pub(crate) unsafe fn pipeline_unchecked(
        &self,
        key: &str,
        source: impl FnOnce() -> String,
    ) -> Result<Arc<wgpu::ComputePipeline>> {
        self.build(key, source, wgpu::ShaderRuntimeChecks::unchecked())
    }

    fn build(
        &self,
        key: &str,
        source: impl FnOnce() -> String,
        checks: wgpu::ShaderRuntimeChecks,
    ) -> Result<Arc<wgpu::ComputePipeline>> {
        if let Some(p) = lock(&self.pipelines).get(key) {
            return Ok(p.clone());
        }
        let mut src = source();
        if self.subgroups_by_directive && super::matmul::uses_subgroups(&src) {
            // A browser device with subgroups the page asked for: Tint wants the directive.
            src.insert_str(0, "enable subgroups;\n");
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut entries = vec![wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: true,
                min_binding_size: wgpu::BufferSize::new(PARAM_BYTES),
            },
            count: None,
        }];
        for (binding, read_only) in storage_bindings(&src) {
            entries.push(wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            });
        }
        let layout = self
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(key), entries: &entries });
        let pipeline_layout = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(key),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let desc = wgpu::ShaderModuleDescriptor { label: Some(key), source: wgpu::ShaderSource::Wgsl(src.into()) };
        // SAFETY: `checks` is `checked()` unless the caller of
        // `pipeline_unchecked` took on what the checks guard.
        let module = unsafe { self.device.create_shader_module_trusted(desc, checks) };
        let p = Arc::new(self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(key),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        }));
        if let Some(e) = context::scope_error(scope) {
            return Err(Error::gpu("gpu", format!("kernel '{key}' failed to compile: {e}")));
        }
        self.counters.pipelines_compiled.fetch_add(1, Ordering::Relaxed);
        lock(&self.layouts).insert((*p).clone(), KernelLayout { layout, bind_groups: HashMap::new() });
        lock(&self.pipelines).insert(key.to_string(), p.clone());
        Ok(p)
    }

    /// The bind group of `pipeline` over `buffers` (binding 0: the params ring
    /// at a dynamic offset), cached so a training loop stops creating them.
    pub(crate) fn bind_group(&self, pipeline: &wgpu::ComputePipeline, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        self.bind_group_on(&self.uniforms, pipeline, buffers)
    }

    /// `bind_group` with binding 0 on another uniform ring (a program's own,
    /// see `replay`); cached under the ring too.
    pub(crate) fn bind_group_on(
        &self,
        ring: &wgpu::Buffer,
        pipeline: &wgpu::ComputePipeline,
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let mut layouts = lock(&self.layouts);
        let k = layouts.get_mut(pipeline).expect("pipelines are created through GpuContext::pipeline");
        let mut key: Vec<wgpu::Buffer> = Vec::with_capacity(buffers.len() + 1);
        if *ring != self.uniforms {
            key.push(ring.clone());
        }
        key.extend(buffers.iter().map(|b| (*b).clone()));
        if let Some(bg) = k.bind_groups.get(&key) {
            return bg.clone();
        }
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: ring,
                offset: 0,
                size: wgpu::BufferSize::new(PARAM_BYTES),
            }),
        }];
        for (i, b) in buffers.iter().enumerate() {
            entries.push(wgpu::BindGroupEntry { binding: i as u32 + 1, resource: b.as_entire_binding() });
        }
        let bg = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &k.layout,
            entries: &entries,
        });
        self.counters.bind_groups_created.fetch_add(1, Ordering::Relaxed);
        if k.bind_groups.len() >= MAX_CACHED_BIND_GROUPS {
            k.bind_groups.clear();
        }
        k.bind_groups.insert(key, bg.clone());
        bg
    }
}
