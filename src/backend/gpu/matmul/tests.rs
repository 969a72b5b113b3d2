//! The matmul's unit tests: the shapes it picks, the kernels it generates
//! (validated with naga), the template helpers, and its launch checks.

use super::block::{BROADCAST_ROWS, TALL_ROWS};
use super::wgsl::{fill, section, BLOCKED, TILED_VARIANTS};
use super::{blocked, blocked_source, grid3, tiled, uses_subgroups, Block, Loads, BLOCK, BLOCK_LANES};
use crate::backend::gpu::GpuBuffer;
use crate::dtype::DType;
use crate::shape::Layout;

/// An operand whose layout reaches past its buffer is an error before
/// any kernel runs (the tiled kernel has no runtime bounds checks).
#[test]
fn an_operand_past_its_buffer_is_an_error() {
    let Ok(dev) = crate::backend::gpu::default_device() else {
        eprintln!("SKIPPED: no GPU adapter");
        return;
    };
    let ctx = dev.context();
    let buf = GpuBuffer::new(ctx, "test", DType::F32, 32).unwrap();
    let fits = Layout::contiguous(&[4, 8]);
    let mut rows_too_far = Layout::contiguous(&[4, 8]);
    rows_too_far.strides[0] = 9;
    let mut offset_too_far = Layout::contiguous(&[8, 4]);
    offset_too_far.offset = 1;
    assert!(super::matmul(&buf, &fits, &buf, &Layout::contiguous(&[8, 4]), &[]).is_ok());
    for (la, lb, name) in [(&rows_too_far, &Layout::contiguous(&[8, 4]), "A"), (&fits, &offset_too_far, "B")] {
        let e = super::matmul(&buf, la, &buf, lb, &[]).unwrap_err();
        assert!(matches!(e, crate::error::Error::Shape { op: "matmul", .. }), "{e}");
        let text = e.to_string();
        assert!(text.contains(&format!("operand {name}")), "{text}");
        assert!(text.contains("past its 32-element buffer"), "{text}");
    }
}

/// The generated kernel validates with naga at the WebGPU baseline and
/// fits its default limits (no workgroup memory, <= 256 invocations).
#[test]
fn blocked_kernel_validates() {
    let check = |src: &str| {
        use naga::valid::{Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags, Validator};
        let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{}", e.emit_to_string(src)));
        // Only the broadcasting blocks use subgroups (their broadcasts are in naga's ballot set).
        let caps = if uses_subgroups(src) { Capabilities::SUBGROUP } else { Capabilities::empty() };
        let mut validator = Validator::new(ValidationFlags::all(), caps);
        if uses_subgroups(src) {
            validator.subgroup_stages(ShaderStages::COMPUTE).subgroup_operations(SubgroupOperationSet::BALLOT);
        }
        validator.validate(&module).unwrap_or_else(|e| panic!("{}", e.emit_to_string(src)));
        assert!(module.global_variables.iter().all(|(_, v)| v.space != naga::AddressSpace::WorkGroup));
        for ep in &module.entry_points {
            assert!(ep.workgroup_size.iter().product::<u32>() <= 256);
        }
    };
    for b in Block::all() {
        check(&blocked_source(b, DType::F32));
        assert!(!uses_subgroups(&blocked_source(b, DType::F32)), "{b:?} needs subgroups");
    }
    for b in Block::all_broadcasting() {
        assert!(b.broadcast > 0 && b.unroll == 4, "{b:?}");
        assert!([[BROADCAST_ROWS, BLOCK[1]], [TALL_ROWS, BLOCK[1]]].contains(&b.tile()), "{b:?}");
        check(&blocked_source(b, DType::F32));
        assert!(uses_subgroups(&blocked_source(b, DType::F32)), "{b:?} shares no loads");
    }
    // Other shapes the generator accepts (a 1-row block has no shifts).
    let store = super::plain_store(super::write(DType::F32));
    check(&super::assemble(
        DType::F32,
        &blocked::kernel(
            Block { rows: 1, cols: 4, lanes: 1, unroll: 4, a: Loads::AlongK, b: Loads::Across, broadcast: 0 },
            DType::F32,
        ),
        &store,
    ));
    check(&super::assemble(
        DType::F32,
        &blocked::kernel(
            Block { rows: 3, cols: 8, lanes: 64, unroll: 2, a: Loads::Scalar, b: Loads::Across, broadcast: 0 },
            DType::F32,
        ),
        &store,
    ));
}

/// SwiftShader's 4 lanes share B over 128 rows (32 each) where a product
/// has them and 128 steps of K, and over 64 otherwise; lavapipe's 8 lanes
/// always over 64. All of them take K four steps at a time. The generator
/// also takes A four steps of K per load for any multiple of 4 (two loads
/// per row for eight steps).
#[test]
fn swiftshader_products_of_128_rows_get_the_tall_block() {
    let full = Block::FULL.unrolled(4).loading(Loads::AlongK, Loads::Across);
    let tall = full.broadcasting(4, 128, 128);
    assert_eq!((tall.rows, tall.lanes, tall.unroll, tall.tile()), (32, 4, 4, [128, 32]));
    for (m, k) in [(127, 256), (256, 127), (784, 64)] {
        let short = full.broadcasting(4, m, k);
        assert_eq!((short.rows, short.unroll, short.tile()), (16, 4, [64, 32]), "[{m}, {k}]");
    }
    let lavapipe = full.broadcasting(8, 1024, 1024);
    assert_eq!((lavapipe.rows, lavapipe.unroll, lavapipe.tile()), (8, 4, [64, 32]));
    let talls = Block::all_broadcasting().iter().filter(|b| b.tile()[0] == TALL_ROWS).count();
    assert_eq!(talls, 6);
    let src = blocked_source(tall, DType::F32);
    assert!(src.contains("let ak31_0 = A[(ra31 + k + 0u) >> 2u];"), "{src}");
    assert!(src.contains("let a31_3 = vec4<f32>(ak31_0[3]);"), "{src}");
    assert!(src.contains("for (; k + 4u <= K; k = k + 4u)"), "{src}");
    let src = blocked_source(tall.unrolled(8), DType::F32);
    assert!(src.contains("let ak31_1 = A[(ra31 + k + 4u) >> 2u];"), "{src}");
    assert!(src.contains("let a31_7 = vec4<f32>(ak31_1[3]);"), "{src}");
    assert!(src.contains("for (; k + 8u <= K; k = k + 8u)"), "{src}");
}

#[test]
fn small_products_get_small_blocks() {
    // SwiftShader's bound for 16 columns (64), then lavapipe's (127).
    let (b, lvp) = (|m, n| Block::for_product(m, n, 64), |m, n| Block::for_product(m, n, 127));
    let block =
        |rows, cols, lanes| Block { rows, cols, lanes, unroll: 1, a: Loads::Scalar, b: Loads::Scalar, broadcast: 0 };
    assert_eq!(b(256, 784), Block::FULL);
    assert_eq!(b(8, 9), block(8, 4, 4));
    assert_eq!(b(64, 16), block(16, 4, 4));
    assert_eq!(b(64, 17), block(16, 16, 2));
    assert_eq!(b(64, 64), block(16, 16, 4));
    assert_eq!(b(16, 72), block(16, 32, 4));
    assert_eq!(lvp(16, 72), block(16, 16, 8));
    assert_eq!(b(1, 4), block(4, 4, 1));
    assert_eq!(b(72, 121), block(16, 32, 4));
    assert_eq!(lvp(72, 121), block(16, 16, 8));
    assert_eq!(lvp(72, 128), block(16, 32, 4));
    assert_eq!(b(64, 1000), Block::FULL);
    for cols16_to in [64, 127] {
        for m in 1..40 {
            for n in 1..300 {
                let blk = Block::for_product(m, n, cols16_to);
                assert!(Block::all().contains(&blk), "{blk:?}");
                let [tm, tn] = blk.tile();
                // A workgroup covers the product, or the largest block repeats.
                assert!((tm >= m || tm == BLOCK[0]) && (tn >= n || blk.lanes == BLOCK_LANES), "{m}x{n}: {blk:?}");
            }
        }
    }
}

/// vec4 loads only where the contiguous axis, the offset, the other
/// stride and the batch strides all line up (and K is unrolled for AlongK).
#[test]
fn vec4_loads_need_aligned_layouts() {
    use Loads::{Across, AlongK, Scalar};
    let mode = Loads::for_operand;
    // A [m, k] row-major (k fast), B [k, n] row-major (n fast).
    assert_eq!(mode(0, 784, 1, &[], true), AlongK);
    assert_eq!(mode(0, 784, 1, &[], false), Scalar);
    assert_eq!(mode(0, 1, 128, &[], false), Across);
    assert_eq!(mode(0, 1, 128, &[], true), Across);
    // Misaligned: odd strides, offsets or batch strides.
    assert_eq!(mode(0, 10, 1, &[], true), Scalar);
    assert_eq!(mode(0, 1, 10, &[], true), Scalar);
    assert_eq!(mode(2, 784, 1, &[], true), Scalar);
    assert_eq!(mode(0, 1, 128, &[128 * 6, 6], false), Scalar);
    assert_eq!(mode(0, 1, 128, &[128 * 64, 0], false), Across);
    // Neither axis contiguous.
    assert_eq!(mode(0, 8, 16, &[], true), Scalar);
    // Only the largest block has vec4 variants.
    let l = |shape: &[usize]| Layout::contiguous(shape);
    let full = Block::for_product(64, 128, 127).unrolled(4).loads_for(&l(&[64, 64]), &l(&[64, 128]), &[]);
    assert_eq!((full.a, full.b), (AlongK, Across));
    let small = Block::for_product(8, 64, 16).unrolled(4).loads_for(&l(&[8, 64]), &l(&[64, 64]), &[]);
    assert_eq!((small.a, small.b), (Scalar, Scalar));
    assert!(Block::all().contains(&full));
}

#[test]
fn grids_fit_the_limit_and_cover_every_tile() {
    assert_eq!(grid3([3, 2, 5], 65535), Some([3, 2, 5]));
    assert_eq!(grid3([0, 0, 0], 65535), Some([1, 1, 1]));
    let g = grid3([2, 3, 100_000], 65535).unwrap();
    assert!(g.iter().all(|&d| d <= 65535));
    assert!(g.iter().map(|&d| d as u64).product::<u64>() >= 600_000);
    assert_eq!(grid3([65535, 65535, 65535], 65535), Some([65535; 3]));
    assert_eq!(grid3([1 << 20, 1 << 20, 1], 65535), None);
}

#[test]
fn only_row_major_aligned_b_stages_vec4s() {
    assert_eq!(tiled::stage_key(Loads::Across), ":b4");
    for other in [Loads::Scalar, Loads::AlongK, Loads::Window, Loads::Inside] {
        assert_eq!(tiled::stage_key(other), "", "{other:?}");
    }
    let body = tiled::stage_b(&super::MATMUL.replace("{ELEM}", "f32"), "f32", Loads::Across);
    assert!(body.contains("var<storage, read> B: array<vec4<f32>>;"));
    assert!(body.contains("var<storage, read> A: array<f32>;"));
    // A's part of the shader's loop stays; B's scalar part is gone.
    assert!(body.contains("As[ak * LD4 + ar / 4u][ar % 4u] = v;"));
    assert!(!body.contains("Bs[bk * LD4 + bc / 4u][bc % 4u] = w;"));
    assert!(body.contains("Bs[bk * LD4 + bq] = w;"));
    assert_eq!(body.matches("workgroupBarrier();").count(), 2);
}

/// Placeholders inside a line take their value; one alone on its line
/// takes whole lines (or none); braces that are WGSL stay.
#[test]
fn fill_replaces_placeholders_and_whole_lines() {
    let template = "const TM: u32 = {TM}u;\n{LINES}\nfn f() { return {TM}u; }\n{NONE}\n{ELSE}\n";
    let got = fill(template, &[("TM", "64"), ("LINES", "    a;\n    b;\n"), ("NONE", ""), ("ELSE", "{TM}\n")]);
    // A value is not searched again ({TM} from ELSE stays as it is).
    assert_eq!(got, "const TM: u32 = 64u;\n    a;\n    b;\nfn f() { return 64u; }\n{TM}\n");
    assert_eq!(fill("{ a: {A} }{", &[("A", "1")]), "{ a: 1 }{");
}

#[test]
#[should_panic(expected = "no value for the template's {TN}")]
fn fill_refuses_an_unfilled_placeholder() {
    fill("const TN: u32 = {TN}u;\n", &[("TM", "64")]);
}

/// Sections run from their marker to the next, without blank lines at
/// either end, and every section the generators read exists.
#[test]
fn template_sections() {
    let file = "note\n\n// == one\n\n  a\n  b\n\n// == two\nc\n";
    assert_eq!(section(file, "one"), "  a\n  b\n");
    assert_eq!(section(file, "two"), "c\n");
    for name in ["kernel", "origin", "origin_shared", "unrolled_loop"] {
        assert!(!section(BLOCKED, name).is_empty(), "{name}");
    }
    for name in ["stage_b_vec4", "window_b"] {
        assert!(!section(TILED_VARIANTS, name).is_empty(), "{name}");
    }
}
