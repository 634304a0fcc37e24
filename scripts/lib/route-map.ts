// The static analysis behind docs/routes.md (scripts/gen-route-map.ts): which bus subjects each
// gateway route calls, which service handler answers, and the tables and events that handler
// reaches. It follows symbols with the TypeScript checker, not names, so helpers in the same file
// or a sibling file, clients passed as parameters and route factories are all seen.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

export type Method = "GET" | "POST" | "PUT" | "DELETE" | "PATCH";

/** One operation of the OpenAPI document. */
export interface ApiRoute {
  method: Method;
  path: string;
  tags: string[];
}

export interface HandlerRef {
  /** The file of the handler's code, relative to the repository. */
  file: string;
  /** `<factory>.<method>`, e.g. `registryHandlers.listAgents`. */
  name: string;
}

export interface RpcCall {
  subject: string;
  service: string;
  /** Absent when the service does not serve the method (the analysis lost it, or the code is wrong). */
  handler?: HandlerRef;
  /** `schema.table`, from the SQL the handler reaches. */
  tables: string[];
  /** Audit event types the handler reaches. */
  events: string[];
}

export interface MappedRoute extends ApiRoute {
  /** The file holding the route's `route({...})`; absent when no declaration matched. */
  file?: string;
  auth?: string;
  calls: RpcCall[];
}

export interface RouteMap {
  routes: MappedRoute[];
  /** Declarations found in the sources that are not in the OpenAPI document. */
  undocumented: string[];
}

const rel = (root: string, f: string) => relative(root, f).split("\\").join("/");
const key = (method: string, path: string) => `${method} ${path}`;

function tsFiles(dir: string, out: string[] = []): string[] {
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) tsFiles(p, out);
    else if (e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

export function readOpenApiRoutes(file: string): ApiRoute[] {
  const doc = JSON.parse(readFileSync(file, "utf8")) as { paths: Record<string, Record<string, { tags?: string[] }>> };
  const out: ApiRoute[] = [];
  for (const [path, ops] of Object.entries(doc.paths))
    for (const [m, op] of Object.entries(ops))
      out.push({ method: m.toUpperCase() as Method, path, tags: op.tags ?? [] });
  return out;
}

/** Table names a service's migrations create: the filter that keeps CTE aliases and functions out. */
function migrationTables(dir: string): Set<string> {
  const names = new Set<string>();
  if (!existsSync(dir)) return names;
  for (const f of readdirSync(dir).filter((n) => n.endsWith(".sql")))
    for (const m of readFileSync(join(dir, f), "utf8").matchAll(
      /create\s+table\s+(?:if\s+not\s+exists\s+)?([a-z_][a-z0-9_]*)/gi,
    ))
      names.add(m[1]!.toLowerCase());
  return names;
}

const SQL_TABLE = /\b(?:from|into|update|join)\s+(?:only\s+)?([a-z_][a-z0-9_]*)\b/gi;

interface ServedMethod {
  service: string;
  handler: HandlerRef;
  body: ts.Node;
}

interface ServedService {
  service: string;
  methods: Map<string, ServedMethod>;
  /** Every method the descriptor declares (local names), which a client of it has as properties. */
  names: Set<string>;
}

interface Analysis {
  program: ts.Program;
  checker: ts.TypeChecker;
  root: string;
}

function unalias(a: Analysis, s: ts.Symbol | undefined): ts.Symbol | undefined {
  return s && s.flags & ts.SymbolFlags.Alias ? a.checker.getAliasedSymbol(s) : s;
}

/** The function bodies a call or a reference can run: declarations with code, never .d.ts. */
function callees(a: Analysis, expr: ts.Expression): ts.Node[] {
  const target = ts.isPropertyAccessExpression(expr) ? expr.name : expr;
  let sym = unalias(a, a.checker.getSymbolAtLocation(target));
  if (!sym && ts.isShorthandPropertyAssignment(target.parent))
    sym = a.checker.getShorthandAssignmentValueSymbol(target.parent);
  const out: ts.Node[] = [];
  for (const d of sym?.declarations ?? []) {
    if (d.getSourceFile().isDeclarationFile) continue;
    if (ts.isFunctionDeclaration(d) || ts.isMethodDeclaration(d)) {
      if (d.body) out.push(d.body);
    } else if (ts.isClassDeclaration(d)) {
      // `new X(...)`: whatever the instance does later (a stream's reads) belongs to the route too.
      for (const m of d.members)
        if ((ts.isMethodDeclaration(m) || ts.isConstructorDeclaration(m)) && m.body) out.push(m.body);
    } else if ((ts.isVariableDeclaration(d) || ts.isPropertyAssignment(d)) && d.initializer) {
      const init = d.initializer;
      if (ts.isArrowFunction(init) || ts.isFunctionExpression(init)) out.push(init.body);
    }
  }
  return out;
}

/**
 * Visits every node of `start` and of every function it calls or references whose code lives in
 * a file `inScope` accepts, each function once.
 */
function walkReachable(a: Analysis, start: ts.Node, inScope: (file: string) => boolean, visit: (n: ts.Node) => void) {
  const seen = new Set<ts.Node>([start]);
  const queue = [start];
  const follow = (e: ts.Expression) => {
    for (const body of callees(a, e))
      if (!seen.has(body) && inScope(body.getSourceFile().fileName)) {
        seen.add(body);
        queue.push(body);
      }
  };
  while (queue.length) {
    const node = queue.shift()!;
    const step = (n: ts.Node): void => {
      visit(n);
      if (ts.isCallExpression(n) || ts.isNewExpression(n)) follow(n.expression);
      // A function passed by name (`rows.map(toAgent)`) runs too.
      else if (ts.isIdentifier(n) && isValueUse(n)) follow(n);
      // SQL is often assembled from constants (`${VIEW} WHERE ...`): their text is the query's too.
      else if (ts.isIdentifier(n) && ts.isTemplateSpan(n.parent)) {
        const init = constantText(a, n);
        if (init && !seen.has(init) && inScope(init.getSourceFile().fileName)) {
          seen.add(init);
          queue.push(init);
        }
      }
      ts.forEachChild(n, step);
    };
    step(node);
  }
}

/** The initialiser of a string constant an identifier names. */
function constantText(a: Analysis, id: ts.Identifier): ts.Expression | undefined {
  const d = unalias(a, a.checker.getSymbolAtLocation(id))?.valueDeclaration;
  const init = d && ts.isVariableDeclaration(d) ? d.initializer : undefined;
  return init && (ts.isStringLiteralLike(init) || ts.isTemplateExpression(init) || ts.isBinaryExpression(init))
    ? init
    : undefined;
}

const isValueUse = (n: ts.Identifier) =>
  (ts.isCallExpression(n.parent) && n.parent.arguments.includes(n)) ||
  (ts.isPropertyAssignment(n.parent) && n.parent.initializer === n) ||
  ts.isShorthandPropertyAssignment(n.parent);

function prop(obj: ts.ObjectLiteralExpression, name: string): ts.ObjectLiteralElementLike | undefined {
  return obj.properties.find((p) => p.name && ts.isIdentifier(p.name) && p.name.text === name);
}

function propInit(obj: ts.ObjectLiteralExpression, name: string): ts.Expression | undefined {
  const p = prop(obj, name);
  if (p && ts.isShorthandPropertyAssignment(p)) return p.name;
  return p && ts.isPropertyAssignment(p) ? p.initializer : undefined;
}

function stringLiterals(t: ts.Type): string[] | undefined {
  const parts = t.isUnion() ? t.types : [t];
  const out: string[] = [];
  for (const p of parts) {
    if (!p.isStringLiteral()) return undefined;
    out.push(p.value);
  }
  return out;
}

/**
 * The string values an expression can take. A variable is read through its initialiser, so
 * `const auth: AuthLevel = flag ? "operator" : "admin"` gives the two it can be, not all three.
 */
function literalValues(a: Analysis, e: ts.Expression, depth = 0): string[] {
  while (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e)) e = e.expression;
  if (ts.isStringLiteralLike(e)) return [e.text];
  if (ts.isConditionalExpression(e))
    return [...new Set([...literalValues(a, e.whenTrue, depth), ...literalValues(a, e.whenFalse, depth)])];
  if (ts.isIdentifier(e)) {
    const sym = ts.isShorthandPropertyAssignment(e.parent)
      ? a.checker.getShorthandAssignmentValueSymbol(e.parent)
      : a.checker.getSymbolAtLocation(e);
    const d = unalias(a, sym)?.valueDeclaration;
    if (d && ts.isVariableDeclaration(d) && d.initializer) return literalValues(a, d.initializer);
    if (d && ts.isParameter(d) && depth < 4) {
      const args = argumentsOf(a, d);
      if (args.length) return [...new Set(args.flatMap((x) => literalValues(a, x, depth + 1)))];
    }
  }
  return stringLiterals(a.checker.getTypeAtLocation(e)) ?? [];
}

/** What the calls in a function's own file pass for one of its parameters (a route installer's `auth`). */
function argumentsOf(a: Analysis, param: ts.ParameterDeclaration): ts.Expression[] {
  const fn = param.parent;
  const index = fn.parameters.indexOf(param);
  const name = ts.isFunctionDeclaration(fn)
    ? fn.name
    : ts.isVariableDeclaration(fn.parent) && ts.isIdentifier(fn.parent.name)
      ? fn.parent.name
      : undefined;
  const target = name && a.checker.getSymbolAtLocation(name);
  if (!target) return [];
  const out: ts.Expression[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && a.checker.getSymbolAtLocation(n.expression) === target && n.arguments[index])
      out.push(n.arguments[index]);
    ts.forEachChild(n, visit);
  };
  visit(fn.getSourceFile());
  return out;
}

/** Every value a route's `path` can take; a part whose type is not a literal union matches one segment. */
function pathPatterns(a: Analysis, e: ts.Expression): RegExp[] {
  const esc = (s: string) => s.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/[{}]/g, "\\$&");
  if (ts.isStringLiteralLike(e)) return [new RegExp(`^${esc(e.text)}$`)];
  if (!ts.isTemplateExpression(e)) return [];
  let alts = [esc(e.head.text)];
  for (const span of e.templateSpans) {
    const values = stringLiterals(a.checker.getTypeAtLocation(span.expression));
    const parts = values ? values.map(esc) : ["[^/]+"];
    alts = alts.flatMap((x) => parts.map((p) => x + p + esc(span.literal.text)));
  }
  return alts.map((x) => new RegExp(`^${x}$`));
}

function functionBody(member: ts.ObjectLiteralElementLike | undefined): ts.Node | undefined {
  if (!member) return undefined;
  if (ts.isMethodDeclaration(member)) return member.body;
  if (ts.isPropertyAssignment(member)) {
    const init = member.initializer;
    if (ts.isArrowFunction(init) || ts.isFunctionExpression(init)) return init.body;
  }
  return undefined;
}

/**
 * The code of one entry of a handlers object: a method, a function, a function declared elsewhere
 * (`getX` or `getX: getX`), or a factory's product (`getX: getX(engine)`, the function it returns).
 */
function handlerBody(a: Analysis, member: ts.ObjectLiteralElementLike): ts.Node | undefined {
  const direct = functionBody(member);
  if (direct) return direct;
  if (ts.isShorthandPropertyAssignment(member)) return callees(a, member.name)[0];
  if (!ts.isPropertyAssignment(member)) return undefined;
  const init = member.initializer;
  if (ts.isIdentifier(init) || ts.isPropertyAccessExpression(init)) return callees(a, init)[0];
  if (!ts.isCallExpression(init)) return undefined;
  const factory = callees(a, init.expression)[0];
  return factory && (returnedFunctions(factory)[0] ?? factory);
}

function returnedFunctions(body: ts.Node): ts.Node[] {
  if (ts.isArrowFunction(body) || ts.isFunctionExpression(body)) return [body.body];
  const out: ts.Node[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isFunctionLike(n)) return;
    if (
      ts.isReturnStatement(n) &&
      n.expression &&
      (ts.isArrowFunction(n.expression) || ts.isFunctionExpression(n.expression))
    )
      out.push(n.expression.body);
    ts.forEachChild(n, visit);
  };
  ts.forEachChild(body, visit);
  return out;
}

/** The object literals a handler factory returns (`return { ... }` or `=> ({ ... })`). */
function returnedObjects(body: ts.Node): ts.ObjectLiteralExpression[] {
  if (ts.isParenthesizedExpression(body)) return returnedObjects(body.expression);
  if (ts.isObjectLiteralExpression(body)) return [body];
  const out: ts.ObjectLiteralExpression[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isFunctionLike(n) && n !== body.parent) return;
    if (ts.isReturnStatement(n) && n.expression) {
      let x = n.expression;
      while (ts.isParenthesizedExpression(x) || ts.isAsExpression(x) || ts.isSatisfiesExpression(x)) x = x.expression;
      if (ts.isObjectLiteralExpression(x)) out.push(x);
    }
    ts.forEachChild(n, visit);
  };
  ts.forEachChild(body, visit);
  return out;
}

function methodName(m: ts.ObjectLiteralElementLike): string | undefined {
  return m.name && (ts.isIdentifier(m.name) || ts.isStringLiteral(m.name)) ? m.name.text : undefined;
}

/** serveRpc({ name, service, handlers }) of every service: descriptor type → method → handler. */
function servedMethods(a: Analysis, files: ts.SourceFile[]) {
  const byDescriptor = new Map<ts.Type, ServedService>();
  for (const sf of files) {
    const visit = (n: ts.Node): void => {
      if (
        ts.isCallExpression(n) &&
        ts.isIdentifier(n.expression) &&
        n.expression.text === "serveRpc" &&
        n.arguments[0] &&
        ts.isObjectLiteralExpression(n.arguments[0])
      ) {
        const opts = n.arguments[0];
        const name = propInit(opts, "name");
        const service = propInit(opts, "service");
        const handlers = propInit(opts, "handlers");
        if (name && ts.isStringLiteral(name) && service && handlers && ts.isObjectLiteralExpression(handlers)) {
          const methods = new Map<string, ServedMethod>();
          const add = (m: ts.ObjectLiteralElementLike, factory: string) => {
            const local = methodName(m);
            const body = handlerBody(a, m);
            if (local && body)
              methods.set(local, {
                service: name.text,
                handler: { file: rel(a.root, body.getSourceFile().fileName), name: `${factory}.${local}` },
                body,
              });
          };
          for (const h of handlers.properties) {
            if (ts.isSpreadAssignment(h) && ts.isCallExpression(h.expression)) {
              const factory = h.expression.expression.getText();
              for (const body of callees(a, h.expression.expression))
                for (const obj of returnedObjects(body)) for (const m of obj.properties) add(m, factory);
            } else add(h, "handlers");
          }
          const type = a.checker.getTypeAtLocation(service);
          const method = type.getProperty("method");
          const names = method
            ? a.checker
                .getTypeOfSymbolAtLocation(method, service)
                .getProperties()
                .map((p) => p.name)
            : [];
          byDescriptor.set(type, { service: name.text, methods, names: new Set(names) });
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return byDescriptor;
}

/**
 * The service a value is a client of: `Client<typeof XService>` directly, or any type (an alias of
 * it, a field of a context) whose properties are exactly one descriptor's methods.
 */
function clientOf(served: Map<ts.Type, ServedService>, t: ts.Type): ServedService | undefined {
  if (t.aliasSymbol?.name === "Client" && t.aliasTypeArguments?.[0]) {
    const svc = served.get(t.aliasTypeArguments[0]);
    if (svc) return svc;
  }
  const props = t.getProperties().map((p) => p.name);
  if (!props.length) return undefined;
  for (const svc of served.values())
    if (svc.names.size === props.length && props.every((p) => svc.names.has(p))) return svc;
  return undefined;
}

/** The proto method name of a generated client's local name (protobuf-es lower-cases the first letter). */
const protoName = (local: string) => local[0]!.toUpperCase() + local.slice(1);

/**
 * Maps every route of `api` to its declaration and the RPCs it calls. `eventTypes` is the event
 * catalogue's keys: a literal counts as an event only if the catalogue has it.
 */
export function analyseRoutes(root: string, api: ApiRoute[], eventTypes: ReadonlySet<string>): RouteMap {
  const servicesDir = join(root, "services");
  const names = readdirSync(servicesDir).filter((d) => existsSync(join(servicesDir, d, "src")));
  const files = names.flatMap((n) => tsFiles(join(servicesDir, n, "src")));
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2023,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ["node"],
    customConditions: ["orch-source"],
  };
  const program = ts.createProgram(files, options);
  const a: Analysis = { program, checker: program.getTypeChecker(), root };
  const sourceOf = (dir: string) =>
    program.getSourceFiles().filter((sf) => sf.fileName.startsWith(`${join(servicesDir, dir)}/`));

  const served = servedMethods(
    a,
    names.filter((n) => n !== "gateway").flatMap((n) => sourceOf(join(n, "src"))),
  );
  const tablesOf = new Map(names.map((n) => [n, migrationTables(join(servicesDir, n, "migrations"))]));

  const effects = new Map<ServedMethod, { tables: string[]; events: string[] }>();
  const effectsOf = (m: ServedMethod) => {
    let e = effects.get(m);
    if (e) return e;
    const tables = new Set<string>();
    const events = new Set<string>();
    const known = tablesOf.get(m.service) ?? new Set<string>();
    const srcDir = `${join(servicesDir, m.service, "src")}/`;
    walkReachable(
      a,
      m.body,
      (f) => f.startsWith(srcDir),
      (n) => {
        if (ts.isStringLiteralLike(n) || ts.isTemplateHead(n) || ts.isTemplateMiddle(n) || ts.isTemplateTail(n)) {
          for (const t of n.text.matchAll(SQL_TABLE))
            if (known.has(t[1]!.toLowerCase())) tables.add(`${m.service}.${t[1]!.toLowerCase()}`);
        } else if (ts.isPropertyAssignment(n) && ts.isIdentifier(n.name) && n.name.text === "type") {
          for (const v of stringLiterals(a.checker.getTypeAtLocation(n.initializer)) ?? [])
            if (eventTypes.has(v)) events.add(v);
        }
      },
    );
    e = { tables: [...tables].sort(), events: [...events].sort() };
    effects.set(m, e);
    return e;
  };

  const gatewaySrc = `${join(servicesDir, "gateway", "src")}/`;
  const routesDir = `${gatewaySrc}routes/`;
  const declared: Array<{ method: string; paths: RegExp[]; auth: string; file: string; calls: RpcCall[] }> = [];
  for (const sf of sourceOf(join("gateway", "src", "routes"))) {
    const visit = (n: ts.Node): void => {
      if (
        ts.isCallExpression(n) &&
        ts.isIdentifier(n.expression) &&
        n.expression.text === "route" &&
        n.arguments[0] &&
        ts.isObjectLiteralExpression(n.arguments[0])
      ) {
        const spec = n.arguments[0];
        const method = propInit(spec, "method");
        const path = propInit(spec, "path");
        const auth = propInit(spec, "auth");
        const handler = functionBody(prop(spec, "handler"));
        const calls = new Map<string, RpcCall>();
        if (handler)
          walkReachable(
            a,
            handler,
            (f) => f.startsWith(gatewaySrc),
            (c) => {
              if (!ts.isCallExpression(c) || !ts.isPropertyAccessExpression(c.expression)) return;
              const svc = clientOf(served, a.checker.getTypeAtLocation(c.expression.expression));
              if (!svc) return;
              const local = c.expression.name.text;
              const m = svc.methods.get(local);
              const service = svc.service;
              const subject = `orch.${service}.${protoName(local)}`;
              if (!calls.has(subject))
                calls.set(subject, {
                  subject,
                  service,
                  ...(m ? { handler: m.handler } : {}),
                  ...(m ? effectsOf(m) : { tables: [], events: [] }),
                });
            },
          );
        declared.push({
          method: method ? (literalValues(a, method)[0] ?? "?") : "?",
          paths: path ? pathPatterns(a, path) : [],
          auth: auth ? literalValues(a, auth).sort().join(" or ") || "?" : "?",
          file: rel(root, sf.fileName),
          calls: [...calls.values()].sort((x, y) => (x.subject < y.subject ? -1 : 1)),
        });
      }
      ts.forEachChild(n, visit);
    };
    if (sf.fileName.startsWith(routesDir)) visit(sf);
  }

  const used = new Set<number>();
  const routes = api.map((r): MappedRoute => {
    const i = declared.findIndex((d) => d.method === r.method && d.paths.some((p) => p.test(r.path)));
    if (i < 0) return { ...r, calls: [] };
    used.add(i);
    const d = declared[i]!;
    return { ...r, file: d.file, auth: d.auth, calls: d.calls };
  });
  const undocumented = declared
    .filter((_, i) => !used.has(i))
    .map((d) => key(d.method, d.paths.map((p) => p.source).join(" | ")));
  return { routes, undocumented };
}
