//! The docs' code stays true. README.md and every page under docs/ are read,
//! and each code block is checked by its kind:
//!
//! - a ```rust,ignore or ```js block names its source on its first line
//!   (`// examples/mnist.rs ...`) and is an excerpt of it: each of its other
//!   lines that is neither blank nor `...` appears there, in the same order
//!   (in a file under src/, among its doc comments: a doc test). A JS example
//!   under examples/js/ is one that tests/browser/node.test.mjs runs.
//! - a ```js block whose first line tests/browser/lib/consumer.mjs looks for
//!   is a whole program, which the consumer projects run as it is;
//! - a ```rust block is the README's Rust example: the crate-level doc example
//!   (src/lib.rs), which runs.
//!
//! A block of these kinds that is neither an excerpt nor run fails. The op
//! list in docs/ops.md is generated from the registry.

use std::path::Path;

fn read(file: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// README.md and the Markdown pages under docs/, as paths from the crate root.
fn pages() -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec!["README.md".to_string()];
    walk(&root.join("docs"), root, &mut pages);
    pages.sort();
    pages
}

/// A fenced code block: its page, the line of its opening fence, its info
/// string (`rust,ignore`) and its lines.
struct Block {
    page: String,
    line: usize,
    kind: String,
    lines: Vec<String>,
}

fn blocks(page: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in read(page).lines().enumerate() {
        match (open.take(), line.trim_start().strip_prefix("```").map(str::trim)) {
            (None, Some(kind)) => {
                open = Some(Block { page: page.into(), line: n + 1, kind: kind.into(), lines: vec![] })
            }
            (Some(block), Some("")) => out.push(block),
            (Some(mut block), _) => {
                block.lines.push(line.into());
                open = Some(block);
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{page}: a code block is not closed");
    out
}

/// The lines a block may quote from `source`: a file under src/ offers its
/// doc comments (without `//!` or `///`), any other file all its lines.
fn source_lines(source: &str) -> Vec<String> {
    let text = read(source);
    if !source.starts_with("src/") {
        return text.lines().map(String::from).collect();
    }
    let doc = |l: &str| {
        let l = l.trim_start();
        l.strip_prefix("//!").or_else(|| l.strip_prefix("///")).map(|d| d.strip_prefix(' ').unwrap_or(d).to_string())
    };
    text.lines().filter_map(doc).collect()
}

/// Where a block's source may live: code that is compiled and run.
fn allowed_source(kind: &str, source: &str) -> bool {
    let dirs: &[&str] = if kind == "js" {
        &["examples/js/", "tests/browser/pages/", "web/"]
    } else {
        &["examples/", "src/", "tests/", "benches/"]
    };
    dirs.iter().any(|d| source.starts_with(d))
}

/// Checks that `block` (after its first line) is an excerpt of `source`;
/// returns what is wrong.
fn check_excerpt(block: &Block, source: &str) -> Result<(), String> {
    let from = if source.is_empty() { String::new() } else { format!(" from {source}") };
    let at = format!("{}:{}: the ```{} block{from}", block.page, block.line, block.kind);
    if !allowed_source(&block.kind, source) || !Path::new(env!("CARGO_MANIFEST_DIR")).join(source).is_file() {
        return Err(format!("{at}: its first line names no example, doc test or test page"));
    }
    if source.starts_with("examples/js/") {
        let name = source.trim_start_matches("examples/js/");
        if !read("tests/browser/node.test.mjs").contains(&format!("'{name}'")) {
            return Err(format!("{at}: tests/browser/node.test.mjs does not run {name}"));
        }
    }
    let lines = source_lines(source);
    let mut rest = lines.iter().map(|l| l.trim_end());
    let mut checked = 0;
    for (n, line) in block.lines.iter().enumerate().skip(1) {
        let line = line.trim_end();
        if line.trim().is_empty() || line.trim() == "..." {
            continue;
        }
        if !rest.any(|l| l == line) {
            return Err(format!("{at}, its line {}: {line:?} is not there after the lines before it", n + 1));
        }
        checked += 1;
    }
    if checked < 2 {
        return Err(format!("{at} shows {checked} line(s) of it; an excerpt shows at least 2"));
    }
    Ok(())
}

/// The crate-level doc example's lines (src/lib.rs), as rustdoc runs them.
fn crate_example_lines() -> Vec<String> {
    read("src/lib.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//! ").or_else(|| (l == "//!").then_some("")))
        .map(String::from)
        .collect()
}

/// Checks that a ```rust block is the crate's doc example, wrapped in the
/// `fn main` that the doc test hides.
fn check_crate_example(block: &Block) -> Result<(), String> {
    if block.page != "README.md" {
        return Err(format!("{}:{}: a ```rust block (the crate example) belongs in README.md", block.page, block.line));
    }
    let docs = crate_example_lines();
    let mut checked = 0;
    for line in &block.lines {
        if line.starts_with("fn main") || line == "    Ok(())" || line == "}" || line.trim().is_empty() {
            continue;
        }
        let unindented = line.strip_prefix("    ").unwrap_or(line);
        if !docs.iter().any(|d| d == unindented) {
            return Err(format!("{}:{}: {line:?} is not in src/lib.rs's doc example", block.page, block.line));
        }
        checked += 1;
    }
    if checked <= 10 {
        return Err(format!("{}:{}: only {checked} lines of the crate example", block.page, block.line));
    }
    Ok(())
}

/// Info strings of code a reader may copy and run: each must be a checked kind.
fn is_code(kind: &str) -> bool {
    ["rust", "js", "javascript", "ts", "typescript", "mjs"].iter().any(|k| kind.starts_with(k))
}

/// How a block was found true.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Checked {
    /// The README's Rust example: the crate's doc example.
    CrateExample,
    /// A whole JS program that the consumer projects run.
    Program,
    /// An excerpt of the source its first line names.
    Excerpt,
    /// Not code (```sh, ```text).
    NotCode,
}

fn check(block: &Block, consumer: &str) -> Result<Checked, String> {
    let first = block.lines.first().map_or("", |l| l.as_str());
    let source = first.strip_prefix("// ").and_then(|s| s.split([' ', ':', ',']).next()).unwrap_or("");
    match block.kind.as_str() {
        "rust" => check_crate_example(block).map(|()| Checked::CrateExample),
        // The consumer projects find these blocks by their first line and run them whole.
        "js" if !first.is_empty() && consumer.contains(&format!("'{first}'")) => Ok(Checked::Program),
        "rust,ignore" | "js" => check_excerpt(block, source).map(|()| Checked::Excerpt),
        k if is_code(k) => {
            Err(format!("{}:{}: ```{k} is not checked: use ```rust,ignore or ```js", block.page, block.line))
        }
        _ => Ok(Checked::NotCode),
    }
}

#[test]
fn every_rust_and_js_block_is_an_excerpt_of_its_source_or_runs() {
    let consumer = read("tests/browser/lib/consumer.mjs");
    let (mut found, mut problems) = (Vec::new(), Vec::new());
    for block in pages().iter().flat_map(|p| blocks(p)) {
        match check(&block, &consumer) {
            Ok(checked) => found.push(checked),
            Err(problem) => problems.push(problem),
        }
    }
    let report = problems.join("\n");
    assert!(problems.is_empty(), "{} code block(s) out of step with their source:\n{report}", problems.len());
    let count = |c| found.iter().filter(|&&f| f == c).count();
    assert_eq!(count(Checked::CrateExample), 1, "one ```rust block: the README's Rust example");
    assert_eq!(count(Checked::Program), 3, "the JS programs the consumer projects run: XOR, the worker pair");
    assert!(count(Checked::Excerpt) >= 15, "only {} excerpts were found and checked", count(Checked::Excerpt));
}

const OPS_PAGE: &str = "docs/ops.md";
const TABLE_START: &str =
    "<!-- op table: generated from the registry (src/ops); SKIFF_BLESS=1 cargo test --test core readme rewrites it -->\n";
const TABLE_END: &str = "<!-- end of op table -->\n";

/// The op list's table of registry ops is the registry's own
/// (`ops::op_table_markdown`: each entry's signature and doc line), so it
/// cannot fall behind the code. `SKIFF_BLESS=1` rewrites it in place.
#[test]
fn the_op_table_is_generated_from_the_registry() {
    let page = read(OPS_PAGE);
    let (head, rest) = page.split_once(TABLE_START).expect("docs/ops.md has the op table's start marker");
    let (table, tail) = rest.split_once(TABLE_END).expect("docs/ops.md has the op table's end marker");
    let want = skiff::ops::op_table_markdown();
    if table != want {
        if std::env::var("SKIFF_BLESS").is_ok_and(|v| v == "1") {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(OPS_PAGE);
            std::fs::write(path, format!("{head}{TABLE_START}{want}{TABLE_END}{tail}")).unwrap();
            return;
        }
        let first = table.lines().zip(want.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "docs/ops.md's op table is out of date (first difference at its line {}: {:?} should be {:?}); \
             run `SKIFF_BLESS=1 cargo test --test core readme`",
            first + 1,
            table.lines().nth(first),
            want.lines().nth(first)
        );
    }
    for def in skiff::ops::registry() {
        assert!(table.contains(&format!("| `{}`", def.name)), "{} is in the table", def.name);
    }
}
