/** Git sources, their sync outcome and fleet plans (pure). */
import type { ResponseBody } from "@orch/client";
import { operationLines, paintStatus } from "./operations.js";
import { count } from "./units.js";
import { idsOnly, type OperatorNames } from "../operator-names.js";

export type Source = ResponseBody<"/api/v1/sources/{name}", "get">;
export type CreatedSource = ResponseBody<"/api/v1/sources", "post">;
export type SourcePage = ResponseBody<"/api/v1/sources", "get">;
export type SourcePlan = ResponseBody<"/api/v1/sources/{name}/plan", "post">;
type FileError = Source["errors"][number];

/** Commits are shown as git shows them: the first 7 characters. */
export const short = (commit: string | null) => (commit ? commit.slice(0, 7) : null);
const firstLine = (s: string | null) => (s ? (s.split("\n")[0] ?? s) : null);

export const SOURCE_COLUMNS = ["NAME", "URL", "BRANCH", "STATUS", "COMMIT", "SYNCED", "ERROR"];

export function sourceRows(sources: SourcePage["sources"]): unknown[][] {
  return sources.map((s) => [s.name, s.url, s.branch, s.status, short(s.commit), s.synced_at, firstLine(s.error)]);
}

export function sourceFields(s: Source, names: OperatorNames = idsOnly): [string, unknown][] {
  return [
    ["name", s.name],
    ["url", s.url],
    ["branch", s.branch],
    ["path", s.path || "(repository root)"],
    ["interval", `${s.interval_s}s`],
    ["auth", s.auth],
    ["status", s.status],
    ["commit", s.commit],
    ["synced_at", s.synced_at],
    ["attempted_at", s.attempted_at],
    ["attempted_commit", s.attempted_commit],
    ["next_sync_at", s.next_sync_at],
    ["failures", s.failures],
    ["modules", s.module_count],
    ["assignments", s.assignment_count],
    ["created_at", s.created_at],
    ["created_by", names(s.created_by)],
    ["error", s.error],
  ];
}

/** `file:line:column: message (code)`, as compilers print positions. */
export function fileErrorLines(errors: readonly FileError[], indent = "  "): string[] {
  return errors.map((e) => {
    const at = [e.file || "(tree)", e.line, e.column].filter((x) => x !== null).join(":");
    return `${indent}${at}: ${e.message} (${e.code})`;
  });
}

/**
 * After `sources add`: where to point the forge, and the secret, which the server never shows
 * again. A secret the operator supplied is not repeated: they have it, and scrollback is not a vault.
 */
export function createdLines(s: CreatedSource, webhookUrl: string, givenFrom: string | undefined): string[] {
  return [
    `Created git source ${s.name}: ${s.url} (${s.branch}${s.path ? `, ${s.path}/` : ""}); the first sync starts now`,
    `Webhook URL:    ${webhookUrl}`,
    givenFrom
      ? `Webhook secret: the value of $${givenFrom}`
      : `Webhook secret: ${s.webhook_secret}   (shown this once: store it in the forge's webhook settings)`,
  ];
}

export function syncLines(s: Source): string[] {
  if (s.status === "ok")
    return [
      `Synced ${s.name} to ${short(s.commit)} (${count(s.module_count, "module")}, ${count(s.assignment_count, "assignment")})`,
    ];
  if (s.status === "pending") return [`Sync of ${s.name} queued behind one already running`];
  return [
    `Sync of ${s.name}${s.attempted_commit ? ` at ${short(s.attempted_commit)}` : ""} failed: ${s.error ?? "unknown error"}`,
    ...fileErrorLines(s.errors),
    s.commit ? `Commit ${short(s.commit)} stays in force; nothing changed` : "Nothing was synced yet",
  ];
}

/** The plan, per assignment and per agent, with the diffs of what would change. */
export function planLines(p: SourcePlan, color: boolean): string[] {
  const lines = [
    `Plan of ${p.source} at ${p.ref} (${short(p.commit) ?? "?"}; in force: ${short(p.current_commit) ?? "none"})`,
  ];
  if (p.errors.length) {
    lines.push(`${count(p.errors.length, "error")} in the tree; nothing planned:`, ...fileErrorLines(p.errors));
    return lines;
  }
  if (p.modules_changed.length) lines.push(`modules changed: ${p.modules_changed.join(", ")}`);
  if (p.modules_removed.length) lines.push(`modules removed: ${p.modules_removed.join(", ")}`);
  for (const a of p.assignments) {
    lines.push(
      "",
      `assignment ${a.name}: ${paintStatus(color, a.change === "unchanged" ? "ok" : "changed", 0, a.change)}`,
    );
    if (a.run && a.run.operations.length === 0) lines.push("  no agent matches");
    // A diff is one multi-line entry: every line of it moves under its assignment.
    for (const op of a.operations)
      lines.push(
        ...operationLines(op, color)
          .flatMap((l) => l.split("\n"))
          .map((l) => `  ${l}`),
      );
    const waiting = (a.run?.operations ?? []).filter(
      (o) => o.status === "queued" || o.status === "pending" || o.status === "running",
    );
    if (waiting.length) lines.push(`  still running on ${waiting.map((o) => o.name || o.node_id).join(", ")}`);
  }
  const changing = p.assignments.filter((a) => a.change !== "unchanged").length;
  lines.push(
    "",
    `${changing} of ${count(p.assignments.length, "assignment")} would change${p.complete ? "" : " (incomplete: some agents had not answered; see the runs)"}`,
  );
  return lines;
}
