//! The GPU backend's tuning options, in one place: each chooses between
//! kernels that compute the same values (the tests run both sides of each
//! and compare bits), so they trade speed only. Every option left `None`
//! takes the adapter's default; a device is opened with options
//! (`GpuDevice::open_with_options`) or changes them later
//! (`GpuContext::set_options`), and the `SKIFF_GPU_*` environment variables
//! only fill them (`GpuOptions::from_env`, read whenever a device opens:
//! the default device too).
//!
//! ```
//! use skiff::device::{GpuDevice, GpuOptions, MatmulKernel};
//!
//! // The tiled matmul on any adapter, 64x64 tiles only; the rest as the adapter prefers.
//! let options = GpuOptions {
//!     matmul_kernel: Some(MatmulKernel::Tiled),
//!     matmul_wide_from: Some(usize::MAX),
//!     ..Default::default()
//! };
//! if let Ok(gpu) = GpuDevice::open_with_options(options) {
//!     let now = gpu.context().options(); // every option, resolved
//!     assert_eq!(now.matmul_kernel, Some(MatmulKernel::Tiled));
//!     println!("{} runs {now:?}", gpu.name());
//! }
//! ```

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The two matmul kernels (see `matmul`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatmulKernel {
    /// Output tiles staged through workgroup memory (`shaders/matmul.wgsl`):
    /// real GPUs' default.
    Tiled,
    /// Register blocks read straight from the buffers, no barriers
    /// (`matmul/blocked.rs`): software adapters' default (lavapipe, SwiftShader).
    Blocked,
}

/// How a GPU device runs what it runs. `None` is the adapter's default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuOptions {
    /// Which matmul kernel. Env: `SKIFF_GPU_MATMUL=tiled|blocked`.
    pub matmul_kernel: Option<MatmulKernel>,
    /// Whether the plain tiled matmul keeps wgpu's shader runtime checks
    /// (default: off; its operands are checked against their buffers before
    /// each dispatch instead). Env: `SKIFF_GPU_MATMUL_CHECKS=on|off`.
    pub matmul_runtime_checks: Option<bool>,
    /// Steps of K per iteration of the blocked matmul's loop, 1 or 4 (default:
    /// 4 on software adapters other than lavapipe, that is SwiftShader, whose
    /// loop-carried variables cost a masked store per step). Env:
    /// `SKIFF_GPU_MATMUL_UNROLL=1|4`.
    pub matmul_unroll: Option<usize>,
    /// Whether matmuls read aligned operands four elements per load (default:
    /// on). Env: `SKIFF_GPU_MATMUL_VEC4=1|0`.
    pub matmul_vec4: Option<bool>,
    /// From how many 128x128 tiles (all batches together) the tiled matmul
    /// takes 128x128 tiles instead of 64x64 ones (default 64: a wide tile
    /// halves the staged loads per multiply-add but leaves a quarter as many
    /// workgroups to spread over the GPU's cores). Env:
    /// `SKIFF_GPU_MATMUL_WIDE_FROM=<tiles>` (0: always; a huge number: never).
    pub matmul_wide_from: Option<usize>,
    /// Whether the blocked matmul shares its loads of B across a subgroup
    /// (default: on software adapters whose device has subgroups of one fixed
    /// size the kernel supports, 4 or 8, where every load is paid one lane at
    /// a time). Env: `SKIFF_GPU_MATMUL_BROADCAST=1|0`.
    pub matmul_shared_loads: Option<bool>,
    /// Whether the sliding-window kernels (unfold, fold, window argmax,
    /// max-pool's scatter) and the reductions run one invocation per output
    /// row rather than per element (default: on software adapters, whose
    /// SIMD lanes divide integers one at a time). Env: `SKIFF_GPU_CONV=rows|elements`.
    pub row_kernels: Option<bool>,
    /// Whether convolution products read the image through the window
    /// (implicit GEMM) rather than making im2col's columns first (default:
    /// on). Env: `SKIFF_GPU_IMPLICIT_GEMM=1|0`.
    pub implicit_gemm: Option<bool>,
    /// Whether the implicit GEMM pads an image into a copy before a padded
    /// window reads it, so its loads never test for the padding (default: on
    /// software adapters other than lavapipe, where those tests made the
    /// shader compiler run out of memory). No environment variable.
    pub pad_first: Option<bool>,
}

impl GpuOptions {
    /// The options the `SKIFF_GPU_*` environment variables set (unset ones
    /// stay `None`); a value a variable does not take is an error naming it.
    pub fn from_env() -> Result<GpuOptions> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// `from_env` over any source of variables (for tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<GpuOptions> {
        let get = |name: &str, allowed: &[&str]| -> Result<Option<usize>> {
            let Some(v) = var(name) else { return Ok(None) };
            match allowed.iter().position(|a| *a == v) {
                Some(i) => Ok(Some(i)),
                None => Err(Error::value(
                    "GpuOptions::from_env",
                    format!("{name}={v:?} is not one of {}", allowed.join(", ")),
                )),
            }
        };
        let flag =
            |name: &str, off: &str, on: &str| -> Result<Option<bool>> { Ok(get(name, &[off, on])?.map(|i| i == 1)) };
        let wide_from = match var("SKIFF_GPU_MATMUL_WIDE_FROM") {
            None => None,
            Some(v) => Some(v.parse::<usize>().map_err(|_| {
                Error::value(
                    "GpuOptions::from_env",
                    format!("SKIFF_GPU_MATMUL_WIDE_FROM={v:?} is not a number of tiles"),
                )
            })?),
        };
        Ok(GpuOptions {
            matmul_kernel: get("SKIFF_GPU_MATMUL", &["tiled", "blocked"])?
                .map(|i| [MatmulKernel::Tiled, MatmulKernel::Blocked][i]),
            matmul_runtime_checks: flag("SKIFF_GPU_MATMUL_CHECKS", "off", "on")?,
            matmul_unroll: get("SKIFF_GPU_MATMUL_UNROLL", &["1", "4"])?.map(|i| [1, 4][i]),
            matmul_vec4: flag("SKIFF_GPU_MATMUL_VEC4", "0", "1")?,
            matmul_wide_from: wide_from,
            matmul_shared_loads: flag("SKIFF_GPU_MATMUL_BROADCAST", "0", "1")?,
            row_kernels: get("SKIFF_GPU_CONV", &["elements", "rows"])?.map(|i| i == 1),
            implicit_gemm: flag("SKIFF_GPU_IMPLICIT_GEMM", "0", "1")?,
            pad_first: None,
        })
    }

    /// These options with every `Some` of `other` taking precedence.
    pub fn overridden_by(&self, other: &GpuOptions) -> GpuOptions {
        GpuOptions {
            matmul_kernel: other.matmul_kernel.or(self.matmul_kernel),
            matmul_runtime_checks: other.matmul_runtime_checks.or(self.matmul_runtime_checks),
            matmul_unroll: other.matmul_unroll.or(self.matmul_unroll),
            matmul_vec4: other.matmul_vec4.or(self.matmul_vec4),
            matmul_wide_from: other.matmul_wide_from.or(self.matmul_wide_from),
            matmul_shared_loads: other.matmul_shared_loads.or(self.matmul_shared_loads),
            row_kernels: other.row_kernels.or(self.row_kernels),
            implicit_gemm: other.implicit_gemm.or(self.implicit_gemm),
            pad_first: other.pad_first.or(self.pad_first),
        }
    }

    /// An error unless every option set has a value the backend takes.
    pub(crate) fn validate(&self) -> Result<()> {
        if let Some(u) = self.matmul_unroll.filter(|u| ![1, 4].contains(u)) {
            return Err(Error::value("GpuOptions", format!("matmul_unroll must be 1 or 4, got {u}")));
        }
        Ok(())
    }
}

/// A context's options, resolved against its adapter: what its kernels read
/// (atomics: a context is shared across threads, and tests switch options
/// between products on a private one).
pub(crate) struct Tuning {
    /// The adapter's facts the defaults depend on.
    software: bool,
    lavapipe: bool,
    /// The subgroup size the device would share loads across, or 0 (see
    /// `shared_loads_size`).
    shareable: usize,
    tiled: AtomicBool,
    runtime_checks: AtomicBool,
    unroll: AtomicUsize,
    vec4: AtomicBool,
    wide_from: AtomicUsize,
    shared_loads: AtomicBool,
    row_kernels: AtomicBool,
    implicit_gemm: AtomicBool,
    pad_first: AtomicBool,
}

/// The subgroup size across which an adapter's blocked matmul can share its
/// loads of B, or 0: software adapters whose device has subgroups of one
/// fixed size that the kernel supports (4: SwiftShader; 8: lavapipe),
/// natively or in a browser whose page asked for them. Such an adapter pays
/// for every load one lane at a time (SwiftShader tests and branches per
/// lane), so a value one lane loads and the others receive by
/// `subgroupBroadcast` costs a quarter or an eighth of a load.
fn shared_loads_size(info: &wgpu::AdapterInfo, subgroups: bool) -> usize {
    let size = info.subgroup_min_size as usize;
    let fits = info.device_type == wgpu::DeviceType::Cpu
        && subgroups
        && info.subgroup_max_size as usize == size
        && super::matmul::BROADCAST_SIZES.contains(&size);
    if fits {
        size
    } else {
        0
    }
}

impl Tuning {
    /// `options` over the defaults of the adapter `info` (with subgroup
    /// operations on the device or not).
    pub(crate) fn new(info: &wgpu::AdapterInfo, subgroups: bool, options: &GpuOptions) -> Tuning {
        let software = info.device_type == wgpu::DeviceType::Cpu;
        let lavapipe = info.name.contains("llvmpipe");
        let t = Tuning {
            software,
            lavapipe,
            shareable: shared_loads_size(info, subgroups),
            tiled: AtomicBool::new(false),
            runtime_checks: AtomicBool::new(false),
            unroll: AtomicUsize::new(1),
            vec4: AtomicBool::new(true),
            wide_from: AtomicUsize::new(64),
            shared_loads: AtomicBool::new(false),
            row_kernels: AtomicBool::new(false),
            implicit_gemm: AtomicBool::new(true),
            pad_first: AtomicBool::new(false),
        };
        t.set(&t.defaults().overridden_by(options));
        t
    }

    /// The adapter's defaults (see each option's doc).
    fn defaults(&self) -> GpuOptions {
        let swiftshader = self.software && !self.lavapipe;
        GpuOptions {
            matmul_kernel: Some(if self.software { MatmulKernel::Blocked } else { MatmulKernel::Tiled }),
            matmul_runtime_checks: Some(false),
            matmul_unroll: Some(if swiftshader { 4 } else { 1 }),
            matmul_vec4: Some(true),
            matmul_wide_from: Some(64),
            matmul_shared_loads: Some(self.shareable > 0),
            row_kernels: Some(self.software),
            implicit_gemm: Some(true),
            pad_first: Some(swiftshader),
        }
    }

    /// Sets every option `options` sets, from now on.
    pub(crate) fn set(&self, options: &GpuOptions) {
        let o = options;
        let store = |a: &AtomicBool, v: Option<bool>| v.into_iter().for_each(|v| a.store(v, Ordering::Relaxed));
        if let Some(k) = o.matmul_kernel {
            self.tiled.store(k == MatmulKernel::Tiled, Ordering::Relaxed);
        }
        store(&self.runtime_checks, o.matmul_runtime_checks);
        if let Some(u) = o.matmul_unroll {
            self.unroll.store(u, Ordering::Relaxed);
        }
        store(&self.vec4, o.matmul_vec4);
        if let Some(w) = o.matmul_wide_from {
            self.wide_from.store(w, Ordering::Relaxed);
        }
        store(&self.shared_loads, o.matmul_shared_loads);
        store(&self.row_kernels, o.row_kernels);
        store(&self.implicit_gemm, o.implicit_gemm);
        store(&self.pad_first, o.pad_first);
    }

    /// Every option, as this context runs now.
    pub(crate) fn options(&self) -> GpuOptions {
        let get = |a: &AtomicBool| Some(a.load(Ordering::Relaxed));
        GpuOptions {
            matmul_kernel: Some(if self.matmul_tiled() { MatmulKernel::Tiled } else { MatmulKernel::Blocked }),
            matmul_runtime_checks: get(&self.runtime_checks),
            matmul_unroll: Some(self.matmul_unroll()),
            matmul_vec4: get(&self.vec4),
            matmul_wide_from: Some(self.matmul_wide_from()),
            matmul_shared_loads: get(&self.shared_loads),
            row_kernels: get(&self.row_kernels),
            implicit_gemm: get(&self.implicit_gemm),
            pad_first: get(&self.pad_first),
        }
    }

    /// The adapter's defaults, whatever is set now.
    pub(crate) fn adapter_defaults(&self) -> GpuOptions {
        self.defaults()
    }

    pub(crate) fn matmul_tiled(&self) -> bool {
        self.tiled.load(Ordering::Relaxed)
    }
    pub(crate) fn matmul_runtime_checks(&self) -> bool {
        self.runtime_checks.load(Ordering::Relaxed)
    }
    pub(crate) fn matmul_unroll(&self) -> usize {
        self.unroll.load(Ordering::Relaxed)
    }
    pub(crate) fn matmul_vec4(&self) -> bool {
        self.vec4.load(Ordering::Relaxed)
    }
    pub(crate) fn matmul_wide_from(&self) -> usize {
        self.wide_from.load(Ordering::Relaxed)
    }
    /// The subgroup size the blocked matmul shares loads of B across, or 0.
    pub(crate) fn matmul_broadcast(&self) -> usize {
        if self.shared_loads.load(Ordering::Relaxed) {
            self.shareable
        } else {
            0
        }
    }
    /// The subgroup size the device could share loads across, or 0.
    pub(crate) fn shared_loads_size(&self) -> usize {
        self.shareable
    }
    pub(crate) fn row_kernels(&self) -> bool {
        self.row_kernels.load(Ordering::Relaxed)
    }
    pub(crate) fn implicit_gemm(&self) -> bool {
        self.implicit_gemm.load(Ordering::Relaxed)
    }
    pub(crate) fn pad_first(&self) -> bool {
        self.pad_first.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn each_variable_fills_its_option() {
        let o = GpuOptions::from_vars(vars(&[
            ("SKIFF_GPU_MATMUL", "blocked"),
            ("SKIFF_GPU_MATMUL_CHECKS", "on"),
            ("SKIFF_GPU_MATMUL_UNROLL", "4"),
            ("SKIFF_GPU_MATMUL_VEC4", "0"),
            ("SKIFF_GPU_MATMUL_WIDE_FROM", "1"),
            ("SKIFF_GPU_MATMUL_BROADCAST", "0"),
            ("SKIFF_GPU_CONV", "rows"),
            ("SKIFF_GPU_IMPLICIT_GEMM", "0"),
        ]))
        .unwrap();
        let want = GpuOptions {
            matmul_kernel: Some(MatmulKernel::Blocked),
            matmul_runtime_checks: Some(true),
            matmul_unroll: Some(4),
            matmul_vec4: Some(false),
            matmul_wide_from: Some(1),
            matmul_shared_loads: Some(false),
            row_kernels: Some(true),
            implicit_gemm: Some(false),
            pad_first: None,
        };
        assert_eq!(o, want);
        assert_eq!(GpuOptions::from_vars(vars(&[])).unwrap(), GpuOptions::default());
    }

    #[test]
    fn a_value_a_variable_does_not_take_is_an_error_naming_it() {
        for (pairs, facts) in [
            (&[("SKIFF_GPU_MATMUL", "fast")][..], "SKIFF_GPU_MATMUL=\"fast\" is not one of tiled, blocked"),
            (&[("SKIFF_GPU_MATMUL_UNROLL", "2")][..], "SKIFF_GPU_MATMUL_UNROLL=\"2\" is not one of 1, 4"),
            (&[("SKIFF_GPU_CONV", "1")][..], "SKIFF_GPU_CONV=\"1\" is not one of elements, rows"),
            (&[("SKIFF_GPU_MATMUL_WIDE_FROM", "many")][..], "SKIFF_GPU_MATMUL_WIDE_FROM=\"many\" is not a number"),
        ] {
            let pairs: &'static [(&'static str, &'static str)] = pairs;
            let e = GpuOptions::from_vars(vars(pairs)).unwrap_err().to_string();
            assert!(e.starts_with("GpuOptions::from_env: ") && e.contains(facts), "{e}");
        }
        let bad = GpuOptions { matmul_unroll: Some(3), ..Default::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("matmul_unroll must be 1 or 4, got 3"));
    }

    #[test]
    fn set_options_override_the_others() {
        let env = GpuOptions { matmul_unroll: Some(4), row_kernels: Some(true), ..Default::default() };
        let given = GpuOptions { matmul_unroll: Some(1), ..Default::default() };
        let o = env.overridden_by(&given);
        assert_eq!((o.matmul_unroll, o.row_kernels), (Some(1), Some(true)));
    }
}
