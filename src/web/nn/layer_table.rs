//! The `layer_table!` macro: the one list of `nn` layer constructors.
//!
//! Each row of the table (`layers.rs`) is a layer's JS class name
//! (PyTorch's: `Linear`), its `Module` static factory (`linear`, or
//! `max_pool2d as maxPool2d`), the factory's parameters with their
//! TypeScript types, its doc comment and its body. From the rows the macro
//! generates
//! - the wasm-bindgen factories (`Module.linear(...)`), typed and documented
//!   in pkg/skiff.d.ts;
//! - `interface LayerConstructors` in pkg/skiff.d.ts (`Linear:
//!   Factory<Parameters<typeof Module.linear>, Module>`, with the doc), which
//!   web/index.d.ts types `nn` with;
//! - `layerTable()`, the rows as data: `npm run build` evaluates it once
//!   (scripts/lib/package-extras.mjs) and writes the result into pkg/skiff.js
//!   as `LAYER_TABLE`, from which web/modules.js makes `nn.Linear`, ... when
//!   it loads (before init, so `const { Linear } = nn` works at any time).
//!
//! So adding a layer is one row. A row marked `[rest]` takes its modules as
//! one array or as separate arguments (`Sequential(a, b)`).
//!
//! Row syntax:
//! ```text
//! /// doc
//! Class [rest]? = rust_name (as jsName)? (
//!     required (as jsName)?: "TS type", ...
//!     ; optional (as jsName)?: "TS type"
//! ) { body returning JsResult<JsModule> }
//! ```

use js_sys::Array;
use wasm_bindgen::prelude::*;

/// One row of the table, as data.
pub(super) struct LayerRow {
    pub name: &'static str,
    pub factory: &'static str,
    pub rest: bool,
    pub doc: &'static str,
    /// (JS name, TypeScript type, optional)
    pub params: &'static [(&'static str, &'static str, bool)],
}

/// `js_name!(rust)` or `js_name!(rust as js)`: the JS spelling as a string.
macro_rules! js_name {
    ($rust:ident) => {
        stringify!($rust)
    };
    ($rust:ident as $js:ident) => {
        stringify!($js)
    };
}

/// The TypeScript argument list of a row's constructor.
macro_rules! ts_args {
    ($factory:expr) => {
        concat!("Parameters<typeof Module.", $factory, ">")
    };
    ($factory:expr, rest) => {
        concat!("Parameters<typeof Module.", $factory, "> | Module[]")
    };
}

macro_rules! layer_table {
    ($(
        $(#[doc = $doc:tt])*
        $class:ident $([$flag:ident])? = $rust:ident $(as $js:ident)? (
            $($p:ident $(as $pjs:ident)? : $pty:tt),*
            $(; $o:ident $(as $ojs:ident)? : $oty:tt)?
        ) $body:block
    )*) => {
        #[wasm_bindgen(js_class = Module)]
        impl JsModule {
            $(
                $(#[doc = $doc])*
                #[wasm_bindgen($(js_name = $js)?)]
                pub fn $rust(
                    $(#[wasm_bindgen($(js_name = $pjs,)? unchecked_param_type = $pty)] $p: JsValue,)*
                    $(#[wasm_bindgen($(js_name = $ojs,)? unchecked_optional_param_type = $oty)] $o: Option<JsValue>,)?
                ) -> JsResult<JsModule> $body
            )*
        }

        /// The rows as data (see `layer_table.rs`).
        pub(super) const LAYER_ROWS: &[super::layer_table::LayerRow] = &[$(
            super::layer_table::LayerRow {
                name: stringify!($class),
                factory: super::layer_table::js_name!($rust $(as $js)?),
                rest: false $(|| super::layer_table::is_rest!($flag))?,
                doc: concat!($($doc, "\n",)*),
                params: &[
                    $((super::layer_table::js_name!($p $(as $pjs)?), $pty, false),)*
                    $((super::layer_table::js_name!($o $(as $ojs)?), $oty, true),)?
                ],
            },
        )*];

        #[wasm_bindgen(typescript_custom_section)]
        const LAYER_CONSTRUCTORS: &str = concat!(
            "/** `new C(...args)` or `C(...args)`: builds a T (the Rust factory's object). */\n",
            "export interface Factory<A extends unknown[], T> {\n  new (...args: A): T;\n  (...args: A): T;\n}\n",
            "/** The layer and container constructors of `nn`, with PyTorch's class names ",
            "(generated from the layer table, src/web/nn/layers.rs). */\n",
            "export interface LayerConstructors {\n",
            $(
                "  /**", $("\n   *", $doc,)* "\n   */\n",
                "  ", stringify!($class), ": Factory<",
                super::layer_table::ts_args!(super::layer_table::js_name!($rust $(as $js)?) $(, $flag)?),
                ", Module>;\n",
            )*
            "}\n",
        );
    };
}

/// `[rest]` is the one flag a row may carry.
macro_rules! is_rest {
    (rest) => {
        true
    };
}

pub(super) use {is_rest, js_name, layer_table, ts_args};

/// The layer table: `[{ name, factory, rest, doc, params: [{ name, type,
/// optional }] }]`, one entry per `nn` layer constructor, in table order.
/// `npm run build` writes it into the package (see the module doc).
#[wasm_bindgen(
    js_name = layerTable,
    unchecked_return_type = "Array<{ name: string; factory: string; rest: boolean; doc: string; params: Array<{ name: string; type: string; optional: boolean }> }>"
)]
pub fn layer_table_js() -> Array {
    use crate::web::args::object;
    super::layers::LAYER_ROWS
        .iter()
        .map(|r| {
            let params: Array = r
                .params
                .iter()
                .map(|&(name, ty, optional)| {
                    object(&[("name", name.into()), ("type", ty.into()), ("optional", optional.into())])
                })
                .collect();
            let doc = r.doc.lines().map(str::trim).collect::<Vec<_>>().join("\n");
            object(&[
                ("name", r.name.into()),
                ("factory", r.factory.into()),
                ("rest", r.rest.into()),
                ("doc", doc.trim().into()),
                ("params", params.into()),
            ])
        })
        .collect()
}
