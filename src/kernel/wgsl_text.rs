//! The WGSL files under `shaders/` as the library embeds them: without their
//! line comments, which are for whoever reads the files (about 40% of their
//! bytes, and every user of the npm package would download them in the
//! .wasm). Dropped at compile time by `wgsl_file!`; each line end stays, so a
//! compiler message's line number still points at the same line of the file,
//! and so do the lines a custom kernel's preamble counts. Lines starting with
//! `// ==` stay whole: the generators find their sections by them
//! (`// == name`, `// ==== kernel: NAME`).

/// `src` without its line comments (each from `//` to the end of its line,
/// with the spaces before it), except `// ==` section markers at the start of
/// a line; returns the first `N` bytes of that and its whole length. Called
/// twice by `wgsl_file!`: with `N = 0` for the length, then with the length.
pub const fn strip_comments<const N: usize>(src: &[u8]) -> ([u8; N], usize) {
    let mut out = [0u8; N];
    let (mut i, mut len) = (0, 0);
    // Where the written part of the current line ends, without its trailing spaces.
    let mut content_end = 0;
    let mut line_start = true;
    while i < src.len() {
        let b = src[i];
        if b == b'/' && i + 1 < src.len() && src[i + 1] == b'/' && !(line_start && is_marker(src, i)) {
            while i < src.len() && src[i] != b'\n' {
                i += 1;
            }
            len = content_end;
            continue;
        }
        if len < N {
            out[len] = b;
        }
        len += 1;
        i += 1;
        match b {
            b'\n' => {
                content_end = len;
                line_start = true;
            }
            b' ' | b'\t' | b'\r' => {}
            _ => {
                content_end = len;
                line_start = false;
            }
        }
    }
    (out, len)
}

/// Whether the comment at `i` is a section marker (`// ==`).
const fn is_marker(src: &[u8], i: usize) -> bool {
    i + 4 < src.len() && src[i + 2] == b' ' && src[i + 3] == b'=' && src[i + 4] == b'='
}

/// `wgsl_file!(include_str!("../shaders/x.wgsl"))`: the file's text without
/// its comments (`strip_comments`), as a `&'static str` built at compile time.
macro_rules! wgsl_file {
    ($text:expr) => {{
        const TEXT: &str = $text;
        const LEN: usize = $crate::kernel::wgsl_text::strip_comments::<0>(TEXT.as_bytes()).1;
        const BYTES: [u8; LEN] = $crate::kernel::wgsl_text::strip_comments::<LEN>(TEXT.as_bytes()).0;
        match ::core::str::from_utf8(&BYTES) {
            Ok(text) => text,
            // Only ASCII bytes and whole lines are dropped.
            Err(_) => panic!("a WGSL file without its comments is not UTF-8"),
        }
    }};
}
pub(crate) use wgsl_file;

#[cfg(test)]
mod tests {
    fn strip(src: &str) -> String {
        let (bytes, len) = super::strip_comments::<4096>(src.as_bytes());
        String::from_utf8(bytes[..len].to_vec()).unwrap()
    }

    #[test]
    fn comments_go_and_line_ends_and_markers_stay() {
        let src = "// a file note\n\n// == kernel\nfn f() {   // why\n    let x = 1u; // more\n    // a whole line\n}\n  // ==== kernel: g\n";
        assert_eq!(strip(src), "\n\n// == kernel\nfn f() {\n    let x = 1u;\n\n}\n  // ==== kernel: g\n");
        assert_eq!(strip(src).lines().count(), src.lines().count());
        // A marker only counts at the start of a line; `/` alone is division.
        assert_eq!(strip("let y = a / b; // == not a marker\n"), "let y = a / b;\n");
        assert_eq!(strip("x // no line end"), "x");
    }

    #[test]
    fn the_embedded_files_keep_their_code() {
        const STRIPPED: &str = super::wgsl_file!(include_str!("../../shaders/matmul_blocked.wgsl"));
        let file = include_str!("../../shaders/matmul_blocked.wgsl");
        assert_eq!(STRIPPED.lines().count(), file.lines().count());
        for (kept, line) in STRIPPED.lines().zip(file.lines()) {
            let code = line.find("//").filter(|&c| !line[c..].starts_with("// ==")).map_or(line, |c| &line[..c]);
            assert_eq!(kept, code.trim_end(), "line {line:?}");
        }
        assert!(STRIPPED.len() < file.len() * 3 / 4, "{} of {} bytes kept", STRIPPED.len(), file.len());
    }
}
