import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import ts from "typescript";

// Every route family is laid out the same way, so a reader knows where to look:
//   <family>.ts          the installer(s): route declarations only (auth, schemas used, errors, handlers)
//   <family>-schemas.ts  its request schemas, rules and field checks (and response shapes without a converter)
//   <family>-json.ts     its converters from service objects to JSON bodies, with the schemas they produce
// A family is a module routes/index.ts registers. -schemas.ts and -json.ts are optional: a family
// with nothing to put there has none. Families share code only through -schemas.ts and -json.ts.

const routesDir = fileURLToPath(new URL("../src/routes/", import.meta.url));
const srcDir = fileURLToPath(new URL("../src/", import.meta.url));

/** Files in routes/ that are none of the three, each with the reason it stands apart. */
const HELPERS: Record<string, string> = {
  "index.ts": "the route table: one line per family",
  "blob-upload.ts": "streams an upload body to the state service in chunks (begin, put, commit, abort); no schema",
  "module-bundle.ts":
    "reads a module bundle archive entry by entry and stores its files as blobs (through blob-upload.ts); no schema",
  "audit-query.ts": "the audit filter grammar, shared with the live tail (sse/audit-tail.ts)",
  "install-releases.ts": "reads and verifies the signed release directory, cached; not a schema or converter",
  "install-script.ts": "renders the install script template (install/agent.sh)",
  "sources-webhook.ts":
    "the public push webhook of the sources family: unauthenticated, raw body, its own header filter; reviewed apart",
};

/** A converter is named for the JSON it makes: agentJson, runSummaryJson, windowJsonFor. */
const CONVERTER = /^[a-z]\w*Json/;

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
}

/** The families: the modules routes/index.ts imports an installer from. */
function families(): string[] {
  const sf = parse(join(routesDir, "index.ts"));
  return sf.statements
    .filter(ts.isImportDeclaration)
    .map((d) => (d.moduleSpecifier as ts.StringLiteral).text)
    .filter((m) => /^\.\/[a-z-]+\.js$/.test(m))
    .map((m) => m.slice(2, -3));
}

/** What a local name is imported from, for the file's import declarations. */
function importSources(sf: ts.SourceFile): Map<string, string> {
  const out = new Map<string, string>();
  for (const d of sf.statements.filter(ts.isImportDeclaration)) {
    const from = (d.moduleSpecifier as ts.StringLiteral).text;
    const b = d.importClause?.namedBindings;
    if (b && ts.isNamedImports(b)) for (const e of b.elements) out.set(e.name.text, from);
  }
  return out;
}

/** The identifier a chain such as `z.object({...}).extend(...)` or `RunOut.omit(...)` starts from. */
function rootOf(e: ts.Expression): { name: string | undefined; called: boolean } {
  let called = false;
  for (;;) {
    if (ts.isCallExpression(e)) {
      called = true;
      e = e.expression;
    } else if (
      ts.isPropertyAccessExpression(e) ||
      ts.isParenthesizedExpression(e) ||
      ts.isNonNullExpression(e) ||
      ts.isAsExpression(e) ||
      ts.isSatisfiesExpression(e)
    )
      e = e.expression;
    else return { name: ts.isIdentifier(e) ? e.text : undefined, called };
  }
}

const SCHEMA_MODULES = /^(\.\.\/schemas\.js|\.\/[a-z-]+-(schemas|json)\.js)$/;

/**
 * Module-level zod schemas: a chain from `z`, or a call on or of a schema declared above or
 * imported from a schema module (`pageQuery.extend(…)`, `RunOut.omit(…)`, `ruled(…)`, `qInt(…)`).
 */
function moduleSchemas(sf: ts.SourceFile): string[] {
  const imports = importSources(sf);
  const out: string[] = [];
  for (const s of sf.statements.filter(ts.isVariableStatement))
    for (const d of s.declarationList.declarations) {
      if (!d.initializer || !ts.isIdentifier(d.name)) continue;
      const { name, called } = rootOf(d.initializer);
      if (!name) continue;
      const derived = called && (SCHEMA_MODULES.test(imports.get(name) ?? "") || out.includes(name));
      if (name === "z" || derived) out.push(d.name.text);
    }
  return out;
}

/** Functions named as converters, at any depth (a converter inside an installer counts too). */
function converters(sf: ts.SourceFile): string[] {
  const out: string[] = [];
  const visit = (n: ts.Node) => {
    if (ts.isFunctionDeclaration(n) && n.name && CONVERTER.test(n.name.text)) out.push(n.name.text);
    if (
      ts.isVariableDeclaration(n) &&
      ts.isIdentifier(n.name) &&
      CONVERTER.test(n.name.text) &&
      n.initializer &&
      (ts.isArrowFunction(n.initializer) || ts.isFunctionExpression(n.initializer))
    )
      out.push(n.name.text);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** Relative module specifiers a file imports or re-exports (type-only included). */
function imports(sf: ts.SourceFile): string[] {
  return sf.statements
    .filter(
      (s): s is ts.ImportDeclaration | ts.ExportDeclaration => ts.isImportDeclaration(s) || ts.isExportDeclaration(s),
    )
    .map((s) => s.moduleSpecifier)
    .filter((m): m is ts.StringLiteral => !!m && ts.isStringLiteral(m))
    .map((m) => m.text);
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

const fams = families();
const files = readdirSync(routesDir)
  .filter((f) => f.endsWith(".ts"))
  .sort();
const roleOf = (f: string): string | undefined => {
  if (HELPERS[f]) return "helper";
  const m = /^(.*?)(-schemas|-json)?\.ts$/.exec(f)!;
  return fams.includes(m[1]!) ? (m[2] ?? "routes").replace(/^-/, "") : undefined;
};

t.test("every file in routes/ is a family's routes, -schemas or -json file, or a listed helper", async (t) => {
  t.ok(fams.length >= 10, `routes/index.ts registers ${fams.length} families`);
  for (const fam of fams) {
    const has = ["-schemas", "-json"].filter((s) => files.includes(`${fam}${s}.ts`));
    t.comment(`${fam.padEnd(16)} ${fam}.ts ${has.map((s) => `${fam}${s}.ts`).join(" ")}`);
    t.ok(files.includes(`${fam}.ts`), `${fam}.ts exists`);
  }
  for (const [f, why] of Object.entries(HELPERS)) {
    t.comment(`helper ${f}: ${why}`);
    t.ok(files.includes(f), `listed helper ${f} exists (drop it from HELPERS otherwise)`);
  }
  const stray = files.filter((f) => !roleOf(f));
  t.same(stray, [], "no file outside the layout");
});

t.test("route files declare no module-level schema and no converter", async (t) => {
  for (const f of files.filter((f) => roleOf(f) === "routes" || roleOf(f) === "helper")) {
    const sf = parse(join(routesDir, f));
    const schemas = moduleSchemas(sf);
    const conv = converters(sf);
    if (schemas.length || conv.length) t.comment(`${f}: schemas [${schemas}] converters [${conv}]`);
    t.same(schemas, [], `${f}: its schemas are in ${f.replace(/\.ts$/, "-schemas.ts")} or -json.ts`);
    t.same(conv, [], `${f}: its converters are in ${f.replace(/\.ts$/, "-json.ts")}`);
  }
});

t.test("converters live only in -json files, and every -json file has one", async (t) => {
  for (const f of files.filter((f) => roleOf(f) === "schemas")) {
    t.same(converters(parse(join(routesDir, f))), [], `${f} holds no converter`);
  }
  for (const f of files.filter((f) => roleOf(f) === "json")) {
    const conv = converters(parse(join(routesDir, f)));
    t.comment(`${f}: ${conv.join(", ")}`);
    t.ok(conv.length > 0, `${f} has a converter (otherwise its schemas belong in -schemas.ts)`);
  }
});

t.test("a family's route file is imported by routes/index.ts only", async (t) => {
  const routeFiles = new Set(files.filter((f) => roleOf(f) === "routes").map((f) => join(routesDir, f)));
  for (const file of walk(srcDir)) {
    if (file === join(routesDir, "index.ts")) continue;
    const sf = parse(file);
    const bad = imports(sf).filter(
      (m) => m.startsWith(".") && routeFiles.has(join(file, "..", m.replace(/\.js$/, ".ts"))),
    );
    t.same(bad, [], `${file.slice(srcDir.length)} imports no family's route file`);
  }
});
