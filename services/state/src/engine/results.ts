import type { ResourceResult } from "@orch/contracts";
import { mapStrings } from "../module/template.js";
import { emptySummary, type StoredOutput, type StoredResult, type Summary } from "../db/operations.js";
import type { BelievedRow, DriftResource } from "../db/snapshots.js";

const STATUSES = new Set(["ok", "changed", "failed", "skipped", "unsupported"]);
/** Stored text is capped so one noisy exec cannot bloat the operations table. */
const MAX_TEXT = 256 * 1024;

const cap = (s: string) => (s.length > MAX_TEXT ? `${s.slice(0, MAX_TEXT)}\n[truncated: ${s.length - MAX_TEXT} more characters]` : s);

export interface StoredExecution {
  summary: Summary;
  results: StoredResult[];
  output: StoredOutput[];
  /** Masked `observed` per `<module>/<id>` for the believed state. */
  observed: Map<string, Record<string, unknown>>;
}

/**
 * Turns the agent's answer into what is stored: every string masked (the agent masks too; this is
 * the second line), long texts capped, unknown statuses treated as failures.
 */
export function storeResults(results: readonly ResourceResult[], mask: (s: string) => string): StoredExecution {
  const summary = emptySummary();
  const stored: StoredResult[] = [];
  const output: StoredOutput[] = [];
  const observed = new Map<string, Record<string, unknown>>();
  for (const r of results) {
    const status = STATUSES.has(r.status) ? r.status : "failed";
    summary[status as keyof Summary]++;
    const hasOutput = r.stdout !== "" || r.stderr !== "";
    stored.push({
      id: r.id,
      module: r.module,
      type: r.type,
      status,
      changed: r.changed,
      diff: cap(mask(r.diff)),
      message: cap(mask(STATUSES.has(r.status) ? r.message : `unknown result status '${r.status}': ${r.message}`)),
      duration_ms: r.durationMs,
      has_output: hasOutput,
    });
    if (hasOutput) output.push({ id: r.id, module: r.module, stdout: cap(mask(r.stdout)), stderr: cap(mask(r.stderr)) });
    observed.set(`${r.module}/${r.id}`, (mapStrings(r.observed ?? {}, mask) ?? {}) as Record<string, unknown>);
  }
  return { summary, results: stored, output, observed };
}

/**
 * Resources that no longer match the snapshot: a plan that would change them, or could not check
 * them. `stateless` lists resources that describe no state (an exec without creates/onlyif/unless
 * runs on every apply), which therefore cannot drift.
 */
export function driftedResources(results: readonly StoredResult[], stateless: ReadonlySet<string> = new Set()): DriftResource[] {
  return results
    .filter((r) => (r.changed || r.status === "failed") && !stateless.has(`${r.module}/${r.id}`))
    .map((r) => ({ module: r.module, id: r.id, type: r.type, diff: r.diff, status: r.status, message: r.message }));
}

export function believedRows(nodeId: string, operationId: string, appliedAt: number, module: string, exec: StoredExecution): BelievedRow[] {
  return exec.results
    .filter((r) => r.module === module && (r.status === "ok" || r.status === "changed"))
    .map((r) => ({ node_id: nodeId, module, resource_id: r.id, type: r.type, status: r.status, observed: exec.observed.get(`${module}/${r.id}`) ?? {}, operation_id: operationId, applied_at: appliedAt }));
}
