import { CONTENT_PATH_FIELDS, sealDiff, sealObserved, type ResourceResult } from "@orch/contracts";
import { mapStrings, noMask } from "../module/template.js";
import { emptySummary, type StoredOutput, type StoredResult, type Summary } from "../db/operations.js";
import type { BelievedRow, DriftResource } from "../db/snapshots.js";

const STATUSES = new Set(["ok", "changed", "failed", "skipped", "unsupported"]);
/** Stored text is capped so one noisy exec cannot bloat the operations table. */
const MAX_TEXT = 256 * 1024;

const cap = (s: string) =>
  s.length > MAX_TEXT ? `${s.slice(0, MAX_TEXT)}\n[truncated: ${s.length - MAX_TEXT} more characters]` : s;

export interface StoredExecution {
  summary: Summary;
  results: StoredResult[];
  output: StoredOutput[];
  /** Masked `observed` per `<module>/<id>` for the believed state. */
  observed: Map<string, Record<string, unknown>>;
}

/**
 * A plain sha256 of content rendered with a secret is an offline guessing oracle (hash candidate
 * files until one matches), so it is never stored or shown: `sha256` keys are dropped from such a
 * resource's observed state and `sha256:<hex>` in its diff or message is replaced. An HMAC would
 * keep change detection, but nothing reads the hash: the agent compares content itself.
 */
const WITHHELD = "sha256:(withheld: rendered with a secret)";
const HASH_RE = /sha256:[0-9a-fA-F]{64}/g;
function withoutHashes(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutHashes);
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).flatMap(([k, x]) => (k === "sha256" ? [] : [[k, withoutHashes(x)]])));
  }
  return typeof v === "string" ? v.replace(HASH_RE, WITHHELD) : v;
}

/**
 * Turns the agent's answer into what is stored: every string masked (the agent masks too; this is
 * the second line), long texts capped, unknown statuses treated as failures, and no content hash
 * of a resource in `secretBearing` (`<module>/<id>`: rendered with a secret, or a file, line or
 * block on a file one was written to). Such a content resource is sealed: its diff keeps the
 * attribute lines and sizes only, whatever the agent sent (the agent seals too; this is the second
 * line, for an operation without the secret to mask with).
 */
export function storeResults(
  results: readonly ResourceResult[],
  mask: (s: string) => string,
  secretBearing: ReadonlySet<string> = new Set(),
): StoredExecution {
  const summary = emptySummary();
  const stored: StoredResult[] = [];
  const output: StoredOutput[] = [];
  const observed = new Map<string, Record<string, unknown>>();
  for (const r of results) {
    const hidden = secretBearing.has(`${r.module}/${r.id}`);
    const sealed = hidden && CONTENT_PATH_FIELDS[r.type] !== undefined;
    const clean = (x: string) => (hidden ? x.replace(HASH_RE, WITHHELD) : x);
    const status = STATUSES.has(r.status) ? r.status : "failed";
    const message = STATUSES.has(r.status) ? r.message : `unknown result status '${r.status}': ${r.message}`;
    summary[status as keyof Summary]++;
    const hasOutput = r.stdout !== "" || r.stderr !== "";
    stored.push({
      id: r.id,
      module: r.module,
      type: r.type,
      status,
      changed: r.changed,
      diff: cap(clean(mask(sealed ? sealDiff(r.diff) : r.diff))),
      message: cap(clean(mask(message))),
      duration_ms: r.durationMs,
      has_output: hasOutput,
    });
    if (hasOutput)
      output.push({ id: r.id, module: r.module, stdout: cap(mask(r.stdout)), stderr: cap(mask(r.stderr)) });
    // Without secrets masking changes nothing: the decoded object is stored as it is, not copied.
    const seen = mask === noMask ? (r.observed ?? {}) : (mapStrings(r.observed ?? {}, mask) ?? {});
    const kept = sealed ? sealObserved(seen as Record<string, unknown>) : seen;
    observed.set(`${r.module}/${r.id}`, (hidden ? withoutHashes(kept) : kept) as Record<string, unknown>);
  }
  return { summary, results: stored, output, observed };
}

/**
 * Resources that no longer match the snapshot: a plan that would change them, or could not check
 * them. `stateless` lists resources that describe no state (an exec without creates/onlyif/unless
 * runs on every apply), which therefore cannot drift.
 */
export function driftedResources(
  results: readonly StoredResult[],
  stateless: ReadonlySet<string> = new Set(),
): DriftResource[] {
  return results
    .filter((r) => (r.changed || r.status === "failed") && !stateless.has(`${r.module}/${r.id}`))
    .map((r) => ({ module: r.module, id: r.id, type: r.type, diff: r.diff, status: r.status, message: r.message }));
}

export function believedRows(
  nodeId: string,
  operationId: string,
  appliedAt: number,
  module: string,
  exec: StoredExecution,
): BelievedRow[] {
  return exec.results
    .filter((r) => r.module === module && (r.status === "ok" || r.status === "changed"))
    .map((r) => ({
      node_id: nodeId,
      module,
      resource_id: r.id,
      type: r.type,
      status: r.status,
      observed: exec.observed.get(`${module}/${r.id}`) ?? {},
      operation_id: operationId,
      applied_at: appliedAt,
    }));
}
