import fc from "fast-check";
import { waitMs } from "@orch/kit/testing";
import { createOracle, routeMatcher, type Answer } from "./oracle.js";
import { refusedByClose } from "./refusal.js";
import { laneRuns } from "./settings.js";
import { routeRequests, type FuzzRequest, type IdPools, type Operation, type Route } from "./requests.js";
import type { Schema } from "./json-schema-arb.js";

export interface OpenApiDoc {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

export interface FuzzTarget {
  url: string;
  pools: IdPools;
  /** Ids the fuzzer must not delete or rename (its own operator, the agents the pools point at). */
  protectedIds: Set<string>;
  /** Replaces protected ids in destructive routes. */
  stand_ins: Record<string, string>;
  tokens: { admin: string; operator: string };
  relogin(who: "admin" | "operator"): Promise<string>;
  /** Service log lines mentioning a request id (why a 5xx happened). */
  logs(requestId: string): string;
}

export interface FuzzOptions {
  seed: number;
  runs: number;
  /** Requests in flight at once: each lane is its own fc.check with seed + lane. */
  lanes: number;
  /** Which documented routes this run covers. */
  routes: (r: Route) => boolean;
  shrink: boolean;
  /** Record every violation and go on (finding many bugs in one run) instead of stopping a lane at the first. */
  keepGoing: boolean;
}

export interface LaneFailure {
  lane: number;
  seed: number;
  report: string;
}

export interface FuzzSummary {
  /** Requests answered (each checked by the oracle). */
  requests: number;
  /** Requests over the body limit the gateway refused by closing the connection (refusal.ts). */
  refusedByClose: number;
  byStatus: Map<number, number>;
  /** Documented route → count of 2xx answers checked against its schema. */
  ok2xx: Map<string, number>;
  /** Documented route → requests generated for it. */
  perRoute: Map<string, number>;
  /** Documented route → total milliseconds its requests took (where the run's time goes). */
  msPerRoute: Map<string, number>;
  routes: string[];
  failures: LaneFailure[];
  violations: string[];
  ms: number;
}

/** Routes whose path parameter names something the fuzzer depends on: protected ids get a stand-in. */
const DESTRUCTIVE = new Set([
  "DELETE /api/v1/agents/{node_id}",
  "POST /api/v1/agents/{node_id}",
  "DELETE /api/v1/operators/{operator_id}",
  "PATCH /api/v1/operators/{operator_id}",
]);

/** Objects created by the run become ids for later requests (deletes take only these). */
function harvest(pools: IdPools, method: string, path: string, status: number, text: string) {
  if (method !== "POST" || status < 200 || status >= 300) return;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return;
  }
  const add = (key: string, v: unknown) => {
    if (typeof v !== "string" || v === "") return;
    const pool = pools.get(`new:${key}`) ?? [];
    pool.push(v);
    if (pool.length > 30) pool.shift();
    pools.set(`new:${key}`, pool);
  };
  const segs = path.split("/");
  if (segs.length === 4) {
    add(`${segs[3]}.id`, body.id);
    add(`${segs[3]}.name`, body.name);
  }
  if (segs[3] === "terminal" && segs.length === 5) add("session.session_id", body.session_id);
}

const STREAM_TYPES = /^text\/event-stream/;

/** A request with no answer in this long is reported as hung (scaled like every wait of the suite). */
const ANSWER_WAIT_MS = 30_000;

async function send(target: FuzzTarget, req: FuzzRequest, token: string | undefined): Promise<Answer> {
  const headers: Record<string, string> = { ...req.headers };
  if (token !== undefined) headers.authorization = token;
  const ac = new AbortController();
  const limitMs = waitMs(ANSWER_WAIT_MS);
  const timer = setTimeout(() => ac.abort(new Error(`no answer in ${limitMs / 1000} s`)), limitMs);
  try {
    const res = await fetch(target.url + req.url, {
      method: req.method,
      headers,
      ...(req.body !== undefined ? { body: req.body } : {}),
      signal: ac.signal,
      redirect: "manual",
    });
    const contentType = res.headers.get("content-type") ?? "";
    if (res.status < 300 && STREAM_TYPES.test(contentType)) {
      // An event stream stays open: the headers are the answer; read no further.
      ac.abort();
      await res.body?.cancel().catch(() => {});
      return { status: res.status, contentType, text: "", streamed: true };
    }
    return { status: res.status, contentType, text: await res.text(), streamed: false };
  } finally {
    clearTimeout(timer);
  }
}

const short = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

export function describeRequest(req: FuzzRequest): string {
  const h = Object.entries(req.headers)
    .map(([k, v]) => `${k}: ${short(v, 80)}`)
    .join("; ");
  return `${req.method} ${short(req.url, 200)} as ${req.identity} [${h}]${req.body !== undefined ? ` body ${short(req.body, 200)}` : ""}`;
}

/**
 * Runs `runs` generated requests against the gateway over `lanes` concurrent fc.check runs and
 * returns what every answer was checked against (failures carry fast-check's seed and counterexample).
 */
export async function fuzz(doc: OpenApiDoc, target: FuzzTarget, o: FuzzOptions): Promise<FuzzSummary> {
  const all: Route[] = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([m, op]) => ({ method: m.toUpperCase(), path, op })),
  );
  const routes = all.filter(o.routes);
  const match = routeMatcher(all);
  const check = createOracle(doc);
  const arb = fc.oneof(...routes.map((r) => routeRequests(r, target.pools)));
  const summary: FuzzSummary = {
    requests: 0,
    refusedByClose: 0,
    byStatus: new Map(),
    ok2xx: new Map(),
    perRoute: new Map(),
    msPerRoute: new Map(),
    routes: routes.map((r) => `${r.method} ${r.path}`),
    failures: [],
    violations: [],
    ms: 0,
  };
  const tokens = { ...target.tokens };
  const relogins = new Map<"admin" | "operator", Promise<string>>();
  const relogin = (who: "admin" | "operator", stale: string) => {
    if (tokens[who] !== stale) return Promise.resolve(tokens[who]);
    let p = relogins.get(who);
    if (!p) {
      p = target.relogin(who).then((t) => {
        tokens[who] = t;
        relogins.delete(who);
        return t;
      });
      relogins.set(who, p);
    }
    return p;
  };

  const property = fc.asyncProperty(arb, async (generated) => {
    const req = { ...generated };
    summary.perRoute.set(req.route, (summary.perRoute.get(req.route) ?? 0) + 1);
    if (DESTRUCTIVE.has(req.route)) {
      for (const id of target.protectedIds) {
        const seg = `/${encodeURIComponent(id)}`;
        if (req.url.includes(`${seg}?`) || req.url.endsWith(seg) || req.url.includes(`${seg}/`))
          req.url = req.url.replace(seg, `/${target.stand_ins[req.route] ?? "stand-in"}`);
      }
    }
    const who = req.identity;
    const tokenOf = () =>
      who === "admin" || who === "operator"
        ? `Bearer ${tokens[who]}`
        : who === "garbage"
          ? "Bearer 0000.garbage"
          : undefined;
    let used = tokenOf();
    const began = Date.now();
    // As the server sees it: fetch resolves dot segments (also %2e%2e) before sending.
    const path = new URL(target.url + req.url).pathname;
    const route = match(req.method, path);
    /** The answer; undefined when the gateway refused an over-limit body by closing the connection. */
    const sendOrSay = (token: string | undefined) =>
      send(target, req, token).catch((err: unknown) => {
        if (refusedByClose(req, route, err)) return undefined;
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        throw new Error(
          `no answer: ${String(err)} (${cause?.code ?? ""} ${cause?.message ?? ""})\n  request: ${describeRequest(req)}`,
        );
      });
    let a = await sendOrSay(used);
    // The fuzzer signed itself out (logout, token revocation): sign in again and repeat once.
    if (a?.status === 401 && (who === "admin" || who === "operator") && used) {
      await relogin(who, used.slice(7));
      used = tokenOf();
      a = await sendOrSay(used);
    }
    summary.msPerRoute.set(req.route, (summary.msPerRoute.get(req.route) ?? 0) + Date.now() - began);
    if (a === undefined) {
      summary.refusedByClose++;
      return;
    }
    summary.requests++;
    summary.byStatus.set(a.status, (summary.byStatus.get(a.status) ?? 0) + 1);
    const wrong = check(req.method, route, a);
    if (a.status >= 500) {
      const id = /"request_id":"([^"]+)"/.exec(a.text)?.[1];
      if (id) wrong.push(`service log: ${short(target.logs(id), 1500)}`);
    }
    if (wrong.length > 0 && o.keepGoing)
      summary.violations.push(
        `${wrong.join("; ")}\n  request: ${describeRequest(req)}\n  answer: ${a.status} ${short(a.text)}`,
      );
    else if (wrong.length > 0)
      throw new Error(
        `${wrong.join("; ")}\n  request: ${describeRequest(req)}\n  answer: ${a.status} ${a.contentType} ${short(a.text)}`,
      );
    if (a.status < 300 && route) {
      const k = `${route.method} ${route.path}`;
      summary.ok2xx.set(k, (summary.ok2xx.get(k) ?? 0) + 1);
      harvest(target.pools, req.method, path, a.status, a.text);
    }
  });

  const started = Date.now();
  await Promise.all(
    Array.from({ length: o.lanes }, async (_, lane) => {
      const seed = o.seed + lane;
      const numRuns = laneRuns(o.runs, o.lanes, lane);
      if (numRuns === 0) return;
      const details = await fc.check(property, { seed, numRuns, endOnFailure: !o.shrink });
      if (details.failed) {
        // fast-check's own report prints the whole value (headers of 6 KB): the error says it shorter.
        const err =
          details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
        const replay = `fc.check seed ${details.seed}, path "${details.counterexamplePath}", after ${details.numRuns} runs, shrunk ${details.numShrinks} times`;
        summary.failures.push({ lane, seed, report: `${replay}\n${err}` });
      }
    }),
  );
  summary.ms = Date.now() - started;
  return summary;
}
