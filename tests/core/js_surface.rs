//! What the op registry generates for JS is what the package declares and
//! exports: web/index.d.ts carries the TypeScript declarations of the
//! generated Tensor methods and module functions (`ops::surface`, one per
//! method with its doc line) between its markers, and web/api.js exports
//! exactly the generated module functions. `SKIFF_BLESS=1` rewrites the
//! declarations in place.

use skiff::ops::surface;
use std::path::Path;

const METHODS: (&str, &str) = (
    "    // ---- generated from the op registry (src/ops/surface.rs); `SKIFF_BLESS=1 cargo test --test core js_surface` rewrites this part\n",
    "    // ---- end of the generated methods\n",
);
const FUNCTIONS: (&str, &str) = (
    "// ---- generated module functions (src/ops/surface.rs); `SKIFF_BLESS=1 cargo test --test core js_surface` rewrites this part\n",
    "// ---- end of the generated functions\n",
);

fn file(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// The part of web/index.d.ts between `markers`, checked against `want` (or rewritten).
fn check_region(markers: (&str, &str), want: &str, what: &str) -> String {
    let path = file("web/index.d.ts");
    let text = std::fs::read_to_string(&path).unwrap();
    let (head, rest) =
        text.split_once(markers.0).unwrap_or_else(|| panic!("web/index.d.ts has the {what}' start marker"));
    let (now, tail) = rest.split_once(markers.1).unwrap_or_else(|| panic!("web/index.d.ts has the {what}' end marker"));
    if now != want {
        if std::env::var("SKIFF_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(&path, format!("{head}{}{want}{}{tail}", markers.0, markers.1)).unwrap();
            return want.to_string();
        }
        let first = now.lines().zip(want.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "web/index.d.ts's {what} are out of date (first difference at their line {}: {:?} should be {:?}); \
             run `SKIFF_BLESS=1 cargo test --test core js_surface`",
            first + 1,
            now.lines().nth(first),
            want.lines().nth(first)
        );
    }
    now.to_string()
}

#[test]
fn index_d_ts_declares_the_generated_methods() {
    let want = surface::ts_declarations().expect("the registry's signatures make methods");
    let now = check_region(METHODS, &want, "generated methods");
    for m in surface::methods().unwrap().iter().filter(|m| m.method) {
        let declared = now.contains(&format!("    {}(", m.js)) || surface::HAND_TYPED.contains(&m.js.as_str());
        assert!(declared, "{} is declared", m.js);
    }
}

#[test]
fn index_d_ts_declares_the_generated_functions() {
    let want = surface::ts_functions().expect("the registry's signatures make functions");
    let now = check_region(FUNCTIONS, &want, "generated functions");
    for m in surface::methods().unwrap().iter().filter(|m| !m.method) {
        assert!(now.contains(&format!("export function {}<", m.js)), "{} is declared", m.js);
    }
}

#[test]
fn api_js_exports_exactly_the_generated_functions() {
    let api = std::fs::read_to_string(file("web/api.js")).unwrap();
    let exported: Vec<&str> = api
        .lines()
        .filter_map(|l| l.strip_prefix("export const ")?.split_once(" = opFunction('"))
        .map(|(name, rest)| {
            assert_eq!(rest, format!("{name}');"), "web/api.js: {name} is bound to its own name");
            name
        })
        .collect();
    let mut want: Vec<String> = surface::methods().unwrap().into_iter().filter(|m| !m.method).map(|m| m.js).collect();
    want.sort();
    let mut got: Vec<String> = exported.iter().map(|s| s.to_string()).collect();
    got.sort();
    assert_eq!(got, want, "web/api.js's `export const x = opFunction('x')` lines are the registry's module functions");
}
