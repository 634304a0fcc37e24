import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

/**
 * Finds, in the TypeScript sources, every string literal used as an error reason (the problem+json
 * `code`): the runtime guard beside the ErrorReason type, which a cast can bypass. Parsing only (no
 * type checker), so it knows the sinks by name:
 * - `new OrchError(code, reason)`, `new AgentError(code, reason)`, and `super(code, reason)` in
 *   their subclasses;
 * - the kit's shorthands (`invalid(reason)`, `notFound`, …), which imply the code;
 * - the gateway's `problem(code, …)` and the agent dispatcher's `fail(id, code, reason)`;
 * - any function whose parameter is typed as a reason (`ErrorReason`, `ReasonFor<…>`,
 *   `Violation["reason"]`), called by name, and that parameter's default;
 * - literals inside a declaration typed as a reason (`const CODES: Record<string, ErrorReason>`);
 * - `reason:` in object literals returned by a function typed to return a `Violation`;
 * - a cast to a reason type (a literal one is checked; any other is reported, as it bypasses the
 *   catalogue).
 * Both branches of `cond ? "a" : "b"` count.
 */

export interface ReasonSite {
  file: string;
  line: number;
  reason: string;
  /** The gRPC code the site pairs the reason with, when it names one literally. */
  code?: string;
}

export interface ScanResult {
  sites: ReasonSite[];
  /** Casts to a reason type of something that is not a literal: they bypass the type guard. */
  casts: { file: string; line: number; text: string }[];
  /** Every string literal of the scanned files, for "is this catalogue entry used at all". */
  literals: Set<string>;
}

const SOURCE_ROOTS = ["services", "packages"];
const SKIP_DIRS = new Set(["node_modules", "dist", "gen", "test", ".turbo"]);
const REASON_TYPE = /\bErrorReason\b|\bReasonFor\b|\["reason"\]/;

const SHORTHANDS: Record<string, string> = {
  invalid: "INVALID_ARGUMENT",
  notFound: "NOT_FOUND",
  conflict: "ALREADY_EXISTS",
  precondition: "FAILED_PRECONDITION",
  unauthenticated: "UNAUTHENTICATED",
  forbidden: "PERMISSION_DENIED",
  unavailable: "UNAVAILABLE",
};
const ERROR_CLASSES = new Set(["OrchError", "AgentError"]);

function walk(dir: string, out: string[]): void {
  for (const name of readdirSync(dir)) {
    if (SKIP_DIRS.has(name)) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith(".ts") && !p.endsWith(".d.ts")) out.push(p);
  }
}

/** services/*\/src, packages/*\/src, agent/src, cli/src, without generated code or build output. */
export function sourceFiles(root: string): string[] {
  const files: string[] = [];
  for (const top of SOURCE_ROOTS) {
    for (const ws of readdirSync(join(root, top))) {
      const src = join(root, top, ws, "src");
      if (statSync(src, { throwIfNoEntry: false })?.isDirectory()) walk(src, files);
    }
  }
  for (const src of ["agent/src", "cli/src"]) walk(join(root, src), files);
  return files.filter((f) => !readFileSync(f, "utf8").slice(0, 200).includes("@generated"));
}

/** The string literals an expression may evaluate to, or undefined when it is computed. */
function literalsOf(n: ts.Node): string[] | undefined {
  if (ts.isStringLiteralLike(n)) return [n.text];
  if (ts.isParenthesizedExpression(n) || ts.isAsExpression(n) || ts.isSatisfiesExpression(n))
    return literalsOf(n.expression);
  if (ts.isConditionalExpression(n)) {
    const a = literalsOf(n.whenTrue);
    const b = literalsOf(n.whenFalse);
    return a && b ? [...a, ...b] : undefined;
  }
  return undefined;
}

function calleeName(e: ts.Expression): string | undefined {
  if (ts.isIdentifier(e)) return e.text;
  if (ts.isPropertyAccessExpression(e)) return e.name.text;
  return undefined;
}

function allStringLiterals(n: ts.Node, out: string[]): void {
  if (ts.isStringLiteralLike(n)) out.push(n.text);
  ts.forEachChild(n, (c) => allStringLiterals(c, out));
}

type Parsed = { file: string; sf: ts.SourceFile };

/** Functions with a reason-typed parameter, by name → its index and the code `ReasonFor<…>` names (first pass). */
function reasonParameters(parsed: Parsed[]): Map<string, { index: number; code?: string }> {
  const found = new Map<string, { index: number; code?: string }>();
  const visit = (n: ts.Node, sf: ts.SourceFile): void => {
    if (ts.isFunctionLike(n) && n.parameters) {
      let name: string | undefined;
      if ((ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n)) && n.name && ts.isIdentifier(n.name))
        name = n.name.text;
      else if ((ts.isArrowFunction(n) || ts.isFunctionExpression(n)) && ts.isVariableDeclaration(n.parent))
        name = ts.isIdentifier(n.parent.name) ? n.parent.name.text : undefined;
      n.parameters.forEach((p, index) => {
        const type = p.type?.getText(sf) ?? "";
        if (!name || name in SHORTHANDS || !REASON_TYPE.test(type)) return;
        const code = /ReasonFor<"([A-Z_]+)">/.exec(type)?.[1];
        found.set(name, { index, ...(code ? { code } : {}) });
      });
    }
    ts.forEachChild(n, (c) => visit(c, sf));
  };
  for (const { sf } of parsed) visit(sf, sf);
  return found;
}

export function scanReasonSites(root: string, files = sourceFiles(root)): ScanResult {
  const parsed = files.map((file) => ({
    file,
    sf: ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true),
  }));
  const wrappers = reasonParameters(parsed);
  const sites: ReasonSite[] = [];
  const casts: ScanResult["casts"] = [];
  const literals = new Set<string>();

  for (const { file, sf } of parsed) {
    const rel = relative(root, file);
    const isCatalogue = rel.endsWith("error-catalogue.ts");
    const lineOf = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
    const add = (n: ts.Node | undefined, code?: ts.Node | string) => {
      if (!n) return;
      const codeText = typeof code === "string" ? code : code && literalsOf(code)?.[0];
      for (const reason of literalsOf(n) ?? [])
        sites.push({ file: rel, line: lineOf(n), reason, ...(codeText ? { code: codeText } : {}) });
    };
    const inside = (n: ts.Node) => {
      const out: string[] = [];
      allStringLiterals(n, out);
      for (const reason of out) sites.push({ file: rel, line: lineOf(n), reason });
    };
    const extendsErrorClass = (n: ts.Node): boolean => {
      for (let p: ts.Node | undefined = n; p; p = p.parent)
        if (ts.isClassLike(p))
          return !!p.heritageClauses?.some((h) => h.types.some((t) => ERROR_CLASSES.has(t.expression.getText(sf))));
      return false;
    };

    const visit = (n: ts.Node): void => {
      if (ts.isNewExpression(n) && ERROR_CLASSES.has(n.expression.getText(sf))) add(n.arguments?.[1], n.arguments?.[0]);
      else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.SuperKeyword && extendsErrorClass(n))
        add(n.arguments[1], n.arguments[0]);
      else if (ts.isCallExpression(n)) {
        const name = calleeName(n.expression);
        if (name && name in SHORTHANDS && ts.isIdentifier(n.expression)) add(n.arguments[0], SHORTHANDS[name]);
        else if (name === "problem" && ts.isIdentifier(n.expression)) add(n.arguments[0]);
        else if (name === "fail" && ts.isIdentifier(n.expression)) add(n.arguments[2], n.arguments[1]);
        else if (name && wrappers.has(name)) {
          const w = wrappers.get(name)!;
          add(n.arguments[w.index], w.code);
        }
      }
      if (ts.isParameter(n) && n.type && REASON_TYPE.test(n.type.getText(sf)) && n.initializer) add(n.initializer);
      if (
        (ts.isVariableDeclaration(n) || ts.isPropertyDeclaration(n)) &&
        n.type &&
        REASON_TYPE.test(n.type.getText(sf)) &&
        n.initializer
      )
        inside(n.initializer);
      if (ts.isFunctionLike(n) && n.type && /\bViolation\b/.test(n.type.getText(sf))) {
        const returned = (m: ts.Node): void => {
          if (ts.isPropertyAssignment(m) && m.name.getText(sf) === "reason") add(m.initializer);
          if (!ts.isFunctionLike(m)) ts.forEachChild(m, returned);
        };
        ts.forEachChild(n, returned);
      }
      if ((ts.isAsExpression(n) || ts.isTypeAssertionExpression(n)) && REASON_TYPE.test(n.type.getText(sf))) {
        if (literalsOf(n.expression)) add(n.expression);
        else if (!isCatalogue) casts.push({ file: rel, line: lineOf(n), text: n.getText(sf) });
      }
      if (ts.isStringLiteralLike(n) && !isCatalogue) literals.add(n.text);
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return { sites, casts, literals };
}
