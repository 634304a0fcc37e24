import t from "tap";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { CSRF_HEADER } from "@orch/contracts/console";
import { OrchError } from "@orch/kit";
import type { Principal, TokenCache } from "../src/auth-cache.js";
import type { GatewayConfig } from "../src/config.js";
import { csrfToken } from "../src/console/csrf.js";
import { sessionCookieName } from "../src/console/session.js";
import { authenticate } from "../src/pipeline/authenticate.js";
import { parseInput } from "../src/pipeline/parse.js";
import { replyWith } from "../src/pipeline/reply.js";
import { throttle, throttleOf } from "../src/pipeline/throttle.js";
import { createRateLimiter } from "../src/rate-limit.js";
import { route, type RouteSpec } from "../src/route.js";

const spec = (over: Partial<RouteSpec> = {}): RouteSpec =>
  route({
    method: "POST",
    path: "/api/v1/things",
    auth: "operator",
    summary: "",
    tags: [],
    responses: { 201: null },
    handler: async () => undefined,
    ...over,
  }) as RouteSpec;

const request = (over: Record<string, unknown> = {}) =>
  ({ method: "POST", ip: "10.0.0.1", headers: {}, params: {}, query: {}, body: undefined, ...over }) as FastifyRequest;

const fakeReply = () => {
  const headers: Record<string, string> = {};
  const r = {
    headers,
    sent: false,
    status: 0,
    raw: { headersSent: false, destroyed: false },
    header(k: string, v: string) {
      headers[k] = v;
      return r;
    },
    code(s: number) {
      r.status = s;
      return r;
    },
    send() {
      return "sent";
    },
  };
  return r;
};

const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof OrchError ? err.reason : String(err);
  }
  return "none";
};

t.test("throttle: login routes share one budget, a rateLimitKey route has its own", async (t) => {
  let now = 0;
  const clock = { now: () => now };
  const login = createRateLimiter({ perMinute: 1, clock });
  let fresh = 0;
  const make = () => {
    fresh++;
    return createRateLimiter({ perMinute: 1, clock });
  };
  t.equal(throttleOf(spec(), login, make), undefined, "other routes are not throttled");
  const verify = throttleOf(spec({ path: "/api/v1/auth/verify" }), login, make)!;
  const challenge = throttleOf(spec({ path: "/api/v1/auth/challenge" }), login, make)!;
  t.equal(verify.limiter, login);
  t.equal(challenge.limiter, login);
  t.equal(fresh, 0);
  const hook = throttleOf(spec({ rateLimitKey: () => "k" }), login, make)!;
  t.equal(fresh, 1);
  t.not(hook.limiter, login);

  const reply = fakeReply();
  throttle(verify, request(), reply as unknown as FastifyReply);
  t.equal(
    codeOf(() => throttle(challenge, request(), reply as unknown as FastifyReply)),
    "rate_limited",
    "the second sign-in attempt of the minute is refused",
  );
  t.equal(reply.headers["retry-after"], "60");
  t.equal(
    codeOf(() => throttle(verify, request({ ip: "10.0.0.2" }), reply as unknown as FastifyReply)),
    "none",
  );
  throttle(hook, request(), reply as unknown as FastifyReply);
  now = 60_000;
  t.equal(
    codeOf(() => throttle(verify, request(), reply as unknown as FastifyReply)),
    "none",
    "refilled",
  );
});

t.test("authenticate: public, missing, cached, resolved, admin, CSRF", async (t) => {
  const op: Principal = { id: "op1", name: "ann", role: "operator", scope: "", expiresAt: Number.POSITIVE_INFINITY };
  const tokens = {
    cached: (tok: string) => (tok === "hot" ? op : undefined),
    resolve: async (tok: string) => {
      if (tok === "cold") return op;
      throw new OrchError("UNAUTHENTICATED", "unauthenticated", "no");
    },
  } as unknown as TokenCache;
  const http = { public_url: "http://localhost" } as GatewayConfig["http"];
  const deps = { tokens, http };
  const run = (level: "public" | "operator" | "admin", req: FastifyRequest) =>
    new Promise<string>((resolve) => {
      try {
        authenticate(deps, level, req, (err) => resolve(err ? (err as OrchError).reason : "ok"));
      } catch (err) {
        resolve(`threw ${(err as OrchError).reason}`);
      }
    });
  const bearer = (tok: string) => request({ headers: { authorization: `Bearer ${tok}` } });

  t.equal(await run("public", request()), "ok");
  t.equal(await run("operator", request()), "threw unauthenticated");
  const hot = bearer("hot");
  t.equal(await run("operator", hot), "ok");
  t.equal(hot.principal, op);
  t.equal(await run("operator", bearer("cold")), "ok");
  t.equal(await run("operator", bearer("bad")), "unauthenticated", "a refused token through done()");
  t.equal(await run("admin", bearer("hot")), "threw admin_required", "a cached principal is refused by throwing");
  t.equal(await run("admin", bearer("cold")), "admin_required", "a resolved one through done()");
  const cookie = `${sessionCookieName(http)}=hot`;
  t.equal(await run("operator", request({ headers: { cookie } })), "threw csrf_token_invalid");
  t.equal(await run("operator", request({ method: "GET", headers: { cookie } })), "ok", "reads need no CSRF");
  const withCsrf = request({ headers: { cookie, [CSRF_HEADER]: csrfToken("hot") } });
  t.equal(await run("operator", withCsrf), "ok");
});

t.test("parseInput: validates path, query and body; raw bodies stay bytes", async (t) => {
  const s = spec({
    params: z.object({ id: z.string().min(2) }),
    query: z.object({ cursor: z.string().optional(), limit: z.coerce.number().int().optional() }),
    body: z.object({ name: z.string() }),
  });
  const ok = parseInput(s, request({ params: { id: "ab" }, query: { limit: "5" }, body: { name: "n" } }));
  t.same(ok, { params: { id: "ab" }, query: { limit: 5 }, body: { name: "n" } });
  const err = (req: FastifyRequest, target = s) => {
    try {
      parseInput(target, req);
    } catch (e) {
      return e as OrchError;
    }
    throw new Error("accepted");
  };
  const badPath = err(request({ params: { id: "a" }, body: { name: "n" } }));
  t.equal(badPath.reason, "invalid_request");
  t.match(badPath.message, /^path field 'id' /);
  t.equal(err(request({ params: { id: "ab" }, query: { cursor: 5 }, body: {} })).reason, "invalid_cursor");
  const noBody = err(request({ params: { id: "ab" } }));
  t.match(noBody.message, /^body /);
  t.equal(err(request({ params: { id: "a\u0000b" }, body: { name: "n" } })).code, "INVALID_ARGUMENT", "NUL refused");

  const raw = spec({ rawBody: { maxBytes: 10 } });
  t.same(parseInput(raw, request({ body: Buffer.from("x") })).body, Buffer.from("x"));
  t.same(parseInput(raw, request()).body, Buffer.alloc(0));
});

t.test("replyWith: success status unless the handler answered itself", async (t) => {
  const r = fakeReply();
  t.same(replyWith(r as unknown as FastifyReply, 201, { a: 1 }), { a: 1 });
  t.equal(r.status, 201);
  const empty = fakeReply();
  t.equal(replyWith(empty as unknown as FastifyReply, 204, undefined), "sent");
  const self = fakeReply();
  t.equal(replyWith(self as unknown as FastifyReply, 200, self), self);
  t.equal(self.status, 0);
  const gone = fakeReply();
  gone.raw.destroyed = true;
  t.equal(replyWith(gone as unknown as FastifyReply, 200, { a: 1 }), gone);
  t.equal(gone.status, 0);
});
