// What must hold after any fault: acknowledged writes survive with exactly one audit event each,
// runs reach a final state, and clients only ever saw answers they may retry.
import type { Test } from "tap";
import { eventually } from "@orch/kit/testing";
import { waitStatusOk } from "./stack.js";
import type { FaultStack, Figures, LoadReport, LoadRequest } from "./types.js";

export interface CheckOptions {
  scenario: string;
  /** How many faults the scenario caused (for the figures). */
  faults: number;
  /** Bound on waiting for the system to settle (ms, default 60 s). */
  settleMs?: number;
  /**
   * Indexes of the fault windows (0-based, in mark order) during which the gateway itself was down:
   * only there is "no response" (status 0) an answer a client may get.
   */
  gatewayDownWindows?: number[];
  /**
   * 4xx answers the scenario expects during its faults, by status and code, e.g. a terminal refused
   * with 409 while its agent's link is down. Nothing else but 503/504 with Retry-After is allowed.
   */
  expected4xx?: Array<{ status: number; code: string; kind?: LoadRequest["kind"] }>;
}

/** Run statuses that are over ("running" and "cancelling" are live). */
export const FINAL_RUN_STATUSES = ["completed", "cancelled", "stopped", "interrupted"];

interface AuditEventJson {
  id: string;
  event_type: string;
  target?: { id: string } | null;
  metadata?: Record<string, unknown>;
}

/** Fault windows [fault, healed] from the marks; an unhealed fault lasts until now. */
export function faultWindows(report: LoadReport): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let open: number | undefined;
  for (const m of report.marks ?? []) {
    if (m.label === "fault") open ??= m.at;
    else if (open !== undefined) {
      out.push([open, m.at]);
      open = undefined;
    }
  }
  if (open !== undefined) out.push([open, Date.now()]);
  return out;
}

/** Whether a response is one a client may retry or was told to expect; the reason when it is not. */
export function judge(
  r: LoadRequest,
  windows: Array<[number, number]>,
  opts: Pick<CheckOptions, "gatewayDownWindows" | "expected4xx">,
): string | undefined {
  if (r.status >= 200 && r.status < 300) return undefined;
  if (r.status === 503 || r.status === 504)
    return r.retryAfter ? undefined : `${r.status} ${r.code ?? ""} without Retry-After`;
  if (r.status === 0) {
    // A request in flight when the gateway died, or sent while it was down (plus a second for the
    // listener to come back after the restart was confirmed).
    const inGatewayWindow = (opts.gatewayDownWindows ?? []).some((i) => {
      const w = windows[i];
      return w !== undefined && r.at <= w[1] + 1000 && r.at + r.ms >= w[0];
    });
    return inGatewayWindow ? undefined : `no response (${r.code}) while the gateway was up`;
  }
  const expected = (opts.expected4xx ?? []).some(
    (e) => e.status === r.status && e.code === r.code && (e.kind === undefined || e.kind === r.kind),
  );
  return expected ? undefined : `${r.status} ${r.code ?? ""}`;
}

export async function checkAfterFault(
  t: Test,
  stack: FaultStack,
  report: LoadReport,
  opts: CheckOptions,
): Promise<Figures> {
  const settleMs = opts.settleMs ?? 60_000;
  const api = async (path: string) => {
    const r = await stack.system.api("GET", path, { token: stack.token });
    return r;
  };
  const windows = faultWindows(report);
  const since = new Date(Math.min(...report.requests.map((r) => r.at), Date.now()) - 60_000).toISOString();

  // Settle: every service answers, every run has ended, every acked change has reached the audit log.
  await waitStatusOk(stack.system.url, settleMs);
  const runStatus = new Map<string, string>();
  const settledBy = Date.now() + settleMs;
  const readRuns = async () => {
    for (const id of report.operations) {
      if (FINAL_RUN_STATUSES.includes(runStatus.get(id) ?? "")) continue;
      const r = await api(`/api/v1/runs/${id}?output=false`).catch(() => undefined);
      if (r?.status === 200) runStatus.set(id, r.body.status as string);
    }
    return report.operations.every((id) => FINAL_RUN_STATUSES.includes(runStatus.get(id) ?? ""));
  };
  await eventually(readRuns, Math.max(1000, settledBy - Date.now()), 500).catch(() => undefined);

  const types = [...new Set([...report.acked.map((a) => a.auditType), "run.finished"])];
  const fetchEvents = async () => {
    const all: AuditEventJson[] = [];
    for (const type of types) {
      let cursor: string | undefined;
      for (;;) {
        const q = new URLSearchParams({ event_type: type, after: since, limit: "500" });
        if (cursor) q.set("cursor", cursor);
        const r = await api(`/api/v1/audit?${q}`);
        if (r.status !== 200) throw new Error(`audit query: ${r.status} ${r.text}`);
        all.push(...(r.body.events as AuditEventJson[]));
        if (!r.body.has_more) break;
        cursor = r.body.next_cursor as string;
      }
    }
    return all;
  };
  const key = (type: string, id: string | undefined) => `${type} ${id ?? ""}`;
  let events: AuditEventJson[] = [];
  const allAudited = async () => {
    events = await fetchEvents();
    const seen = new Set(events.map((e) => key(e.event_type, e.target?.id)));
    const finished = report.operations.filter((id) => FINAL_RUN_STATUSES.includes(runStatus.get(id) ?? ""));
    return (
      report.acked.every((a) => seen.has(key(a.auditType, a.resourceId))) &&
      finished.every((id) => seen.has(key("run.finished", id)))
    );
  };
  await eventually(allAudited, Math.max(1000, settledBy - Date.now()), 500).catch(() => undefined);

  // Acknowledged writes are still there.
  let lost = 0;
  for (const a of report.acked) {
    const r = await api(a.checkPath);
    if (r.status !== 200) lost++;
  }
  t.equal(lost, 0, `all ${report.acked.length} acknowledged writes are still there`);

  // Exactly one audit event per acknowledged change, and no change recorded twice.
  const byKey = new Map<string, number>();
  for (const e of events)
    byKey.set(key(e.event_type, e.target?.id), (byKey.get(key(e.event_type, e.target?.id)) ?? 0) + 1);
  const unaudited = report.acked.filter((a) => !byKey.has(key(a.auditType, a.resourceId)));
  t.same(
    unaudited.map((a) => `${a.auditType} ${a.resourceId}`),
    [],
    "every acknowledged change has its audit event",
  );
  lost += unaudited.length;
  const ids = new Set(events.map((e) => e.id));
  t.equal(ids.size, events.length, "no audit event id is stored twice");
  const dupes = [...byKey].filter(([, n]) => n > 1);
  t.same(dupes, [], "no change of the load has two audit events");
  const duplicates = dupes.reduce((s, [, n]) => s + n - 1, 0) + (events.length - ids.size);

  // Runs end in a true final state, with one run.finished each.
  const stuck = report.operations.filter((id) => !FINAL_RUN_STATUSES.includes(runStatus.get(id) ?? ""));
  t.same(
    stuck.map((id) => `${id} ${runStatus.get(id) ?? "unknown"}`),
    [],
    `all ${report.operations.length} runs ended`,
  );
  const unfinished = report.operations.filter((id) => !stuck.includes(id) && !byKey.has(key("run.finished", id)));
  t.same(unfinished, [], "every ended run has its run.finished event");

  // Clients only saw retryable answers (or the 4xx the scenario named).
  const bad = report.requests
    .map((r) => ({ r, why: judge(r, windows, opts) }))
    .filter((x): x is { r: LoadRequest; why: string } => x.why !== undefined);
  t.same(
    bad.slice(0, 20).map(({ r, why }) => `${r.method} ${r.path}: ${why} at +${r.at - (windows[0]?.[0] ?? r.at)} ms`),
    [],
    "every failed request was a 503/504 with Retry-After (or an expected 4xx)",
  );

  const during = report.requests.filter((r) => windows.some(([a, b]) => r.at <= b && r.at + r.ms >= a));
  const histogram: Record<string, number> = {};
  for (const r of during) {
    const key = `${r.status}${r.code ? ` ${r.code}` : ""}`;
    histogram[key] = (histogram[key] ?? 0) + 1;
  }
  t.comment(`answers during the faults: ${JSON.stringify(histogram)}`);

  // Recovery: from each "healed" to the first write sent after it that succeeded.
  let recoverySeconds = 0;
  for (const [, healed] of windows) {
    const first = report.requests.find(
      (r) => r.kind === "write" && r.at >= healed && r.status >= 200 && r.status < 300,
    );
    const s = first ? (first.at + first.ms - healed) / 1000 : Number.POSITIVE_INFINITY;
    recoverySeconds = Math.max(recoverySeconds, s);
  }
  t.ok(Number.isFinite(recoverySeconds), `writes succeed again after every fault (${recoverySeconds.toFixed(2)} s)`);
  t.ok(report.acked.length > 0, "the load had writes acknowledged");
  t.ok(report.terminal.echoes > 0 || report.requests.every((r) => r.kind !== "terminal"), "the terminal echoed");

  return {
    scenario: opts.scenario,
    requests: report.requests.length,
    faults: opts.faults,
    acked: report.acked.length,
    lost,
    duplicates,
    stuck: stuck.length,
    nonRetryable: bad.length,
    recoverySeconds: Number.isFinite(recoverySeconds) ? Math.round(recoverySeconds * 100) / 100 : -1,
  };
}
