/** State operations, their per-resource results and diffs, drift records, believed state and captured output (pure). */
import type {
  BelievedState,
  DriftRecord,
  OperationOutput,
  StateOperation as Operation,
  StateOperationPage,
} from "@orch/client";
import { agree, count } from "./units.js";

export const isOpen = (status: string) => status === "pending" || status === "running";

const paint = (on: boolean, code: number, s: string) => (on ? `\x1b[${code}m${s}\x1b[0m` : s);

/** A unified diff with added lines green, removed lines red, hunk headers cyan. */
export function colorDiff(diff: string, on: boolean): string {
  return diff
    .split("\n")
    .map((l) => {
      if (l.startsWith("+++") || l.startsWith("---")) return paint(on, 1, l);
      if (l.startsWith("+")) return paint(on, 32, l);
      if (l.startsWith("-")) return paint(on, 31, l);
      if (l.startsWith("@@")) return paint(on, 36, l);
      return l;
    })
    .join("\n");
}

const STATUS_COLOR: Record<string, number> = {
  ok: 32,
  succeeded: 32,
  changed: 33,
  failed: 31,
  timed_out: 31,
  unreachable: 31,
  skipped: 90,
  unsupported: 35,
  not_started: 90,
};
/** A status word, padded to `width` before colouring so columns line up either way. */
export const paintStatus = (on: boolean, s: string, width = 0, label = s) =>
  paint(on && STATUS_COLOR[s] !== undefined, STATUS_COLOR[s] ?? 0, label.padEnd(width));

export function summaryText(s: Operation["summary"]): string {
  return (
    (["changed", "ok", "failed", "skipped", "unsupported"] as const)
      .filter((k) => s[k])
      .map((k) => `${s[k]} ${k}`)
      .join(", ") || "no resources"
  );
}

const firstLine = (message: string) => message.split("\n")[0];
/** A diff without its final newline, coloured and indented under its resource line. */
const indentedDiff = (diff: string, color: boolean, indent: string) =>
  colorDiff(diff.replace(/\n$/, ""), color).replace(/^/gm, indent);

export function operationHeadline(op: Operation, color: boolean): string {
  const who = op.node_name || op.node_id;
  const why = op.error_code ? ` (${op.error_code}${op.error ? `: ${op.error}` : ""})` : "";
  return `${op.kind} ${op.id} on ${who}: ${paintStatus(color, op.status)}${why}${isOpen(op.status) ? "" : ` — ${summaryText(op.summary)}`}`;
}

/**
 * Per-resource lines (and diffs of what changes) of a finished operation. An `ok` resource's
 * message is shown too: it says why nothing ran ("not run: none of site/config changed", an exec's
 * guard), which is the answer to "why did it not restart?".
 */
export function resultLines(op: Operation, color: boolean, indent = "  "): string[] {
  const lines: string[] = [];
  for (const r of op.results ?? []) {
    lines.push(
      `${indent}${paintStatus(color, r.status, 11)} ${r.module}/${r.id} (${r.type})${r.message ? ` — ${firstLine(r.message)}` : ""}`,
    );
    if (r.changed && r.diff.trim()) lines.push(indentedDiff(r.diff, color, `${indent}    `));
  }
  return lines;
}

/** The headline followed by the per-resource lines. */
export const operationLines = (op: Operation, color: boolean): string[] => [
  operationHeadline(op, color),
  ...resultLines(op, color),
];

/** What a drift record found: a verdict line, then each differing resource with its diff. */
export function driftLines(record: DriftRecord, color: boolean): string[] {
  const n = record.resources.length;
  const verdict = record.drifted ? paintStatus(color, "failed", 0, "drifted") : paintStatus(color, "ok", 0, "in sync");
  const lines = [
    `${verdict}: ${count(n, "resource")} ${agree(n, "differs", "differ")} (checked ${record.checked_at}, drift ${record.id}, operation ${record.operation_id})`,
  ];
  for (const r of record.resources) {
    lines.push(
      `  ${paintStatus(color, r.status)} ${r.module}/${r.id} (${r.type})${r.message ? ` — ${firstLine(r.message)}` : ""}`,
    );
    if (r.diff.trim()) lines.push(indentedDiff(r.diff, color, "      "));
  }
  return lines;
}

export const OPERATION_COLUMNS = ["ID", "AGENT", "KIND", "STATUS", "MODULES", "CREATED", "SUMMARY"];

export function operationRows(operations: StateOperationPage["operations"]): unknown[][] {
  return operations.map((o) => [
    o.id,
    o.node_name || o.node_id,
    o.kind,
    o.status,
    o.modules.join(","),
    o.created_at,
    o.error_code ?? `${o.summary.changed} changed, ${o.summary.failed} failed`,
  ]);
}

export const STATE_COLUMNS = ["MODULE", "RESOURCE", "TYPE", "STATUS", "OPERATION", "APPLIED"];

export function stateRows(resources: BelievedState["resources"]): unknown[][] {
  return resources.map((r) => [r.module, r.id, r.type, r.status, r.operation_id, r.applied_at]);
}

/** Each exec resource's stdout (header always) and stderr (only when there is some). */
export function outputLines(outputs: OperationOutput["outputs"]): string[] {
  if (!outputs.length) return ["no captured output"];
  const lines: string[] = [];
  for (const o of outputs) {
    lines.push(`== ${o.module}/${o.id} stdout`);
    if (o.stdout) lines.push(o.stdout.replace(/\n$/, ""));
    if (o.stderr) lines.push(`== ${o.module}/${o.id} stderr`, o.stderr.replace(/\n$/, ""));
  }
  return lines;
}
