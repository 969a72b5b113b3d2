// Checks the relative links of the Markdown docs (README.md, ARCHITECTURE.md,
// benches/*.md, tests/browser/README.md, docs/**/*.md): each must name a file
// or folder of the repository, and a #anchor must be a heading (or an
// <a id/name>) of the page it points into, slugged as GitHub does. External
// http(s) links are not fetched. Prints file:line and the bad link for each
// one, and exits 1 when there is any.
//
//   node scripts/check-docs.mjs            # the docs above
//   node scripts/check-docs.mjs FILE...    # only these files
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The Markdown files to check, relative to the repository root. */
function docFiles() {
  const mdIn = (dir, deep) =>
    fs.existsSync(path.join(REPO, dir))
      ? fs
          .readdirSync(path.join(REPO, dir), { withFileTypes: true, recursive: deep })
          .filter((e) => e.isFile() && e.name.endsWith('.md'))
          .map((e) => path.relative(REPO, path.join(e.parentPath ?? e.path, e.name)))
      : [];
  return ['README.md', 'ARCHITECTURE.md', ...mdIn('benches', false), 'tests/browser/README.md', ...mdIn('docs', true)].sort();
}

/** The text with fenced code blocks blanked out (lines kept, so line numbers hold). */
function prose(text) {
  let fence = null;
  const lines = text.split('\n').map((line) => {
    const open = line.match(/^\s*(```+|~~~+)/);
    if (fence) {
      if (open && open[1][0] === fence[0] && open[1].length >= fence.length && line.trim() === open[1]) fence = null;
      return '';
    }
    if (open) {
      fence = open[1];
      return '';
    }
    return line;
  });
  return lines.join('\n');
}

/** GitHub's heading slug: lowercase, punctuation dropped, spaces to hyphens. */
export function slug(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .replace(/[`*]/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a page offers: its headings' slugs (repeats numbered as GitHub does) and HTML ids. */
function anchorsOf(text) {
  const anchors = new Set();
  const seen = new Map();
  for (const line of prose(text).split('\n')) {
    const h = line.match(/^#{1,6}\s+(.*?)\s*#*\s*$/);
    if (h) {
      const base = slug(h[1]);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
  }
  return anchors;
}

/**
 * The `[text](target)` and `![alt](target)` links of a text, outside code
 * (their text may wrap onto the next lines): `{ target, line }`.
 */
function linksOf(text) {
  const blank = (code) => code.replace(/[^\n]/g, ' ');
  const outsideCode = prose(text).replace(/(`+)[\s\S]*?\1/g, blank);
  const link = /!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
  return [...outsideCode.matchAll(link)].map((m) => {
    const at = m.index + m[0].lastIndexOf('](');
    return { target: m[1], line: outsideCode.slice(0, at).split('\n').length };
  });
}

/** The problems of one file: `file:line: message` strings. */
export function checkFile(file, read = (f) => fs.readFileSync(path.join(REPO, f), 'utf8')) {
  const problems = [];
  const text = read(file);
  const anchorCache = new Map();
  const anchors = (target) => {
    if (!anchorCache.has(target)) anchorCache.set(target, anchorsOf(target === file ? text : read(target)));
    return anchorCache.get(target);
  };
  for (const { target: link, line } of linksOf(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // http:, https:, mailto: ...: not fetched
    const [rawPath, anchor] = link.split('#', 2);
    const target = rawPath ? path.normalize(path.join(path.dirname(file), decodeURI(rawPath))) : file;
    const where = `${file}:${line}`;
    if (rawPath && (target.startsWith('..') || !fs.existsSync(path.join(REPO, target)))) {
      problems.push(`${where}: ${link}: no file ${target}`);
    } else if (anchor !== undefined && target.endsWith('.md') && !anchors(target).has(anchor)) {
      problems.push(`${where}: ${link}: ${target} has no heading #${anchor}`);
    }
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const files = process.argv.length > 2 ? process.argv.slice(2) : docFiles();
  const problems = files.flatMap((f) => checkFile(f));
  for (const p of problems) console.error(p);
  if (problems.length) {
    console.error(`\n${problems.length} broken link(s) in ${files.length} Markdown files`);
    process.exit(1);
  }
  const links = files.reduce((n, f) => n + linksOf(fs.readFileSync(path.join(REPO, f), 'utf8')).length, 0);
  console.log(`check-docs: the ${links} links of ${files.length} Markdown files resolve (external ones not fetched)`);
}
