import type { AuditFilter } from "@orch/contracts";
import { invalid } from "@orch/kit";
import { parseUlid } from "./ulid-time.js";

/** A validated filter; absent fields do not filter. */
export interface Filter {
  agent?: string;
  operator?: string;
  eventType?: string;
  category?: string;
  after?: number;
  before?: number;
}

const TYPE_RE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
// eslint-disable-next-line no-control-regex
const CONTROL_RE = /[\u0000-\u001f\u007f]/;
const MAX_TIME = 8.64e15;

const badFilter = (parameter: string, message: string) =>
  invalid("invalid_filter", `${parameter} ${message}`, { parameter });

function ref(parameter: string, v: string | undefined): string | undefined {
  if (!v) return undefined;
  if (v.length > 256 || CONTROL_RE.test(v))
    throw badFilter(parameter, "must be at most 256 characters without control characters");
  return v;
}

function dotted(parameter: string, v: string | undefined): string | undefined {
  if (!v) return undefined;
  if (v.length > 128 || !TYPE_RE.test(v))
    throw badFilter(
      parameter,
      "must be dotted segments of letters, digits, '_' or '-' (e.g. agent or agent.tags.updated)",
    );
  return v;
}

function time(parameter: string, v: number | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isFinite(v) || v < 0 || v > MAX_TIME)
    throw invalid("invalid_timestamp", `${parameter} must be a time after 1970`, { parameter });
  return v;
}

export function parseFilter(f: Partial<Omit<AuditFilter, "$typeName">> | undefined): Filter {
  if (!f) return {};
  const out: Filter = {};
  const set = <K extends keyof Filter>(k: K, v: Filter[K] | undefined) => {
    if (v !== undefined) out[k] = v;
  };
  set("agent", ref("agent", f.agent));
  set("operator", ref("operator", f.operator));
  set("eventType", dotted("event_type", f.eventType));
  set("category", dotted("category", f.category));
  set("after", time("after", f.after));
  set("before", time("before", f.before));
  return out;
}

export function parseCursor(parameter: string, v: string): string | undefined {
  if (v === "") return undefined;
  const id = parseUlid(v);
  if (!id) throw invalid("invalid_cursor", `${parameter} must be the id (ULID) of an audit event`, { parameter });
  return id;
}
