import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import ts from "typescript";

// No import circle anywhere, type-only imports included (they tie modules together for the
// reader and for declaration emit just the same). The equivalent of `madge --circular` without the
// dependency: every hand-written source file, its static, type-only and literal dynamic imports,
// relative and workspace specifiers resolved to files, Tarjan's strongly connected components.

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const SOURCE = /\.(ts|tsx|mts|mjs|js)$/;

function handWritten(): string[] {
  const out = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], {
    cwd: root,
    encoding: "utf8",
  });
  return out
    .split("\n")
    .filter((f) => SOURCE.test(f) && !f.endsWith(".d.ts"))
    .filter((f) => !/(^|\/)(node_modules|dist|gen)\//.test(f))
    .filter((f) => existsSync(join(root, f)));
}

/** Every module specifier a file names: import, import type, export … from, import("x"), typeof import("x"). */
export function specifiers(file: string, text: string): string[] {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  const literal = (n: ts.Node | undefined) => {
    if (n && ts.isStringLiteralLike(n)) found.push(n.text);
  };
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) literal(n.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(n) && ts.isExternalModuleReference(n.moduleReference))
      literal(n.moduleReference.expression);
    else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) literal(n.arguments[0]);
    else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument)) literal(n.argument.literal);
    ts.forEachChild(n, visit);
  };
  visit(src);
  return found;
}

const isFile = (rel: string) => existsSync(join(root, rel)) && statSync(join(root, rel)).isFile();

function resolveFile(base: string): string | undefined {
  const stem = base.replace(/\.(js|mjs|ts|tsx|mts)$/, "");
  const candidates = base.endsWith(".mjs")
    ? [`${stem}.mts`, base]
    : [`${stem}.ts`, `${stem}.tsx`, `${stem}.js`, `${stem}.mjs`, base];
  for (const c of [...candidates, ...["ts", "tsx", "js", "mjs"].map((e) => `${base}/index.${e}`)])
    if (isFile(c)) return c;
  return undefined;
}

interface Workspace {
  dir: string;
  exports: Map<string, string>;
}

/** Workspace packages by name, each sub-path mapped to its "orch-source" file (or its plain target). */
function workspaces(): Map<string, Workspace> {
  const byName = new Map<string, Workspace>();
  const manifests = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*package.json"], {
    cwd: root,
    encoding: "utf8",
  });
  for (const manifest of manifests.split("\n").filter((f) => f && !f.includes("node_modules/"))) {
    const pkg = JSON.parse(readFileSync(join(root, manifest), "utf8")) as { name?: string; exports?: unknown };
    if (!pkg.name) continue;
    const dir = posix.dirname(manifest);
    const exports = new Map<string, string>();
    const entries =
      typeof pkg.exports === "string" || (pkg.exports && !Object.keys(pkg.exports).some((k) => k.startsWith(".")))
        ? { ".": pkg.exports }
        : ((pkg.exports ?? {}) as Record<string, unknown>);
    for (const [sub, target] of Object.entries(entries)) {
      const to =
        typeof target === "string"
          ? target
          : ((target as Record<string, unknown>)["orch-source"] ?? (target as Record<string, unknown>).default);
      if (typeof to === "string") exports.set(sub, posix.normalize(posix.join(dir, to)));
    }
    byName.set(pkg.name, { dir, exports });
  }
  return byName;
}

function resolver(packages: Map<string, Workspace>) {
  return (from: string, spec: string): string | undefined => {
    if (spec.startsWith(".")) return resolveFile(posix.normalize(posix.join(posix.dirname(from), spec)));
    const m = /^(@[^/]+\/[^/]+|[^@/][^/]*)(\/.*)?$/.exec(spec);
    const pkg = m && packages.get(m[1] as string);
    if (!m || !pkg) return undefined;
    const target = pkg.exports.get(`.${m[2] ?? ""}`);
    return target ? resolveFile(target) : resolveFile(posix.join(pkg.dir, m[2] ?? "index"));
  };
}

/** Tarjan's strongly connected components, iterative so a deep import chain cannot overflow the stack. */
export function stronglyConnected(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; edge: number }> = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { node: string; edge: number };
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const to = edges[frame.edge++] as string;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node) ?? 0, index.get(to) ?? 0));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node) ?? 0, low.get(frame.node) ?? 0));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      let member: string | undefined;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      components.push(component.sort());
    }
  }
  return components;
}

const files = handWritten();
const resolve = resolver(workspaces());
const graph = new Map<string, string[]>();
for (const file of files) {
  const targets = specifiers(file, readFileSync(join(root, file), "utf8"))
    .map((s) => resolve(file, s))
    .filter((f): f is string => f !== undefined);
  graph.set(file, [...new Set(targets)]);
}

t.test("the scan reads the tree and resolves relative, workspace and sub-path imports", async (t) => {
  t.ok(graph.has("packages/kit/src/index.ts"), "the kit is read");
  t.notOk(
    [...graph.keys()].some((f) => /\/gen\//.test(f) || f.includes("node_modules/")),
    "no generated code",
  );
  t.ok(graph.get("packages/kit/src/index.ts")?.includes("packages/kit/src/config.ts"), "./config.js → config.ts");
  const kitUsers = [...graph.values()].filter((to) => to.includes("packages/kit/src/index.ts"));
  t.ok(kitUsers.length > 10, "@orch/kit → packages/kit/src/index.ts");
  const testingUsers = [...graph.values()].filter((to) => to.includes("packages/kit/src/testing/index.ts"));
  t.ok(testingUsers.length > 0, "@orch/kit/testing → its orch-source file");
});

t.test("the scan sees type-only and dynamic imports", async (t) => {
  t.same(
    specifiers(
      "x.ts",
      `import type { A } from "./a.js";
       export type { B } from "./b.js";
       export * from "./c.js";
       const d = await import("./d.js");
       let e: typeof import("./e.js");
       import f = require("./f.js");`,
    ),
    ["./a.js", "./b.js", "./c.js", "./d.js", "./e.js", "./f.js"],
  );
  t.same(
    stronglyConnected(
      new Map([
        ["a", ["b"]],
        ["b", ["c"]],
        ["c", ["a", "d"]],
        ["d", []],
      ]),
    ).filter((c) => c.length > 1),
    [["a", "b", "c"]],
  );
});

t.test("no import circles (type-only imports included)", async (t) => {
  const circles = stronglyConnected(graph).filter((c) => c.length > 1);
  for (const circle of circles) {
    const members = new Set(circle);
    t.comment(`circle of ${circle.length} files:`);
    for (const file of circle)
      for (const to of graph.get(file) ?? []) if (members.has(to)) t.comment(`  ${file} → ${to}`);
  }
  t.same(
    circles.map((c) => c.join(" ")),
    [],
    "strongly connected components of more than one file",
  );
});
