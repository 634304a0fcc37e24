import { contentHash } from "@orch/contracts";
import type { MetaChanges, WriteOp } from "./db/pending.js";

/**
 * What a held secret write shows its approvers, frozen: never the value nor anything derived from
 * it (a hash of a short value could be brute-forced), only whether it changes.
 */
export interface WriteContent {
  op: WriteOp;
  name: string;
  value_changed: boolean;
  description?: string | null;
  /** RFC 3339; null = the expiry is removed. */
  expires_at?: string | null;
  restriction?: { node_ids: string[]; tags: Record<string, string> } | null;
  /** The secret's version the write was planned against; null for a create. */
  base_version: string | null;
  /** The sealed write waiting in this service (pending_writes.id). */
  pending_id: string;
}

export interface WritePlan {
  op: WriteOp;
  name: string;
  valueChanged: boolean;
  changes: MetaChanges;
  baseVersion: string | null;
  pendingId: string;
}

/** The change request's content for a held write (keys absent = that field does not change). */
export function writeContent(p: WritePlan): WriteContent {
  const c: WriteContent = {
    op: p.op,
    name: p.name,
    value_changed: p.valueChanged,
    base_version: p.baseVersion,
    pending_id: p.pendingId,
  };
  const ch = p.changes;
  if (ch.description !== undefined) c.description = ch.description;
  if (ch.expires_at !== undefined)
    c.expires_at = ch.expires_at === null ? null : new Date(Number(ch.expires_at)).toISOString();
  if (ch.restriction !== undefined)
    c.restriction = ch.restriction && { node_ids: [...ch.restriction.node_ids], tags: { ...ch.restriction.tags } };
  return c;
}

/** The content and its hash (canonical JSON, as every executing service computes it). */
export function frozenWrite(p: WritePlan): { content: WriteContent; hash: string } {
  const content = writeContent(p);
  return { content, hash: contentHash(content) };
}

/** The fields a write changes, value first, as people read them. */
export function changedFields(valueChanged: boolean, ch: MetaChanges): string[] {
  const out = valueChanged ? ["value"] : [];
  for (const k of ["description", "expires_at", "restriction"] as const) if (ch[k] !== undefined) out.push(k);
  return out;
}

/** "create secret db", "update secret db (value and description)", "delete secret db". */
export function writeSummary(op: WriteOp, name: string, valueChanged: boolean, ch: MetaChanges): string {
  if (op !== "update") return `${op} secret ${name}`;
  const f = changedFields(valueChanged, ch);
  const list = f.length > 1 ? `${f.slice(0, -1).join(", ")} and ${f.at(-1)}` : (f[0] ?? "nothing");
  return `update secret ${name} (${list})`;
}
