/** Parsing of command-line values shared by command groups; failures are `invalid_argument`. */
import { CliError } from "./errors.js";

/** `k=v` → [k, v] (split at the first '='); the server validates key and value. */
export function parseTagArg(arg: string): [string, string] {
  const i = arg.indexOf("=");
  if (i <= 0) throw new CliError(`tag ${JSON.stringify(arg)} is not key=value`, "invalid_argument");
  return [arg.slice(0, i), arg.slice(i + 1)];
}

/** RFC 3339 as is, or a duration back from now (`30s`, `15m`, `2h`, `7d`) as RFC 3339. */
export function parseTime(flag: string, v: string | undefined, now: number): string | undefined {
  if (v === undefined) return undefined;
  const d = /^(\d+)([smhd])$/.exec(v);
  if (d)
    return new Date(
      now - Number(d[1]) * { s: 1e3, m: 6e4, h: 36e5, d: 864e5 }[d[2] as "s" | "m" | "h" | "d"],
    ).toISOString();
  if (/^\d{4}-\d{2}-\d{2}T/.test(v) && !Number.isNaN(Date.parse(v))) return v;
  throw new CliError(
    `${flag} must be an RFC 3339 time or a duration like 15m, 2h, 7d; got ${JSON.stringify(v)}`,
    "invalid_argument",
  );
}

export function parseLimit(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new CliError(`--limit must be a positive integer, got ${JSON.stringify(v)}`, "invalid_argument");
  return n;
}
