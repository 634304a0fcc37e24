import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import type { Route } from "./requests.js";
import type { Schema } from "./json-schema-arb.js";

export interface Answer {
  status: number;
  contentType: string;
  text: string;
  /** true when the body was not read (event streams, cut short on purpose). */
  streamed: boolean;
}

/**
 * Which documented route the router serves for a concrete path: static segments win over
 * parameters, as in fastify's router (a node id of "summary" is GET /agents/summary). A HEAD is
 * served by the GET route of its path.
 */
export function routeMatcher(routes: Route[]) {
  const table = routes.map((r) => ({ r, segs: r.path.split("/") }));
  return (method: string, urlPath: string): Route | undefined => {
    const segs = urlPath.split("/");
    let best: { r: Route; score: number } | undefined;
    for (const { r, segs: rs } of table) {
      // fastify serves the HEAD of every GET route.
      const served = r.method === method || (method === "HEAD" && r.method === "GET");
      if (!served || rs.length !== segs.length) continue;
      let score = 0;
      let ok = true;
      for (let i = 0; i < rs.length && ok; i++) {
        const s = rs[i]!;
        if (s.startsWith("{")) ok = segs[i] !== "";
        else if (s === segs[i]) score += 1 << (rs.length - i);
        else ok = false;
      }
      if (ok && (!best || score > best.score)) best = { r, score };
    }
    return best?.r;
  };
}

/** Checks each answer against the document: no 5xx, problem+json for 4xx, 2xx bodies as documented. */
export function createOracle(doc: { components: { schemas: Record<string, Schema> } }) {
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
  ajv.addSchema({ $id: "doc", components: doc.components });
  const problem = ajv.compile({ $ref: "doc#/components/schemas/Problem" });
  const cache = new Map<string, ValidateFunction>();
  const validatorFor = (key: string, schema: Schema) => {
    let v = cache.get(key);
    if (!v) {
      // Response schemas refer to components as #/components/...: resolve them inside the document.
      const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')) as Schema;
      v = ajv.compile(rebased);
      cache.set(key, v);
    }
    return v;
  };

  /** Empty when the answer is acceptable, else what is wrong with it. */
  return (method: string, route: Route | undefined, a: Answer): string[] => {
    const wrong: string[] = [];
    if (a.status >= 500) wrong.push(`server error ${a.status}`);
    if (a.status >= 400) {
      if (!a.contentType.startsWith("application/problem+json"))
        wrong.push(`${a.status} with content-type '${a.contentType}', not application/problem+json`);
      if (method === "HEAD") return wrong;
      let body: unknown;
      try {
        body = JSON.parse(a.text);
      } catch {
        wrong.push(`${a.status} body is not JSON`);
        return wrong;
      }
      if (!problem(body)) wrong.push(`problem body invalid: ${ajv.errorsText(problem.errors)}`);
      else if ((body as { status: number }).status !== a.status)
        wrong.push(`problem.status ${(body as { status: number }).status} differs from HTTP ${a.status}`);
      return wrong;
    }
    // A redirect is an answer only where the route documents it (single sign-on's browser routes);
    // the HEAD of a GET route answers like the GET.
    const documentedRedirect =
      a.status >= 300 &&
      a.status < 400 &&
      (route?.method === method || (method === "HEAD" && route?.method === "GET")) &&
      route.op.responses[String(a.status)] !== undefined;
    if ((a.status < 200 || a.status >= 300) && !documentedRedirect) return [...wrong, `unexpected status ${a.status}`];
    if (!route || route.method !== method) {
      // HEAD of a GET route: fastify answers like the GET, without a body.
      if (method === "HEAD") return wrong;
      return [...wrong, `${a.status} for ${method}, which no documented route serves here`];
    }
    const doc = route.op.responses[String(a.status)];
    if (!doc) return [...wrong, `${a.status} is not a documented response of ${route.method} ${route.path}`];
    const schema = doc.content?.["application/json"]?.schema;
    if (!schema) {
      if (a.text !== "") wrong.push(`${a.status} is documented without a body, got ${a.text.slice(0, 80)}`);
      return wrong;
    }
    if (a.streamed) {
      if (!a.contentType.startsWith("text/event-stream")) wrong.push(`stream with content-type ${a.contentType}`);
      return wrong;
    }
    // A documented string is a non-JSON body (a script, a file); anything else must be JSON.
    let body: unknown = a.text;
    if (schema.type !== "string") {
      if (!a.contentType.startsWith("application/json")) wrong.push(`${a.status} with content-type '${a.contentType}'`);
      try {
        body = JSON.parse(a.text);
      } catch {
        return [...wrong, `${a.status} body is not JSON: ${a.text.slice(0, 80)}`];
      }
    }
    const v = validatorFor(`${route.method} ${route.path} ${a.status}`, schema);
    if (!v(body)) wrong.push(`response does not match the documented schema: ${ajv.errorsText(v.errors)}`);
    return wrong;
  };
}
