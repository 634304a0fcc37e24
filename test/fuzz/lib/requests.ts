import fc from "fast-check";
import { validValue, type Schema } from "./json-schema-arb.js";
import { EXAMPLE_QUERIES, exampleBodies } from "./examples.js";
import { mutatedObject, nastyString, rawBody, wrongValue } from "./mutations.js";

export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  schema?: Schema;
}

export interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema?: Schema }> };
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
  "x-auth"?: "public" | "operator" | "admin";
}

/** One documented route: METHOD and OpenAPI path. */
export interface Route {
  method: string;
  path: string;
  op: Operation;
}

export type Identity = "admin" | "operator" | "anonymous" | "garbage";

/** A generated request, before the identity's token is filled in. */
export interface FuzzRequest {
  route: string;
  method: string;
  /** Path and query string, percent-encoded by hand (so invalid encodings reach the server). */
  url: string;
  identity: Identity;
  headers: Record<string, string>;
  body?: string;
}

/**
 * Real identifiers the stack holds, keyed by `<segment before the parameter>.<parameter>` (e.g.
 * `agents.node_id`, `runs.id`): a valid request must name something that exists to reach a handler.
 */
export type IdPools = Map<string, string[]>;

export const poolKey = (path: string, param: string) => {
  const segs = path.split("/");
  const i = segs.indexOf(`{${param}}`);
  return `${segs[i - 1] ?? ""}.${param}`;
};

/** Percent-encodes like encodeURIComponent, but lone surrogates become their raw (invalid) UTF-8 bytes. */
export function encode(s: string): string {
  let out = "";
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (c >= 0xd800 && c <= 0xdfff)
      out +=
        `%${(0xe0 | (c >> 12)).toString(16)}%${(0x80 | ((c >> 6) & 0x3f)).toString(16)}%${(0x80 | (c & 0x3f)).toString(16)}`.toUpperCase();
    else out += encodeURIComponent(ch);
  }
  return out;
}

/** Path segments that arrive raw: encodings the router and decoders must refuse cleanly. */
const rawSegment = fc.constantFrom("%", "%zz", "%00", "%C0%AE", "%ED%A0%80", "%2F", "%2e%2e", "a%20b", ".", "%FF%FE");

const asQueryString = (v: unknown) => (typeof v === "string" ? v : (JSON.stringify(v) ?? ""));

/**
 * Header values fetch can carry (no CR, LF, NUL, nothing past U+00FF): the HTTP parser's own
 * refusals are not reachable through fetch.
 */
const headerValue = fc
  .oneof(
    { weight: 6, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 3, arbitrary: fc.constantFrom("", "Bearer ", "Bearer a.b.c", "Basic Zm9vOmJhcg==", "ÿþ", "\t x") },
    { weight: 1, arbitrary: fc.integer({ min: 300, max: 20_000 }).map((n) => "h".repeat(n)) },
  )
  .map((s) => s.replace(/[^\t\x20-\x7e\xa0-\xff]/g, "?"));

function paramValue(route: Route, p: Parameter, pools: IdPools): fc.Arbitrary<string> {
  const schema = p.schema ?? {};
  const valid = validValue(schema).map(asQueryString);
  const arbs: fc.WeightedArbitrary<string>[] = [
    { weight: 3, arbitrary: valid.map(encode) },
    { weight: 2, arbitrary: fc.oneof(nastyString, wrongValue(schema).map(asQueryString)).map(encode) },
  ];
  // Waits hold a request slot for up to their value: keep valid ones short so the run stays bounded.
  if (p.name === "wait") arbs[0] = { weight: 3, arbitrary: fc.constantFrom("0", "1") };
  if (p.in === "path") {
    // Deletes take what the fuzzer created itself, so the seeded objects stay for everything else.
    const key = `${route.method === "DELETE" ? "new:" : ""}${poolKey(route.path, p.name)}`;
    // Read when generated: the pools grow as the run creates objects.
    const real = fc.tuple(fc.nat(), valid).map(([i, v]) => {
      const pool = [...(pools.get(key) ?? []), ...(key.startsWith("new:") ? [] : (pools.get(`new:${key}`) ?? []))];
      return pool.length > 0 ? pool[i % pool.length]! : v;
    });
    arbs.push({ weight: 6, arbitrary: real.map(encode) });
  }
  if (p.in === "path") arbs.push({ weight: 1, arbitrary: rawSegment });
  return fc.oneof(...arbs);
}

function queryString(route: Route, pools: IdPools): fc.Arbitrary<string> {
  const qs = (route.op.parameters ?? []).filter((p) => p.in === "query");
  const one = (p: Parameter) =>
    fc
      .tuple(fc.integer({ min: 0, max: 9 }), paramValue(route, p, pools), paramValue(route, p, pools))
      .map(([roll, a, b]) => {
        const k = encode(p.name);
        if (roll < (p.required ? 1 : 4)) return [];
        if (roll === 9) return [`${k}=${a}`, `${k}=${b}`]; // repeated: an array to the parser
        return [`${k}=${a}`];
      });
  const extra = fc.oneof(
    { weight: 4, arbitrary: fc.constant([] as string[]) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.oneof(nastyString, fc.constantFrom("__proto__", "constructor", "a[b]", "a[]")), nastyString)
        .map(([k, v]) => [`${encode(k)}=${encode(v)}`]),
    },
    { weight: 1, arbitrary: rawSegment.map((s) => [`q=${s}`]) },
  );
  const example = EXAMPLE_QUERIES[`${route.method} ${route.path}`];
  const generated = fc.tuple(fc.tuple(...qs.map(one)), extra).map(([parts, more]) => {
    const all = [...parts.flat(), ...more];
    return all.length ? `?${all.join("&")}` : "";
  });
  return example ? fc.oneof(generated, example) : generated;
}

function bodyOf(route: Route, pools: IdPools): fc.Arbitrary<{ body?: string; contentType?: string }> {
  const content = route.op.requestBody?.content ?? {};
  const schema = content["application/json"]?.schema;
  const json = (a: fc.Arbitrary<unknown>) =>
    a.map((v) => ({ body: JSON.stringify(v) ?? "null", contentType: "application/json" }));
  const raw = rawBody.map((body) => ({ body, contentType: "application/json" }));
  const oddType = fc
    .tuple(
      fc.oneof(
        rawBody,
        fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? ""),
      ),
      fc.constantFrom(
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=utf-16",
        "application/JSON",
        "application/json;;",
        "",
      ),
    )
    .map(([body, contentType]) => ({ body, contentType }));
  const example = exampleBodies(pools.get("example.repo_url")?.[0] ?? "file:///nonexistent")[
    `${route.method} ${route.path}`
  ];
  if (schema)
    return fc.oneof(
      { weight: 5, arbitrary: json(validValue(schema)) },
      ...(example ? [{ weight: 5, arbitrary: json(example) }] : []),
      { weight: 3, arbitrary: json(mutatedObject(schema)) },
      { weight: 2, arbitrary: raw },
      { weight: 1, arbitrary: oddType },
      { weight: 1, arbitrary: fc.constant({}) },
    );
  if (content["*/*"])
    return fc.oneof(
      fc.string({ unit: "binary", maxLength: 2000 }).map((body) => ({ body, contentType: "application/octet-stream" })),
      oddType,
      raw,
    );
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant({}) },
    { weight: 1, arbitrary: raw },
    { weight: 1, arbitrary: oddType },
  );
}

function extraHeaders(route: Route): fc.Arbitrary<Record<string, string>> {
  const keyed = (route.op.parameters ?? []).some((p) => p.name === "Idempotency-Key");
  const idem = fc.oneof(fc.uuid(), fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/), headerValue);
  return fc
    .tuple(
      keyed ? fc.option(idem, { freq: 3 }) : fc.constant(null),
      fc.option(fc.constantFrom("application/json", "text/event-stream", "*/*", "text/html", "application/xml"), {
        freq: 2,
      }),
      fc.option(
        fc.tuple(
          fc.constantFrom(
            "x-request-id",
            "last-event-id",
            "cookie",
            "x-forwarded-for",
            "origin",
            "x-csrf-token",
            "range",
            "accept-encoding",
            "if-none-match",
          ),
          headerValue,
        ),
        { freq: 2 },
      ),
    )
    .map(([key, accept, other]) => {
      const h: Record<string, string> = {};
      if (key !== null) h["idempotency-key"] = key;
      if (accept !== null) h.accept = accept;
      if (other !== null) h[other[0]] = other[1];
      return h;
    });
}

const OTHER_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"];

/** Requests for one documented route: its method most of the time, valid and broken inputs. */
export function routeRequests(route: Route, pools: IdPools): fc.Arbitrary<FuzzRequest> {
  const pathParams = (route.op.parameters ?? []).filter((p) => p.in === "path");
  const path = fc.tuple(...pathParams.map((p) => paramValue(route, p, pools))).map((vals) => {
    let out = route.path;
    pathParams.forEach((p, i) => {
      out = out.replace(`{${p.name}}`, vals[i] ?? "");
    });
    return out;
  });
  const identity = fc.constantFrom<Identity>("admin", "admin", "admin", "operator", "operator", "anonymous", "garbage");
  const method = fc.oneof(
    { weight: 19, arbitrary: fc.constant(route.method) },
    { weight: 1, arbitrary: fc.constantFrom(...OTHER_METHODS) },
  );
  return fc
    .tuple(method, path, queryString(route, pools), identity, bodyOf(route, pools), extraHeaders(route))
    .map(([m, p, q, who, b, headers]) => {
      const req: FuzzRequest = {
        route: `${route.method} ${route.path}`,
        method: m,
        url: p + q,
        identity: who,
        headers,
      };
      // GET and HEAD cannot carry a body in fetch.
      if (b.body !== undefined && m !== "GET" && m !== "HEAD") {
        req.body = b.body;
        if (b.contentType) headers["content-type"] = b.contentType;
      }
      return req;
    });
}
