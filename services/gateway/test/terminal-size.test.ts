import t from "tap";
import { create } from "@bufbuild/protobuf";
import {
  AgentSchema,
  AgentsService,
  INT32_MAX,
  PTY_DIM_MAX,
  TerminalService,
  TerminalSessionSchema,
  TicketSchema,
  clampTerminalDim,
} from "@orch/contracts";
import { serveRpc, type Handlers } from "@orch/kit";
import { createTestDatabase, ed25519, silentLogger, startNats } from "@orch/kit/testing";
import { call, login, startAuth, startGateway } from "./harness.js";

// POST /api/v1/terminal/{node_id}: cols and rows are int32 in the API contract. Any positive int32 is
// accepted and handed to the terminal service as asked (which clamps it for the PTY); the answer
// reports the size the session got and whether it was clamped. 0, negatives, fractions, non-numbers
// and values past int32 are 400 invalid_request at the gateway, before any service is asked.
// The agents and terminal services are stand-ins; the real stack is test/e2e/terminal-size.test.ts.

const stops: Array<() => Promise<unknown>> = [];
t.teardown(async () => {
  for (const stop of stops.reverse()) await stop();
});

const nats = await startNats();
stops.push(() => nats.stop());
const db = await createTestDatabase();
stops.push(() => db.drop());
const adminKey = ed25519();
const auth = await startAuth(nats, db, adminKey);
stops.push(() => auth.stop());

const asked: Array<{ cols: number; rows: number }> = [];
const nc = await nats.connect("stand-ins");
stops.push(() => nc.close());
const standIn = <S extends typeof AgentsService | typeof TerminalService>(impl: Record<string, unknown>) =>
  new Proxy(impl, {
    get: (target, key: string) => target[key] ?? (async () => Promise.reject(new Error(`${key} not stubbed`))),
  }) as unknown as Handlers<S>;
const agents = serveRpc({
  nc,
  name: "agents",
  service: AgentsService,
  handlers: standIn<typeof AgentsService>({
    getAgent: async () => create(AgentSchema, { nodeId: "a".repeat(32), name: "web-1", status: "approved" }),
  }),
  log: silentLogger(),
});
stops.push(() => agents.stop());
const terminal = serveRpc({
  nc,
  name: "terminal",
  service: TerminalService,
  handlers: standIn<typeof TerminalService>({
    openSession: async (req: { cols: number; rows: number }) => {
      asked.push({ cols: req.cols, rows: req.rows });
      const session = create(TerminalSessionSchema, {
        sessionId: "01JABCDEFGHJKMNPQRSTVWXYZ0",
        nodeId: "a".repeat(32),
        status: "open",
        cols: req.cols ? clampTerminalDim(req.cols) : 80,
        rows: req.rows ? clampTerminalDim(req.rows) : 24,
      });
      const ticket = create(TicketSchema, { sessionId: session.sessionId, ticket: "t" });
      return { session, ticket };
    },
  }),
  log: silentLogger(),
});
stops.push(() => terminal.stop());
await nc.flush();
const gw = await startGateway(nats);
stops.push(() => gw.stop());
const token = await login(gw.url, adminKey);
const open = (qs: string) => call(gw.url, "POST", `/api/v1/terminal/web-1${qs}`, { token });

t.test("any positive int32 opens; past the PTY limit the answer shows the clamp", async (t) => {
  asked.length = 0;
  const big = await open("?cols=5000&rows=3000");
  t.equal(big.status, 201, big.text);
  t.match(big.body, { cols: PTY_DIM_MAX, rows: PTY_DIM_MAX, clamped: true });
  t.same(asked.at(-1), { cols: 5000, rows: 3000 }, "the terminal service gets the size as asked");

  const max = await open(`?cols=${INT32_MAX}&rows=1`);
  t.equal(max.status, 201, max.text);
  t.match(max.body, { cols: PTY_DIM_MAX, rows: 1, clamped: true }, "one clamped dimension is enough");

  const fits = await open(`?cols=${PTY_DIM_MAX}&rows=40`);
  t.equal(fits.status, 201, fits.text);
  t.match(fits.body, { cols: PTY_DIM_MAX, rows: 40, clamped: false });

  const dflt = await open("");
  t.equal(dflt.status, 201, dflt.text);
  t.match(dflt.body, { cols: 80, rows: 24, clamped: false }, "no size asked: the default, not a clamp");
});

t.test("zero, negative, non-integer and past-int32 sizes are 400 invalid_request naming the field", async (t) => {
  asked.length = 0;
  const cases: Array<[string, "cols" | "rows"]> = [
    ["?cols=0", "cols"],
    ["?rows=0", "rows"],
    ["?cols=-1", "cols"],
    ["?rows=-80", "rows"],
    ["?cols=1.5", "cols"],
    ["?rows=1e3", "rows"],
    ["?cols=abc", "cols"],
    ["?cols=", "cols"],
    ["?cols=0x10", "cols"],
    [`?cols=${INT32_MAX + 1}`, "cols"],
    ["?rows=99999999999999999999999", "rows"],
    ["?cols=80&cols=90", "cols"],
  ];
  for (const [qs, field] of cases) {
    const r = await open(qs);
    t.equal(r.status, 400, `${qs}: 400`);
    t.match(r.type, /^application\/problem\+json/, `${qs}: problem+json`);
    t.equal(r.body?.code, "invalid_request", `${qs}: invalid_request`);
    t.match(r.body?.errors, [{ location: "query", field }], `${qs}: names ${field}`);
  }
  t.same(asked, [], "no refused size reached the terminal service");
});
