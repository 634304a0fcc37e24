import {
  AUDIT_AGENT_METADATA_KEYS,
  ULID_48BIT_RE,
  type AuditEvent,
  type AuditFilter,
  type ReasonFor,
} from "@orch/contracts";
import { invalid } from "@orch/kit";

const CODES: Record<string, ReasonFor<"INVALID_ARGUMENT">> = {
  after: "invalid_timestamp",
  before: "invalid_timestamp",
  cursor: "invalid_cursor",
  limit: "invalid_limit",
};
const codeOf = (name: string) => CODES[name] ?? "invalid_filter";
const CURSOR_RE = new RegExp(ULID_48BIT_RE.source, "i");

/** The filter fields of orch.v1.AuditFilter. */
export type FilterValues = Partial<Omit<AuditFilter, "$typeName">>;

const RFC3339_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|([+-])(\d{2}):(\d{2}))$/;

/**
 * Strict RFC 3339 (Date.parse alone accepts 2025-02-30 and 24:00); Unix ms, or undefined. An
 * unencoded `+` of an offset arrives as a space in a query string and is read as `+`.
 */
export function parseRfc3339(input: string): number | undefined {
  const s = input.replace(/(\d) (\d{2}:\d{2})$/, "$1+$2");
  const m = RFC3339_RE.exec(s);
  if (!m) return undefined;
  const [y, mo, d, h, mi] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const sec = Number(m[6] ?? 0);
  const daysInMonth = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth || h > 23 || mi > 59 || sec > 59) return undefined;
  if (m[9] && (Number(m[10]) > 23 || Number(m[11]) > 59)) return undefined;
  const ms = Date.parse(
    `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] ?? "00"}${(m[7] ?? "").slice(0, 4)}${m[8]!.toUpperCase()}`,
  );
  return Number.isFinite(ms) ? ms : undefined;
}

interface AuditQuery {
  filter: FilterValues;
  cursor?: string;
  limit?: number;
}

/** Parses the query string: every known parameter at most once, valid, non-empty; no others. */
export function parseAuditQuery(raw: unknown, allowed: readonly string[]): AuditQuery {
  const q = (raw ?? {}) as Record<string, unknown>;
  const out: AuditQuery = { filter: {} };
  for (const name of Object.keys(q)) {
    if (!allowed.includes(name))
      throw invalid("invalid_filter", `unknown query parameter '${name}' (allowed: ${allowed.join(", ")})`, {
        parameter: name,
      });
  }
  const value = (name: string): string | undefined => {
    const v = q[name];
    if (v === undefined) return undefined;
    if (typeof v !== "string") throw invalid(codeOf(name), `${name} must be given once`, { parameter: name });
    if (v === "") throw invalid(codeOf(name), `${name} must not be empty`, { parameter: name });
    return v;
  };
  const time = (name: string): number | undefined => {
    const v = value(name);
    if (v === undefined) return undefined;
    const ms = parseRfc3339(v);
    if (ms === undefined)
      throw invalid("invalid_timestamp", `${name} must be an RFC 3339 timestamp, e.g. 2025-01-31T12:00:00Z`, {
        parameter: name,
      });
    return ms;
  };
  for (const name of ["agent", "operator", "event_type", "category"] as const) {
    const v = allowed.includes(name) ? value(name) : undefined;
    if (v === undefined) continue;
    if (name === "event_type") out.filter.eventType = v;
    else out.filter[name] = v;
  }
  if (allowed.includes("after")) {
    const after = time("after");
    if (after !== undefined) out.filter.after = after;
  }
  if (allowed.includes("before")) {
    const before = time("before");
    if (before !== undefined) out.filter.before = before;
  }
  if (allowed.includes("cursor")) {
    const cursor = value("cursor");
    if (cursor !== undefined && !CURSOR_RE.test(cursor))
      throw invalid("invalid_cursor", "cursor must be the id (ULID) of an audit event", { parameter: "cursor" });
    if (cursor !== undefined) out.cursor = cursor.toUpperCase();
  }
  if (allowed.includes("limit")) {
    const limit = value("limit");
    if (limit !== undefined) {
      const n = /^\d{1,4}$/.test(limit) ? Number(limit) : NaN;
      if (!(n >= 1 && n <= 500))
        throw invalid("invalid_limit", "limit must be an integer between 1 and 500", { parameter: "limit" });
      out.limit = n;
    }
  }
  return out;
}

/** Where a live tail starts: after the Last-Event-ID header when there is one, else after `cursor`. */
export function streamStart(cursor: string | undefined, lastEventId: string | string[] | undefined) {
  if (typeof lastEventId !== "string" || lastEventId === "") return cursor;
  if (!CURSOR_RE.test(lastEventId))
    throw invalid("invalid_cursor", "Last-Event-ID must be the id (ULID) of an audit event", {
      parameter: "Last-Event-ID",
    });
  return lastEventId.toUpperCase();
}

/** Whether the event's metadata names the agent (AUDIT_AGENT_METADATA_KEYS). */
const namesAgent = (e: AuditEvent, agent: string) => AUDIT_AGENT_METADATA_KEYS.some((k) => e.metadata?.[k] === agent);

/** The same predicate the audit service applies in SQL, for events arriving on the live feed. */
export function matchesFilter(f: FilterValues, e: AuditEvent): boolean {
  const is = (r: AuditEvent["actor"], type: string, v: string) => r?.type === type && (r.id === v || r.name === v);
  if (f.agent && !is(e.actor, "agent", f.agent) && !is(e.target, "agent", f.agent) && !namesAgent(e, f.agent))
    return false;
  if (f.operator && !is(e.actor, "operator", f.operator)) return false;
  if (f.eventType && e.eventType !== f.eventType) return false;
  if (f.category && e.eventType !== f.category && !e.eventType.startsWith(`${f.category}.`)) return false;
  const ts = Date.parse(e.timestamp);
  if (f.after !== undefined && !(ts >= f.after)) return false;
  if (f.before !== undefined && !(ts < f.before)) return false;
  return true;
}
