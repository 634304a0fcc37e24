import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import t from "tap";
import { openApiDocument } from "../src/index.js";

// The published document must type query numbers and booleans as what they are, so a client
// generated from it (or written from it alone) sends `limit=50`, not a string it has to pattern-match;
// the gateway still reads the text a query string carries (schemas.ts qInt/qBool).

interface Param {
  name: string;
  in: string;
  schema: Record<string, unknown>;
}
type Doc = { paths: Record<string, Record<string, { parameters?: Param[]; responses: Record<string, unknown> }>> };

const INTEGER_PARAMS = new Set(["limit", "cols", "rows", "wait"]);
const BOOLEAN_PARAMS = new Set(["unread", "output"]);
// A pattern that only admits digits (optionally signed), or an enum of boolean spellings: a string
// standing in for a number or a boolean.
const NUMERIC_PATTERN = /^\^?-?\??\\d/;
const BOOLEAN_WORDS = new Set(["true", "false", "0", "1"]);

function queryParams(doc: Doc) {
  const out: Array<{ where: string; p: Param }> = [];
  for (const [path, ops] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(ops))
      for (const p of op.parameters ?? [])
        if (p.in === "query") out.push({ where: `${method.toUpperCase()} ${path}`, p });
  return out;
}

const built = openApiDocument() as unknown as Doc;
const committed = JSON.parse(
  readFileSync(fileURLToPath(new URL("../../../packages/client/openapi.json", import.meta.url)), "utf8"),
) as Doc;

for (const [label, doc] of [
  ["built from the route table", built],
  ["committed packages/client/openapi.json", committed],
] as const) {
  t.test(`query parameters have their real types (${label})`, async (t) => {
    const params = queryParams(doc);
    const named = (n: string) => params.filter(({ p }) => p.name === n);
    for (const n of ["limit", "cols", "rows", "unread"]) t.ok(named(n).length > 0, `some route takes ${n}`);
    for (const { where, p } of params) {
      const s = p.schema;
      if (INTEGER_PARAMS.has(p.name)) {
        t.equal(s.type, "integer", `${where} ${p.name} is an integer`);
        t.ok(
          s.format === "int32" || s.format === "int64",
          `${where} ${p.name} has format int32/int64 (${String(s.format)})`,
        );
        t.type(s.minimum, "number", `${where} ${p.name} publishes its minimum`);
        t.type(s.maximum, "number", `${where} ${p.name} publishes its maximum`);
      }
      if (BOOLEAN_PARAMS.has(p.name)) t.same(s.type, "boolean", `${where} ${p.name} is a boolean`);
      if (s.type === "string") {
        t.notOk(
          typeof s.pattern === "string" && NUMERIC_PATTERN.test(s.pattern),
          `${where} ${p.name} is not a digits-patterned string`,
        );
        const e = s.enum as unknown[] | undefined;
        t.notOk(
          Array.isArray(e) && e.length > 0 && e.every((v) => BOOLEAN_WORDS.has(String(v))),
          `${where} ${p.name} is not a string enum of boolean words`,
        );
      }
    }
  });
}

t.test("terminal cols/rows: any positive int32", async (t) => {
  const open = built.paths["/api/v1/terminal/{node_id}"]!.post!;
  for (const n of ["cols", "rows"]) {
    const p = open.parameters!.find((x) => x.name === n)!;
    t.match(p.schema, { type: "integer", format: "int32", minimum: 1, maximum: 2_147_483_647 }, n);
  }
});

t.test("int64 fields the API contract names carry format int64", async (t) => {
  const schemaOf = (path: string, method: string, status: string) =>
    (
      built.paths[path]![method]!.responses[status] as {
        content: { "application/json": { schema: Record<string, unknown> } };
      }
    ).content["application/json"].schema;
  const props = (s: Record<string, unknown>) => s.properties as Record<string, Record<string, unknown>>;
  const format = (s: Record<string, unknown>): unknown =>
    s.format ?? (s.anyOf as Array<Record<string, unknown>> | undefined)?.find((x) => x.type === "integer")?.format;

  const session = (schemaOf("/api/v1/terminal", "get", "200").items ?? {}) as Record<string, unknown>;
  t.equal(format(props(session).opened_at!), "int64", "terminal opened_at");
  t.equal(format(props(session).closed_at!), "int64", "terminal closed_at (nullable)");
  const detail = schemaOf("/api/v1/terminal/session/{session_id}", "get", "200");
  t.equal(format(props(detail).opened_at!), "int64", "terminal detail opened_at");

  const notes = schemaOf("/api/v1/notifications", "get", "200");
  t.equal(format(props(notes).unread_count!), "int64", "notifications unread_count");
  const note = (props(notes).notifications!.items ?? {}) as Record<string, unknown>;
  t.equal(format(props(note).timestamp_ms!), "int64", "notification timestamp_ms");

  t.equal(format(props(schemaOf("/api/v1/channels", "post", "201")).created_at!), "int64", "channel created_at");
  const win = schemaOf("/api/v1/maintenance-windows", "post", "201");
  t.equal(format(props(win).starts_at!), "int64", "window starts_at");
  t.equal(format(props(win).ends_at!), "int64", "window ends_at");
  t.equal(format(props(schemaOf("/api/v1/modules", "post", "201")).uploaded_at!), "int64", "module uploaded_at");
  t.equal(format(props(schemaOf("/api/v1/audit/retention", "get", "200")).retention_days!), "int64", "retention_days");

  const body = (path: string, method: string) =>
    (
      built.paths[path]![method] as unknown as {
        requestBody: { content: Record<string, { schema: Record<string, unknown> }> };
      }
    ).requestBody.content["application/json"]!.schema;
  const winIn = body("/api/v1/maintenance-windows", "post");
  t.equal(format(props(winIn).starts_at!), "int64", "window body starts_at");
  t.equal(format(props(winIn).ends_at!), "int64", "window body ends_at");
  t.equal(format(props(body("/api/v1/audit/retention", "put")).retention_days!), "int64", "retention body");
});
