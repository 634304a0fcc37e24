/**
 * Every input rule the gateway shares with a service (packages/contracts/src/rules) refuses and
 * accepts the same inputs on both sides. The gateway side is the real route: its zod schemas, then
 * its handler up to the first RPC (a bus request means the gateway let the input through). The
 * service side is the service's own validator, or its handler up to the first database access.
 *
 * Lives here rather than in packages/contracts/test: it imports the gateway and the services from
 * source (relative paths, no new dependencies), and contracts must not depend on its consumers.
 */
import t from "tap";
import { OrchError, pageCursor, type CallContext, type NatsConnection } from "@orch/kit";
import type { GatewayContext } from "../src/context.js";
import type { RouteSpec } from "../src/route.js";
import { agentRoutes } from "../src/routes/agents.js";
import { assignmentRoutes } from "../src/routes/assignments.js";
import { channelRoutes } from "../src/routes/channels.js";
import { moduleRoutes } from "../src/routes/modules.js";
import { operatorRoutes } from "../src/routes/operators.js";
import { secretRoutes } from "../src/routes/secrets.js";
import { stateRoutes } from "../src/routes/state.js";
import { terminalRoutes } from "../src/routes/terminal.js";
import type { AgentsDeps, LinkInfo } from "../../agents/src/deps.js";
import { discoverHandlers } from "../../agents/src/handlers/discover.js";
import * as agents from "../../agents/src/validate.js";
import { operatorHandlers } from "../../auth/src/handlers/operators.js";
import type { AuthDeps } from "../../auth/src/deps.js";
import { channelHandlers } from "../../notify/src/handlers/channels.js";
import type { NotifyRuntime } from "../../notify/src/deps.js";
import { normaliseRestriction } from "../../secrets/src/restriction.js";
import * as secrets from "../../secrets/src/validate.js";
import { validName } from "../../state/src/validate.js";
import { openHandlers } from "../../terminal/src/handlers/open.js";
import type { TerminalDeps } from "../../terminal/src/deps.js";
import type { Recordings } from "../../terminal/src/recordings.js";

const ACCEPTED = "accepted";
type Outcome = string;

// A bus that records requests and answers none: reaching it means the gateway accepted the input.
let busRequests = 0;
const refuse = () => {
  busRequests++;
  throw new Error("no responders");
};
const nc = {
  // The kit's RPC client publishes on a reply subscription of its own (packages/kit/src/request-inbox.ts).
  subscribe: () => ({ closed: new Promise(() => {}), isClosed: () => false, unsubscribe: () => {} }),
  status: () => (async function* () {})(),
  publish: refuse,
  request: async () => refuse(),
} as unknown as NatsConnection;
// Only what building the routes touches: the terminal routes register their WebSocket hooks.
const app = { addHook: () => {} };
const ctx = { nc, timeoutMs: 1000, config: { http: {} }, app } as unknown as GatewayContext;
const routes = [
  agentRoutes,
  channelRoutes,
  operatorRoutes,
  secretRoutes,
  moduleRoutes,
  assignmentRoutes,
  stateRoutes,
  terminalRoutes,
].flatMap((r) => r(ctx));
const admin = { id: "01HZZZZZZZZZZZZZZZZZZZZZZZ", name: "alice", role: "admin" };

function spec(method: string, path: string): RouteSpec {
  const s = routes.find((r) => r.method === method && r.path === path);
  if (!s) throw new Error(`no route ${method} ${path}`);
  return s;
}

/** What the gateway answers for one request: a problem code, or ACCEPTED when it reached the bus. */
async function gateway(
  method: string,
  path: string,
  input: { params?: unknown; query?: unknown; body?: unknown },
): Promise<Outcome> {
  const s = spec(method, path);
  const parsed: Record<string, unknown> = {};
  for (const [location, schema, value] of [
    ["path", s.params, input.params],
    ["query", s.query, input.query],
    ["body", s.body, input.body],
  ] as const) {
    if (!schema) continue;
    const r = schema.safeParse(value ?? (location === "body" ? undefined : {}));
    if (!r.success) {
      // As app.ts answers a schema failure.
      const field = r.error.issues[0]!.path.map(String).join(".");
      return location === "query" && field === "cursor" ? "invalid_cursor" : "invalid_request";
    }
    parsed[location] = r.data;
  }
  const before = busRequests;
  try {
    await s.handler(
      {
        params: parsed.path,
        query: parsed.query,
        body: parsed.body,
        principal: { ...admin, scope: undefined } as never,
        call: {},
        raw: { headers: {}, protocol: "http", host: "localhost" } as never,
      },
      {} as never,
    );
  } catch (err) {
    if (busRequests > before) return ACCEPTED;
    if (err instanceof OrchError) return err.reason;
    throw err;
  }
  return busRequests > before ? ACCEPTED : "no_bus_request";
}

/**
 * What a service answers: the reason of an INVALID_ARGUMENT naming `field` (or a field under it,
 * such as `tags.<key>`), else ACCEPTED: the call got past the rule, and whatever fails later
 * (there is no database here) is not the rule's doing.
 */
async function service(field: string, call: () => unknown): Promise<Outcome> {
  try {
    await call();
    return ACCEPTED;
  } catch (err) {
    const f = err instanceof OrchError ? String(err.details.field) : "";
    if (err instanceof OrchError && err.code === "INVALID_ARGUMENT" && (f === field || f.startsWith(`${field}.`)))
      return err.reason;
    return ACCEPTED;
  }
}

/** The terminal service's openSession, up to its first use of the registry or the database. */
function openTerminal(ref: string): Promise<Outcome> {
  const open = openHandlers({ config: { terminal: {} }, nc } as unknown as TerminalDeps, {} as Recordings, {
    // Past validation: the approval check is a use of the registry too.
    check: () => Promise.reject(new Error("not validation")),
    agentNow: () => Promise.resolve(undefined),
  });
  const req = { nodeId: ref, nodeName: "", cols: 0, rows: 0, shell: "", credential: "" };
  const operator = { actor: { ...adminCall.actor, role: "operator" } } as CallContext;
  return service("node_id", () => open.openSession(req as never, operator));
}

/**
 * Both layers refuse every bad input and pass every good one. `sameCode`: the gateway answers with
 * the service's code (rules the gateway checks in its handlers). Otherwise the gateway answers its
 * schema failure (400 invalid_request, or invalid_cursor for a cursor), as it always has.
 */
function parity(
  name: string,
  c: {
    bad: unknown[];
    good: unknown[];
    gw: (v: never) => Promise<Outcome>;
    svc: (v: never) => Promise<Outcome>;
    sameCode?: boolean;
  },
) {
  t.test(name, async (t) => {
    for (const v of c.bad) {
      const label = JSON.stringify(v).slice(0, 60);
      const [g, s] = [await c.gw(v as never), await c.svc(v as never)];
      t.not(g, ACCEPTED, `gateway refuses ${label}`);
      t.not(s, ACCEPTED, `service refuses ${label}`);
      if (c.sameCode) t.equal(g, s, `same code for ${label}`);
    }
    for (const v of c.good) {
      const label = JSON.stringify(v).slice(0, 60);
      t.equal(await c.gw(v as never), ACCEPTED, `gateway accepts ${label}`);
      t.equal(await c.svc(v as never), ACCEPTED, `service accepts ${label}`);
    }
  });
}

const NODE = "0123456789abcdef0123456789abcdef";
const AGENT = `/api/v1/agents/{node_id}`;
// Only the actor is read before the first database access, where these checks stop.
const adminCall = { actor: { id: admin.id, name: admin.name, type: "operator", role: "admin" } } as CallContext;

parity("agent name (approval)", {
  bad: ["", "Web", "-web", "web-", "web_1", "web.1", "a".repeat(64), NODE, `${"abcdef".repeat(5)}00`],
  good: ["web-1", "a", "db01", "0123456789abcdef0123456789abcde"],
  gw: (name: string) => gateway("POST", AGENT, { params: { node_id: NODE }, body: { status: "approved", name } }),
  svc: (name: string) => service("name", () => agents.checkName(name)),
  sameCode: true,
});

parity("agent reference (path)", {
  bad: ["Web", "web_1", "web.1", "a".repeat(64), "-x", NODE.toUpperCase()],
  good: [NODE, "web-1"],
  gw: (ref: string) => gateway("POST", "/api/v1/terminal/{node_id}", { params: { node_id: ref } }),
  svc: openTerminal,
  sameCode: true,
});

parity("agent reference (agents routes)", {
  bad: ["Web", "web_1", "a".repeat(64)],
  good: [NODE, "web-1"],
  gw: (ref: string) => gateway("GET", AGENT, { params: { node_id: ref } }),
  svc: openTerminal,
  sameCode: true,
});

parity("tag key", {
  bad: ["Role", "-x", ".x", "a b", "a".repeat(64), "k=v"],
  good: ["role", "k8s.io/zone", "a_b", "a".repeat(63)],
  gw: (key: string) => gateway("PUT", `${AGENT}/tags/{key}`, { params: { node_id: NODE, key }, body: { value: "v" } }),
  svc: (key: string) => service("key", () => agents.checkTagKey(key)),
  sameCode: true,
});

parity("tag value", {
  bad: ["a".repeat(256), "x\u0007y", "\u0085", "tab\there"],
  good: ["", "web", "é".repeat(255), "a b", "\u{1F600}"],
  gw: (value: string) =>
    gateway("PUT", `${AGENT}/tags/{key}`, { params: { node_id: NODE, key: "role" }, body: { value } }),
  svc: (value: string) => service("value", () => agents.checkTagValue(value)),
  sameCode: true,
});

const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, "v"]));
parity("tag map", {
  bad: [many(65), { Bad: "x" }, { ok: "\u0001" }],
  good: [{}, many(64), { role: "web", "k8s.io/zone": "a" }],
  gw: (tags: Record<string, string>) => gateway("PUT", `${AGENT}/tags`, { params: { node_id: NODE }, body: { tags } }),
  svc: (tags: Record<string, string>) => service("tags", () => agents.checkTags(tags)),
  sameCode: true,
});

parity("agent list cursor (node id)", {
  bad: ["xyz", NODE.toUpperCase(), `${NODE}0`, "web-1"],
  good: [NODE],
  gw: (cursor: string) => gateway("GET", "/api/v1/agents", { query: { cursor } }),
  svc: (cursor: string) => service("cursor", () => pageCursor(cursor, "node_id")),
  sameCode: true,
});

// Ids are upper case; a list cursor may also come back lower case (ULIDs are case-insensitive).
parity("ULID (session id, list cursor)", {
  bad: ["", "01ARZ3NDEKTSV4RRFFQ69G5FAVX", "01ARZ3NDEKTSV4RRFFQ69G5FAI", "01ARZ3NDEKTSV4RRFFQ69G5FA-"],
  good: ["01ARZ3NDEKTSV4RRFFQ69G5FAV"],
  gw: (id: string) => gateway("GET", "/api/v1/terminal/session/{session_id}", { params: { session_id: id } }),
  svc: (id: string) => service("cursor", () => pageCursor(id || "-", "ulid")),
});

const secretBody = (over: Record<string, unknown>) => ({ body: { name: "db.password", value: "v", ...over } });
parity("secret name", {
  bad: ["", ".", "..", "a/b", "a b", "naïve", "a".repeat(129)],
  good: ["db.password", "A_b-1", "...", "a".repeat(128)],
  gw: (name: string) => gateway("POST", "/api/v1/secrets", secretBody({ name })),
  svc: (name: string) => service("name", () => secrets.checkName(name)),
});

parity("secret name (path)", {
  bad: [".", "a b", "a".repeat(129)],
  good: ["db.password"],
  gw: (name: string) => gateway("GET", "/api/v1/secrets/{name}", { params: { name } }),
  svc: (name: string) => service("name", () => secrets.checkName(name)),
});

parity("secret value", {
  bad: ["", "a".repeat(65_537), "é".repeat(40_000), "\ud800"],
  good: ["x", "a".repeat(65_536), "é".repeat(32_768)],
  gw: (value: string) => gateway("POST", "/api/v1/secrets", secretBody({ value })),
  svc: (value: string) => service("value", () => secrets.checkValue(value)),
});

parity("secret description", {
  bad: ["a".repeat(1025), "\u{1F600}".repeat(1025)],
  good: ["", "about", "a".repeat(1024), "\u{1F600}".repeat(1024)],
  gw: (description: string) => gateway("POST", "/api/v1/secrets", secretBody({ description })),
  svc: (description: string) => service("description", () => secrets.checkDescription(description)),
});

parity("secret restriction", {
  bad: [
    {},
    { node_ids: [] },
    { node_ids: ["xyz"] },
    { node_ids: Array.from({ length: 1001 }, () => NODE) },
    { tags: { Bad: "x" } },
    { tags: { role: "\u0001" } },
    { tags: { role: "a".repeat(256) } },
    { tags: many(101) },
  ],
  good: [{ node_ids: [NODE] }, { node_ids: [NODE.toUpperCase()] }, { tags: { role: "web" } }, { tags: many(100) }],
  gw: (restriction: object) => gateway("POST", "/api/v1/secrets", secretBody({ restriction })),
  svc: (r: { node_ids?: string[]; tags?: Record<string, string> }) =>
    service("restriction", () => normaliseRestriction({ nodeIds: r.node_ids ?? [], tags: r.tags ?? {} })),
  sameCode: true,
});

const NAMES = {
  bad: ["", "Web", ".x", "-x", "a b", "a/b", "a".repeat(64)],
  good: ["web", "a.b_c-1", "0", "a".repeat(63)],
};

parity("module name", {
  ...NAMES,
  gw: (name: string) => gateway("POST", "/api/v1/modules", { body: { name, content: "name: x" } }),
  svc: (name: string) => service("name", () => validName(name, "name", "module")),
  sameCode: true,
});

parity("assignment name and its modules", {
  ...NAMES,
  gw: (name: string) =>
    gateway("POST", "/api/v1/assignments", { body: { name, selector: "*", modules: [name === "" ? "m" : name] } }),
  svc: (name: string) => service("name", () => validName(name, "name", "assignment")),
  sameCode: true,
});

parity("operator name", {
  ...NAMES,
  gw: (name: string) => gateway("POST", "/api/v1/operators", { body: { name, public_key: "k", role: "operator" } }),
  svc: (name: string) => {
    const ops = operatorHandlers({} as AuthDeps);
    return service("name", () => ops.createOperator({ name, publicKey: "", role: "bogus" } as never, adminCall));
  },
  sameCode: true,
});

parity("channel name", {
  bad: ["", " x", "-x", "a/b", "a".repeat(101), "é"],
  good: ["Ops", "ops alerts", "A.b_c-1", "a".repeat(100)],
  gw: (name: string) => gateway("POST", "/api/v1/channels", { body: { name, channel_type: "webhook", config: {} } }),
  svc: (name: string) => {
    const ch = channelHandlers({ deps: {} } as unknown as NotifyRuntime);
    return service("name", () => ch.createChannel({ name, channelType: "bogus" } as never, adminCall));
  },
  sameCode: true,
});

parity("discovery target", {
  bad: [
    "127.0.0.1",
    "127.0.0.1:0",
    "127.0.0.1:65536",
    "256.1.1.1:7444",
    "1.2.3:7444",
    "::1:7444",
    "[zz::1]:7444",
  ].concat(["host:port", ":7444", "a..b:7444", "-a.com:7444", "host:7444/x", "a_b.example:7444"]),
  good: ["127.0.0.1:7444", "10.0.0.255:1", "[::1]:7444", "[fe80::1]:65535", "agent-1.example.com:7444"],
  gw: (target: string) => gateway("POST", "/api/v1/discover", { body: { target } }),
  svc: async (target: string) => {
    // Every name resolves to a documentation address the policy refuses: nothing is ever sent.
    const deps = { config: { agents: { discovery_port: 7444, discovery_networks: [] } } } as unknown as AgentsDeps;
    const d = discoverHandlers(deps, {} as LinkInfo, async () => ["203.0.113.1"]);
    try {
      await d.discover({ target } as never, adminCall);
    } catch (err) {
      if (err instanceof OrchError && err.reason === "invalid_target") return err.reason;
    }
    return ACCEPTED;
  },
  sameCode: true,
});
