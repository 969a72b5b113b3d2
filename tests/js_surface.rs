//! The TypeScript declarations of the Tensor methods the op registry
//! generates (`ops::surface::ts_declarations`, one per overload with its doc
//! line) are the ones web/index.d.ts carries between its markers, so the
//! package's types cannot fall behind the registry. `SKIFF_BLESS=1`
//! rewrites them in place.

use std::path::Path;

const START: &str = "    // ---- generated from the op registry (src/ops/surface.rs); `SKIFF_BLESS=1 cargo test --test js_surface` rewrites this part\n";
const END: &str = "    // ---- end of the generated methods\n";

#[test]
fn index_d_ts_declares_the_generated_methods() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("web/index.d.ts");
    let text = std::fs::read_to_string(&path).unwrap();
    let (head, rest) = text.split_once(START).expect("web/index.d.ts has the generated methods' start marker");
    let (now, tail) = rest.split_once(END).expect("web/index.d.ts has the generated methods' end marker");
    let want = skiff::ops::surface::ts_declarations().expect("the registry's signatures make methods");
    if now != want {
        if std::env::var("SKIFF_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(&path, format!("{head}{START}{want}{END}{tail}")).unwrap();
            return;
        }
        let first = now.lines().zip(want.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "web/index.d.ts's generated methods are out of date (first difference at their line {}: {:?} should be {:?}); \
             run `SKIFF_BLESS=1 cargo test --test js_surface`",
            first + 1,
            now.lines().nth(first),
            want.lines().nth(first)
        );
    }
    for m in skiff::ops::surface::methods().unwrap() {
        let declared =
            now.contains(&format!("    {}(", m.js)) || skiff::ops::surface::HAND_TYPED.contains(&m.js.as_str());
        assert!(declared, "{} is declared", m.js);
    }
}
