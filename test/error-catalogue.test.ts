import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { ERROR_CATALOGUE, ERROR_REASONS, isErrorReason } from "@orch/contracts";
import { openApiDocument } from "@orch/gateway";
import { errorFromBinary, errorToBinary, httpStatusOf, OrchError } from "@orch/kit";
import { ERRORS_DOC, renderErrorsDoc } from "../scripts/gen-error-docs.ts";
import { scanReasonSites } from "./lib/reason-sites.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const catalogue: Record<string, { status: number; grpc: keyof typeof httpStatusOf | null }> = ERROR_CATALOGUE;
const scan = scanReasonSites(root);

t.test("the scanner finds reasons at every kind of sink, literal or conditional, and reports casts", async (t) => {
  const dir = t.testdir({});
  mkdirSync(join(dir, "src"));
  const file = join(dir, "src", "fixture.ts");
  writeFileSync(
    file,
    [
      'throw invalid("not_catalogued_a", "m");',
      'throw new OrchError("NOT_FOUND", flag ? "branch_one" : "branch_two", "m");',
      'problem("http_only_x", "detail");',
      'class E extends OrchError { constructor() { super("INTERNAL", "from_super", "m"); } }',
      'function wrap(x: string, reason: ReasonFor<"INVALID_ARGUMENT"> = "default_param") { return x; }',
      'wrap("a", "through_wrapper");',
      'const MAP: Record<string, ErrorReason> = { a: "in_typed_map" };',
      "const bypass = someString as ErrorReason;",
      'log.error("not a reason");',
    ].join("\n"),
  );
  const r = scanReasonSites(dir, [file]);
  t.same(
    r.sites.map((s) => [s.reason, s.code ?? null]),
    [
      ["not_catalogued_a", "INVALID_ARGUMENT"],
      ["branch_one", "NOT_FOUND"],
      ["branch_two", "NOT_FOUND"],
      ["http_only_x", null],
      ["from_super", "INTERNAL"],
      ["default_param", null],
      ["through_wrapper", "INVALID_ARGUMENT"],
      ["in_typed_map", null],
    ],
  );
  t.same(
    r.casts.map((c) => c.text),
    ["someString as ErrorReason"],
  );
});

t.test("the scan sees the sources it is meant to", async (t) => {
  const files = new Set(scan.sites.map((s) => s.file.split("/").slice(0, 2).join("/")));
  for (const ws of ["packages/kit", "services/gateway", "services/state", "services/secrets", "agent/src"])
    t.ok(files.has(ws), `reason sites found in ${ws}`);
  t.ok(scan.sites.length > 200, `${scan.sites.length} sites`);
});

t.test("every reason a source passes to OrchError, AgentError, problem() or a helper is catalogued", async (t) => {
  const unlisted = scan.sites.filter((s) => !isErrorReason(s.reason)).map((s) => `${s.file}:${s.line} ${s.reason}`);
  t.same(unlisted, [], "add these to packages/contracts/src/error-catalogue.ts (or fix the typo)");
});

t.test("a site that names its gRPC status uses the catalogue's", async (t) => {
  const wrong = scan.sites
    // A reason catalogued with no gRPC code (an HTTP status none has, like 413) may cross the bus
    // under any code: the gateway answers the catalogue's status for it (services/gateway/src/problem.ts).
    .filter((s) => s.code && isErrorReason(s.reason) && ![null, s.code].includes(catalogue[s.reason]!.grpc))
    .map((s) => `${s.file}:${s.line} ${s.reason}: ${s.code}, catalogue ${catalogue[s.reason]!.grpc}`);
  t.same(wrong, []);
});

t.test("no source casts a computed value to a reason type (narrow it with isErrorReason)", async (t) => {
  t.same(
    scan.casts.map((c) => `${c.file}:${c.line} ${c.text}`),
    [],
  );
});

t.test("every catalogue entry is used by some source", async (t) => {
  t.same(
    ERROR_REASONS.filter((code) => !scan.literals.has(code)),
    [],
    "a code no source mentions is a dead entry: remove it",
  );
});

t.test("codes are snake_case and statuses match the gRPC mapping", async (t) => {
  for (const [code, { status, grpc }] of Object.entries(catalogue)) {
    t.match(code, /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/, code);
    if (grpc) t.equal(status, httpStatusOf[grpc], `${code}: ${grpc}`);
    else t.ok(status >= 400 && status < 600, `${code}: gateway-only HTTP status ${status}`);
  }
});

t.test("a reason off the wire survives the bus codec only if catalogued", async (t) => {
  const sent = new OrchError("NOT_FOUND", "secret_not_found", "no secret 'x'", { field: "name" });
  const back = errorFromBinary(errorToBinary(sent));
  t.same(
    [back.code, back.reason, back.message, back.details],
    ["NOT_FOUND", "secret_not_found", "no secret 'x'", { field: "name" }],
  );
  const foreign = Object.assign(new OrchError("NOT_FOUND", undefined, "m"), { reason: "from_a_newer_release" });
  t.equal(errorFromBinary(errorToBinary(foreign as OrchError)).reason, "not_found");
});

t.test("the OpenAPI document enumerates the catalogue and documents each code with its status", async (t) => {
  type Op = { responses: Record<string, { description?: string }> };
  const doc = openApiDocument() as {
    paths: Record<string, Record<string, Op>>;
    components: { schemas: { Problem: { properties: { code: { enum: string[] } }; "x-error-catalogue": object } } };
  };
  const problem = doc.components.schemas.Problem;
  t.same(problem.properties.code.enum, [...ERROR_REASONS]);
  t.same(Object.keys(problem["x-error-catalogue"]), [...ERROR_REASONS]);
  const mismatched: string[] = [];
  let documented = 0;
  for (const [path, ops] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(ops))
      for (const [status, res] of Object.entries(op.responses)) {
        const codes = /^problem codes: (.+)$/.exec(res.description ?? "")?.[1]?.split(", ") ?? [];
        for (const code of codes) {
          documented++;
          if (!isErrorReason(code) || catalogue[code]!.status !== Number(status))
            mismatched.push(`${method.toUpperCase()} ${path} ${status} ${code}`);
        }
      }
  t.ok(documented > 100, `${documented} documented route errors`);
  t.same(mismatched, [], "a route documents a code under another status than the catalogue's");
});

t.test("docs/errors.md is what scripts/gen-error-docs.ts writes", async (t) => {
  t.equal(readFileSync(ERRORS_DOC, "utf8"), renderErrorsDoc(), "run `npx tsx scripts/gen-error-docs.ts`");
  const table = [...renderErrorsDoc().matchAll(/^\| (\d{3}) \| `([a-z0-9_]+)` \|/gm)];
  t.same(table.map((m) => m[2]).sort(), [...ERROR_REASONS]);
  for (const [, status, code] of table) t.equal(Number(status), catalogue[code!]!.status, code!);
});
