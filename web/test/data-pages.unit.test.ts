import t from "tap";
import { osLabel, formatBytes, percent, tagList } from "../src/lib/agent-format.js";
import { readAuditView, streamQuery, writeAuditView } from "../src/lib/audit-query.js";
import { type EventSourceLike, type LiveState, openStream } from "../src/lib/event-stream.js";
import { toSeries } from "../src/lib/metrics.js";
import { agentNameError, operatorNameError, tagErrors } from "../src/lib/rules.js";
import { checkSelector } from "../src/lib/selector.js";
import { withParams } from "../src/lib/url-state.js";

t.test("selector: blank is no selector, valid text is trimmed, errors carry the position", async (t) => {
  t.same(checkSelector("   "), { ok: true, selector: "" });
  t.same(checkSelector(" role=web, env in (a,b) "), { ok: true, selector: "role=web, env in (a,b)" });
  const bad = checkSelector("role=web,");
  t.equal(bad.ok, false);
  if (!bad.ok) {
    t.match(bad.message, /expected a key/);
    t.equal(bad.position, 9);
  }
  t.equal(checkSelector("role=").ok, false);
  t.equal(checkSelector("* ,x").ok, false);
});

t.test("agent names follow the API's rule; blank is not an error until submitted", async (t) => {
  t.equal(agentNameError(""), undefined);
  t.equal(agentNameError("web-1"), undefined);
  t.match(agentNameError("Web_1"), /DNS label/);
  t.match(agentNameError("-web"), /DNS label/);
  t.match(agentNameError("0123456789abcdef0123456789abcdef"), /32 hex digits/);
  t.equal(operatorNameError("alice.ops"), undefined);
  t.match(operatorNameError("Alice"), /must be/);
});

t.test("tag key and value rules", async (t) => {
  t.same(tagErrors("", ""), {});
  t.same(tagErrors("team/app", "web"), {});
  t.match(tagErrors("Team", "x").key, /^Key must be/);
  t.match(tagErrors("ok", "a\u0001b").value, /^Value must be at most 255 printable/);
  t.match(tagErrors("ok", "x".repeat(256)).value, /255/);
});

t.test("audit view round-trips through the query string with the API's names", async (t) => {
  const search = new URLSearchParams(
    "agent=web-1&event_type=agent.approved&after=2025-01-01T00:00:00Z&cursor=01J0000000000000000000000A&live=1&junk=x&operator=",
  );
  const view = readAuditView(search);
  t.same(view, {
    filters: { agent: "web-1", event_type: "agent.approved", after: "2025-01-01T00:00:00Z" },
    cursor: "01J0000000000000000000000A",
    live: true,
  });
  t.equal(
    writeAuditView(view).toString(),
    "agent=web-1&event_type=agent.approved&after=2025-01-01T00%3A00%3A00Z&cursor=01J0000000000000000000000A&live=1",
  );
  t.equal(streamQuery({ category: "agent", operator: " " }), "category=agent", "no cursor, no blanks");
  t.same(readAuditView(new URLSearchParams("live=true")).live, false, "only live=1 means live");
});

t.test("withParams sets, replaces and removes blank values", async (t) => {
  const next = withParams(new URLSearchParams("a=1&b=2"), { a: "3", b: "", c: "x", d: null });
  t.equal(next.toString(), "a=3&c=x");
});

t.test("agent formatting", async (t) => {
  t.equal(
    osLabel({ os: "linux", distro: "debian", distro_version: "12", os_release: "Debian GNU/Linux 12" }),
    "Debian GNU/Linux 12",
  );
  t.equal(osLabel({ os: "linux", distro: "alpine", distro_version: "3.20" }), "alpine 3.20");
  t.equal(osLabel({ os: "darwin" }), "darwin");
  t.equal(osLabel(undefined), "");
  t.same(tagList({ zone: "b", app: "web", flag: "" }), ["app=web", "flag", "zone=b"]);
  t.equal(formatBytes(512), "512 B");
  t.equal(formatBytes(1536), "1.5 KiB");
  t.equal(formatBytes(20 * 1024 ** 3), "20 GiB");
  t.equal(percent(1, 3), 33.3);
  t.equal(percent(5, 0), 0);
});

t.test("metrics samples become oldest-first chart columns", async (t) => {
  const sample = (at: string, cpu: number, mem: number) => ({
    taken_at: at,
    cpu_percent: cpu,
    load1: cpu / 100,
    memory_total: 1000,
    memory_used: mem,
    disk_total: 200,
    disk_used: 50,
  });
  const s = toSeries([
    sample("2025-01-01T00:01:00Z", 20.04, 500),
    sample("2025-01-01T00:00:00Z", 10, 250),
    sample("not a time", 99, 999),
  ]);
  t.same(s.time, [Date.parse("2025-01-01T00:00:00Z") / 1000, Date.parse("2025-01-01T00:01:00Z") / 1000]);
  t.same(s.cpu, [10, 20]);
  t.same(s.memory, [25, 50]);
  t.same(s.disk, [25, 25]);
  t.same(s.load, [0.1, 0.2004]);
});

/** A scripted EventSource: the test fires its events. */
class FakeSource implements EventSourceLike {
  readyState = 0;
  closed = false;
  private listeners = new Map<string, ((e: Event) => void)[]>();
  constructor(readonly url: string) {}
  addEventListener(type: string, l: (e: Event) => void) {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), l]);
  }
  close() {
    this.closed = true;
    this.readyState = 2;
  }
  fire(type: string, init: { data?: string; lastEventId?: string } = {}) {
    for (const l of this.listeners.get(type) ?? []) l({ type, ...init } as unknown as Event);
  }
}

t.test("openStream resumes after the last event id with backoff and stops for good", async (t) => {
  const sources: FakeSource[] = [];
  const states: LiveState[] = [];
  const details: (string | undefined)[] = [];
  const got: string[] = [];
  const timers: { fn: () => void; ms: number; cancelled: boolean }[] = [];
  let probes = 0;
  const stop = openStream({
    url: (lastId) => `/stream${lastId ? `?cursor=${lastId}` : ""}`,
    event: "audit",
    startAfter: "A0",
    onMessage: (data, id) => got.push(`${id}:${data}`),
    onState: (s, d) => {
      states.push(s);
      details.push(d);
    },
    create: (url) => {
      const s = new FakeSource(url);
      sources.push(s);
      return s;
    },
    probe: async () => {
      probes++;
    },
    schedule: (fn, ms) => {
      const timer = { fn, ms, cancelled: false };
      timers.push(timer);
      return () => {
        timer.cancelled = true;
      };
    },
    random: () => 0,
  });
  t.equal(sources[0]!.url, "/stream?cursor=A0", "starts after the newest event shown");
  sources[0]!.fire("open");
  sources[0]!.fire("audit", { data: "{}", lastEventId: "A1" });
  t.same(got, ["A1:{}"]);

  // A transport error the browser retries itself: no new source.
  sources[0]!.readyState = 0;
  sources[0]!.fire("error");
  t.equal(sources.length, 1);

  // The browser gave up (HTTP error answer): we reopen after a backoff, resuming after A1.
  sources[0]!.readyState = 2;
  sources[0]!.fire("error");
  t.equal(probes, 1, "the session/gateway probe ran");
  t.equal(timers.length, 1);
  t.equal(timers[0]!.ms, 500);
  timers[0]!.fn();
  t.equal(sources[1]!.url, "/stream?cursor=A1");
  sources[1]!.readyState = 2;
  sources[1]!.fire("error");
  t.equal(timers[1]!.ms, 1000, "the second failure in a row waits longer");
  timers[1]!.fn();
  sources[2]!.fire("open");
  sources[2]!.fire("audit", { data: "{}", lastEventId: "A2" });
  // A stale source's events are ignored.
  sources[0]!.fire("audit", { data: "{}", lastEventId: "OLD" });
  t.same(got, ["A1:{}", "A2:{}"]);

  // The server's own `event: error` (credential ended) closes even while the source would retry.
  sources[2]!.readyState = 1;
  sources[2]!.fire("error", { data: '{"code":"operator_revoked"}' });
  t.equal(sources[2]!.closed, true);
  t.equal(timers[2]!.ms, 500, "a successful open reset the backoff");
  t.equal(details.at(-1), "reconnecting in 1 s", "a credential end names no scope reason");

  // Ended because an agent it showed left the operator's scope: the status line says so.
  timers[2]!.fn();
  sources[3]!.fire("open");
  sources[3]!.readyState = 1;
  sources[3]!.fire("error", { data: '{"code":"agent_out_of_scope","detail":"…"}' });
  t.equal(sources[3]!.closed, true);
  t.equal(details.at(-1), "an agent here left your access scope (agent_out_of_scope); reconnecting in 1 s");

  stop();
  t.equal(timers[3]!.cancelled, true, "no reconnect after stop");
  t.equal(states.at(-1), "stopped");
  t.ok(states.includes("live") && states.includes("retrying") && states.includes("connecting"));
});
