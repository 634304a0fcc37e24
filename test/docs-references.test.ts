// Comments and docs must point to documents a reader of the repository has: the design notes, issue
// threads and review findings they once cited are not in it. Their reasons now live in
// docs/architecture.md#decisions and the area docs, so a reference to one of those documents, or a
// docs link whose file or heading does not exist, fails here.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";

const ROOT = resolve(fileURLToPath(new URL(".", import.meta.url)), "..");
const SELF = relative(ROOT, fileURLToPath(import.meta.url));
const SKIP_DIRS = new Set(["node_modules", "dist", "gen", ".git", ".turbo", ".orch", ".tap", "coverage", ".cache"]);
const EXTENSIONS = /\.(ts|mts|cts|mjs|cjs|js|md|sql|proto|sh|ya?ml)$/;

/** Phrases that cite a document the repository does not hold. */
const FORBIDDEN: Array<[RegExp, string]> = [
  [/\bDESIGN(\.md)?\b/, "the design note"],
  [/\bissues?\s+#?\d/i, "an issue"],
  [/\bfindings?\s+#?\d/i, "a review finding"],
  [/\bAPI seed\b|\bthe seed\b|\bseed's\b/i, "the API seed"],
  [/§\s*\d/, "a section of an outside document"],
];

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) sourceFiles(join(dir, e.name), out);
    } else if (e.isFile() && EXTENSIONS.test(e.name)) {
      const rel = relative(ROOT, join(dir, e.name));
      if (rel !== SELF) out.push(rel);
    }
  }
  return out;
}

export function forbiddenReferences(path: string, text: string): string[] {
  const found: string[] = [];
  text.split("\n").forEach((line, i) => {
    for (const [re, what] of FORBIDDEN) {
      if (re.test(line)) found.push(`${path}:${i + 1} cites ${what}: ${line.trim()}`);
    }
  });
  return found;
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** Links to docs/*.md (with an optional #anchor) that name a missing file or heading. */
export function brokenDocLinks(path: string, text: string, docs: Map<string, Set<string>>): string[] {
  const broken: string[] = [];
  const inDocs = path.startsWith("docs/");
  const patterns = [/\bdocs\/([\w.-]+\.md)(?:#([\w-]+))?/g];
  // Inside docs/, markdown links are relative: [x](other.md#anchor) or [x](#anchor).
  if (inDocs) patterns.push(/\]\((?!https?:|\.\.\/|\/)([\w.-]*\.md)?(?:#([\w-]+))?\)/g);
  text.split("\n").forEach((line, i) => {
    for (const re of patterns) {
      for (const m of line.matchAll(re)) {
        const file = m[1] ?? (inDocs ? path.slice("docs/".length) : undefined);
        if (!file || (!m[1] && !m[2])) continue;
        const heads = docs.get(file);
        if (!heads) broken.push(`${path}:${i + 1} links to missing docs/${file}`);
        else if (m[2] && !heads.has(m[2])) broken.push(`${path}:${i + 1} links to missing docs/${file}#${m[2]}`);
      }
    }
  });
  return broken;
}

/** Repository paths a doc names in backticks (`services/x/src/y.ts`) that do not exist. */
export function missingPaths(path: string, text: string, exists: (p: string) => boolean): string[] {
  const missing: string[] = [];
  text.split("\n").forEach((line, i) => {
    for (const m of line.matchAll(/`((?:services|packages|agent|cli|deploy|proto|test|bench|scripts)\/[\w./-]+)`/g)) {
      if (!exists(m[1]!)) missing.push(`${path}:${i + 1} names missing ${m[1]}`);
    }
  });
  return missing;
}

/**
 * Output folders a command creates (`bench/results/`): ignored by git, so absent from a fresh clone
 * until a bench has run — named in a doc, they are not a stale reference.
 */
const IGNORED_DIRS = readFileSync(join(ROOT, ".gitignore"), "utf8")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l.endsWith("/") && l.includes("/") && !l.startsWith("#") && l.indexOf("/") < l.length - 1);
const madeByTools = (p: string) => IGNORED_DIRS.some((d) => p === d || p.startsWith(d));

const files = sourceFiles(ROOT);
const texts = new Map(files.map((f) => [f, readFileSync(join(ROOT, f), "utf8")]));
const docs = new Map(
  files.filter((f) => /^docs\/[^/]+\.md$/.test(f)).map((f) => [f.slice("docs/".length), anchors(texts.get(f)!)]),
);

t.test("the checks catch what they are meant to", async (t) => {
  t.same(forbiddenReferences("a.ts", "// the handshake (DESIGN §6)").length, 2);
  t.same(forbiddenReferences("a.ts", "// as in issue 12, finding 4").length, 2);
  t.same(forbiddenReferences("a.md", "an int64 in the API seed").length, 1);
  t.same(forbiddenReferences("a.ts", "// append the 32-byte Ed25519 seed; random seed = 42"), []);
  const heads = anchors("# Title\n## 8. NATS version: ≥ 2.10\n```\n# not a heading\n```\n## Title\n### `GET /x` (y)\n");
  t.same([...heads].sort(), ["8-nats-version--210", "get-x-y", "title", "title-1"]);
  const known = new Map([["a.md", heads]]);
  t.same(brokenDocLinks("x.ts", "// docs/a.md#title docs/a.md", known), []);
  t.equal(brokenDocLinks("x.ts", "// docs/a.md#nope and docs/b.md", known).length, 2);
  t.equal(brokenDocLinks("docs/a.md", "see [x](a.md#title), [y](#get-x-y) and [z](#gone)", known).length, 1);
  const exists = (p: string) => p === "services/a/src/b.ts";
  t.same(missingPaths("docs/a.md", "`services/a/src/b.ts` and `services/<name>/src` and `x/y.ts`", exists), []);
  t.equal(missingPaths("docs/a.md", "moved: `services/a/src/c.ts`", exists).length, 1);
});

t.test("no source file or doc cites a document the repository does not hold", async (t) => {
  t.ok(files.length > 100, "the walk found the tree");
  t.same(
    files.flatMap((f) => forbiddenReferences(f, texts.get(f)!)),
    [],
  );
});

t.test("every link to docs/*.md names an existing file and heading", async (t) => {
  t.ok(docs.has("architecture.md"), "docs/architecture.md exists");
  t.same(
    files.flatMap((f) => brokenDocLinks(f, texts.get(f)!, docs)),
    [],
  );
});

t.test("every repository path a doc names exists", async (t) => {
  const named = files.filter((f) => /^docs\/[^/]+\.md$/.test(f) || f === "README.md");
  t.same(
    named.flatMap((f) => missingPaths(f, texts.get(f)!, (p) => existsSync(join(ROOT, p)) || madeByTools(p))),
    [],
  );
});
