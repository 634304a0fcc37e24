import { isAbsolute, posix } from "node:path";
import { SpecError, type Spec } from "./types.js";

/** Readers that turn a loosely typed spec field into a typed value or a SpecError naming it. */

export function str(spec: Spec, key: string): string {
  const v = spec[key];
  if (typeof v !== "string" || v === "")
    throw new SpecError(`field "${key}" is required and must be a non-empty string`);
  return v;
}

export function optStr(spec: Spec, key: string): string | undefined {
  const v = spec[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw new SpecError(`field "${key}" must be a string`);
  return v;
}

export function optBool(spec: Spec, key: string): boolean | undefined {
  const v = spec[key];
  if (v === undefined || v === null) return undefined;
  if (v === "true" || v === "false") return v === "true"; // templated booleans arrive as strings
  if (typeof v !== "boolean") throw new SpecError(`field "${key}" must be true or false`);
  return v;
}

/**
 * Struct numbers arrive as doubles, and a templated value ("{{ attributes.uid }}") arrives as a
 * string: both forms of a non-negative integer are accepted.
 */
export function optInt(spec: Spec, key: string): number | undefined {
  const v = spec[key];
  if (v === undefined || v === null) return undefined;
  const n = typeof v === "string" && /^\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0)
    throw new SpecError(`field "${key}" must be a non-negative integer`);
  return n;
}

export function optStrList(spec: Spec, key: string): string[] | undefined {
  const v = spec[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== "string" || x === ""))
    throw new SpecError(`field "${key}" must be a list of non-empty strings`);
  return v as string[];
}

export function optStrMap(spec: Spec, key: string): Record<string, string> | undefined {
  const v = spec[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) throw new SpecError(`field "${key}" must be a map of strings`);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (typeof x === "string") out[k] = x;
    else if (typeof x === "number" || typeof x === "boolean") out[k] = String(x);
    else throw new SpecError(`field "${key}.${k}" must be a string`);
  }
  return out;
}

/**
 * A path after rendering: `/srv/{{ tags.app }}/conf` with a tag `../../root/.ssh` would otherwise
 * reach outside the directory the module author meant, so a `..` segment is refused rather than
 * resolved. Returns the path normalised (`//`, `/./` and a trailing `/` removed).
 */
export function absPath(spec: Spec, key = "path"): string {
  const p = str(spec, key);
  if (!isAbsolute(p)) throw new SpecError(`field "${key}" must be an absolute path`);
  if (p.includes("\0")) throw new SpecError(`field "${key}" must not contain NUL`);
  if (hasDotDot(p)) throw new SpecError(`field "${key}" must not contain '..' segments (rendered: ${p})`);
  return normalisePath(p);
}

export const hasDotDot = (p: string) => p.split("/").includes("..");

/** `posix.normalize` without a trailing slash (except for "/" itself); callers refuse `..` first. */
export function normalisePath(p: string): string {
  const n = posix.normalize(p);
  return n.length > 1 && n.endsWith("/") ? n.slice(0, -1) : n;
}

export function state<T extends string>(spec: Spec, allowed: readonly T[], dflt: T): T {
  const v = optStr(spec, "state");
  if (v === undefined) return dflt;
  if (!(allowed as readonly string[]).includes(v))
    throw new SpecError(`field "state" must be one of ${allowed.join(", ")}`);
  return v as T;
}

/** File modes are octal strings ("0644", "644", "0755"); a number is read as its decimal digits being octal (YAML `mode: 644`). */
export function optMode(spec: Spec, key = "mode"): number | undefined {
  const v = spec[key];
  if (v === undefined || v === null) return undefined;
  const s = typeof v === "number" && Number.isInteger(v) ? String(v) : v;
  if (typeof s !== "string" || !/^0?[0-7]{3,4}$/.test(s))
    throw new SpecError(`field "${key}" must be an octal mode such as "0644"`);
  return parseInt(s, 8);
}

export const fmtMode = (m: number) => `0${(m & 0o7777).toString(8).padStart(3, "0")}`;

/** Resource-level keys a sender may leave in the spec; they are carried by StateResource itself. */
const RESOURCE_KEYS = ["id", "type", "module", "requires", "description"];

/** Rejects fields the type does not know, so a typo (`conent:`) is not silently ignored. */
export function onlyKeys(spec: Spec, keys: readonly string[]): void {
  const extra = Object.keys(spec).filter((k) => !keys.includes(k) && !RESOURCE_KEYS.includes(k));
  if (extra.length)
    throw new SpecError(
      `unknown field${extra.length > 1 ? "s" : ""} ${extra.map((k) => `"${k}"`).join(", ")} (allowed: ${keys.join(", ")})`,
    );
}

/** One string or a list of one-line strings (`suites: bookworm` or `suites: [bookworm, bookworm-updates]`). */
export function words(spec: Spec, key: string, required: boolean): string[] | undefined {
  const v = spec[key];
  if (v === undefined || v === null) {
    if (required) throw new SpecError(`field "${key}" is required unless state is absent`);
    return undefined;
  }
  const list = typeof v === "string" ? [v] : v;
  if (!Array.isArray(list) || list.length === 0 || list.some((x) => typeof x !== "string" || x.trim() === ""))
    throw new SpecError(`field "${key}" must be a non-empty string or a list of them`);
  if (list.some((x) => /[\r\n]/.test(x as string))) throw new SpecError(`field "${key}" must be one line each`);
  return (list as string[]).flatMap((x) => x.trim().split(/\s+/));
}
