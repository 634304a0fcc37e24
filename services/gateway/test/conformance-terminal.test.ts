import t from "tap";
import { create } from "@bufbuild/protobuf";
import { TerminalService, TerminalSessionSchema, type TerminalSession } from "@orch/contracts";
import { keysetPage, pageCursor, pageLimit, serveRpc, type Handlers } from "@orch/kit";
import { createTestDatabase, ed25519, silentLogger, startNats } from "@orch/kit/testing";
import { monotonicFactory } from "ulid";
import { LIST_ALL_MAX } from "../src/routes/terminal.js";
import { login, startAuth, startGateway } from "./harness.js";

// GET /api/v1/terminal against the API contract ("array of terminal sessions", no paging): every session
// matching the filter by default, limit/cursor opt-in. The terminal service is a stand-in that pages
// exactly as the real one does (default 50, at most 500, keyset on the session id), so the test can
// hold more sessions than the gateway's cap without opening thousands of shells.
const nats = await startNats();
const db = await createTestDatabase();
const adminKey = ed25519();
const auth = await startAuth(nats, db, adminKey);

const ulid = monotonicFactory();
const sessions: TerminalSession[] = [];
const addSessions = (n: number, status: string) => {
  for (let i = 0; i < n; i++)
    sessions.push(
      create(TerminalSessionSchema, {
        sessionId: ulid(1_700_000_000_000),
        nodeId: "n1",
        nodeName: "web-1",
        operatorId: "op",
        operatorName: "admin",
        status,
        shell: "/bin/sh",
        cols: 80,
        rows: 24,
        openedAt: 1_700_000_000_000,
      }),
    );
};
const calls: Array<{ limit: number; cursor: string; status: string }> = [];
const listSessions: Handlers<typeof TerminalService>["listSessions"] = async (req) => {
  calls.push({ limit: req.limit, cursor: req.cursor, status: req.status });
  const limit = pageLimit(req.limit);
  const before = pageCursor(req.cursor, "ulid");
  const rows = sessions
    .filter((s) => (!req.status || s.status === req.status) && (!before || s.sessionId < before))
    .sort((a, b) => (a.sessionId < b.sessionId ? 1 : -1))
    .slice(0, limit + 1);
  const { page, nextCursor } = keysetPage(rows, limit, (s) => s.sessionId);
  return { sessions: page, nextCursor };
};
const nc = await nats.connect("terminal-stand-in");
const handlers = new Proxy({ listSessions } as Record<string, unknown>, {
  get: (target, key: string) => target[key] ?? (async () => Promise.reject(new Error(`${key} not stubbed`))),
}) as unknown as Handlers<typeof TerminalService>;
const server = serveRpc({ nc, name: "terminal", service: TerminalService, handlers, log: silentLogger() });
await nc.flush();
const gw = await startGateway(nats);
t.teardown(async () => {
  await gw.stop();
  await server.stop();
  await nc.close();
  await auth.stop();
  await db.drop();
  await nats.stop();
});
const token = await login(gw.url, adminKey);
const list = async (qs = "") => {
  const res = await fetch(`${gw.url}/api/v1/terminal${qs}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, next: res.headers.get("x-next-cursor"), body: (await res.json()) as any[] };
};
const newestFirst = (ids: string[]) => ids.every((id, i) => i === 0 || ids[i - 1]! > id);

t.test("without limit/cursor: every session, newest first, no next cursor", async (t) => {
  addSessions(1100, "closed");
  addSessions(30, "open");
  calls.length = 0;
  const r = await list();
  t.equal(r.status, 200);
  t.equal(r.body.length, 1130, "all 1130, not the service's default page of 50");
  t.equal(new Set(r.body.map((s) => s.session_id)).size, 1130, "no session twice");
  t.ok(newestFirst(r.body.map((s) => s.session_id)), "newest first across pages");
  t.equal(r.next, null, "nothing left: no X-Next-Cursor");
  t.ok(calls.length >= 3, "read from the service a page at a time");

  const open = await list("?status=open");
  t.equal(open.body.length, 30, "the filter applies to the whole list");
  t.ok(open.body.every((s) => s.status === "open"));
});

t.test("limit/cursor stay opt-in: one page and X-Next-Cursor, as before", async (t) => {
  const first = await list("?limit=50");
  t.equal(first.body.length, 50);
  t.equal(first.next, first.body.at(-1).session_id, "the next cursor is the last id of the page");
  const second = await list(`?limit=50&cursor=${first.next}`);
  t.equal(second.body.length, 50);
  t.ok(second.body[0].session_id < first.body.at(-1).session_id, "continues after the first page");
  const cursorOnly = await list(`?cursor=${first.next}`);
  t.equal(cursorOnly.body.length, 50, "a cursor alone is one page of the service's default size");
  t.ok(cursorOnly.next);
  const bad = await list("?limit=501");
  t.equal(bad.status, 400, "limit bounds unchanged");
});

t.test(`past ${LIST_ALL_MAX} sessions the list is cut at the cap and X-Next-Cursor continues`, async (t) => {
  addSessions(LIST_ALL_MAX + 250 - sessions.length, "closed");
  const r = await list();
  t.equal(r.status, 200);
  t.equal(r.body.length, LIST_ALL_MAX, "the newest sessions up to the cap");
  t.equal(r.next, r.body.at(-1).session_id, "continue after the last one returned");
  const rest = await list(`?limit=500&cursor=${r.next}`);
  t.equal(rest.body.length, 250, "the remainder is reachable with the cursor");
  t.equal(rest.next, null);
});
