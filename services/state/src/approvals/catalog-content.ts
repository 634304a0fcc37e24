// What a held catalog write (catalog.write, docs/approvals.md) shows its approvers, and the hash
// of the object it was held against. Pure: no database, so the executor and the tests agree.
import { contentHash } from "@orch/contracts";
import type { Queryable } from "@orch/kit";
import type { AssignmentRow, ModuleRow } from "../db/catalog.js";

export type CatalogKind = "assignment" | "module";
export type CatalogOp = "create" | "update" | "delete";

/**
 * What an approved write adds to the direct write path (catalog/assignment-write.ts,
 * catalog/module-write.ts), all inside the write's own transaction.
 */
export interface WriteHooks<Row> {
  /** First, with the object as it is now (locked when it exists; undefined when it does not). */
  locked?(db: Queryable, current: Row | undefined): Promise<void>;
  /** Last, with what the write stored (undefined for a delete): records the execution. */
  done?(db: Queryable, written: Row | undefined): Promise<void>;
  /** Added to the audit event's metadata (`change_request_id`, `approved_by`). */
  metadata?: Record<string, unknown>;
}

/** An assignment's definition as the approver reads it and the base hash covers it. */
export const assignmentView = (a: AssignmentRow) => ({
  selector: a.selector,
  modules: a.modules,
  description: a.description,
  enforce: a.enforce,
  parameters: a.parameters,
  source: a.source,
});

/** A module as the approver reads it: its version hash (content and bundle files) and size. */
export const moduleView = (m: ModuleRow) => ({
  sha256: m.sha256,
  resources: m.resource_count,
  description: m.description,
  files: m.files?.length ?? 0,
  source: m.source,
});

/** SHA-256 of the object as stored; null when there is none. A held write executes only on the same hash. */
export function baseHash(kind: CatalogKind, current: AssignmentRow | ModuleRow | undefined): string | null {
  if (!current) return null;
  return contentHash(
    kind === "assignment" ? assignmentView(current as AssignmentRow) : moduleView(current as ModuleRow),
  );
}

export interface FieldChange {
  field: string;
  before: unknown;
  after: unknown;
}

/** The fields of an assignment that differ (before/after null on create/delete). */
export function assignmentDiff(
  before: ReturnType<typeof assignmentView> | null,
  after: ReturnType<typeof assignmentView> | null,
): FieldChange[] {
  const fields = ["selector", "modules", "description", "enforce", "parameters"] as const;
  const out: FieldChange[] = [];
  for (const f of fields) {
    const b = before ? before[f] : null;
    const a = after ? after[f] : null;
    if (contentHash(b ?? null) !== contentHash(a ?? null)) out.push({ field: f, before: b ?? null, after: a ?? null });
  }
  return out;
}

/** Lines shown at most on each side of a module diff: an approver reads a summary, GET /modules has the rest. */
export const MAX_DIFF_LINES = 200;

export interface LineDiff {
  /** 1-based line where the changed region starts (in both texts: what precedes it is equal). */
  line: number;
  removed: string[];
  added: string[];
  /** More changed lines than MAX_DIFF_LINES on a side: the lists are cut. */
  truncated: boolean;
}

/**
 * The changed region of two texts: the equal lines at the start and the end are trimmed and the
 * middle of each side is what was removed and added. Not a minimal diff (a module is at most
 * 256 KiB, and a quadratic one would be slow there), but exact about what changed where.
 */
export function lineDiff(before: string, after: string): LineDiff {
  const b = before === "" ? [] : before.split("\n");
  const a = after === "" ? [] : after.split("\n");
  let start = 0;
  while (start < b.length && start < a.length && b[start] === a[start]) start++;
  let endB = b.length;
  let endA = a.length;
  while (endB > start && endA > start && b[endB - 1] === a[endA - 1]) {
    endB--;
    endA--;
  }
  const removed = b.slice(start, endB);
  const added = a.slice(start, endA);
  return {
    line: start + 1,
    removed: removed.slice(0, MAX_DIFF_LINES),
    added: added.slice(0, MAX_DIFF_LINES),
    truncated: removed.length > MAX_DIFF_LINES || added.length > MAX_DIFF_LINES,
  };
}

/** The held write's frozen content: what approvers read, and what its hash binds. */
export interface CatalogContent {
  kind: CatalogKind;
  op: CatalogOp;
  name: string;
  base_hash: string | null;
  after: Record<string, unknown> | null;
  diff: { fields: FieldChange[] } | { lines: LineDiff; before_sha256: string | null };
  pending_id: string;
}

type Side<R> = { current: R | undefined; next: R | undefined };

/** The content of a held assignment write; `next` is undefined for a delete. */
export function assignmentContent(op: CatalogOp, name: string, s: Side<AssignmentRow>, pendingId: string) {
  const after = s.next ? assignmentView(s.next) : null;
  const content: CatalogContent = {
    kind: "assignment",
    op,
    name,
    base_hash: baseHash("assignment", s.current),
    after,
    diff: { fields: assignmentDiff(s.current ? assignmentView(s.current) : null, after) },
    pending_id: pendingId,
  };
  return content;
}

/** The content of a held module write; `next` is undefined for a delete. */
export function moduleContent(op: CatalogOp, name: string, s: Side<ModuleRow>, pendingId: string) {
  const content: CatalogContent = {
    kind: "module",
    op,
    name,
    base_hash: baseHash("module", s.current),
    after: s.next ? moduleView(s.next) : null,
    diff: {
      lines: lineDiff(s.current?.content ?? "", s.next?.content ?? ""),
      before_sha256: s.current?.sha256 ?? null,
    },
    pending_id: pendingId,
  };
  return content;
}

/** "update assignment web (selector, modules)": the request's summary. */
export function catalogSummary(c: CatalogContent): string {
  const what = `${c.op} ${c.kind} ${c.name}`;
  if (c.op === "delete") return what;
  if ("fields" in c.diff) {
    if (c.op === "create") return what;
    return `${what} (${c.diff.fields.map((f) => f.field).join(", ") || "no change"})`;
  }
  const resources = typeof c.after?.resources === "number" ? c.after.resources : 0;
  return `${what} (${resources} resource${resources === 1 ? "" : "s"})`;
}

/** The request's content hash (canonical JSON, as every service hashes it). */
export const catalogContentHash = (c: CatalogContent) => contentHash(c);
