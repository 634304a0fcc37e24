// Four-eyes catalog writes (catalog.write, docs/approvals.md): an API create, update or delete of an
// assignment or module that an approval policy covers is validated in full, stored as a pending
// write and becomes a change request; on approval it is carried out once, through the same write
// path as the direct API call, as the requester.
import type { JsonObject } from "@bufbuild/protobuf";
import { invalid, type Actor, type Queryable } from "@orch/kit";
import type { AssignmentRow, ModuleRow } from "../db/catalog.js";
import { pendingCatalogDb, type PendingCatalogWrite } from "../db/pending-catalog-writes.js";
import type { Engine } from "../engine/index.js";
import {
  type AssignmentInput,
  insertAssignment,
  removeAssignment,
  replaceAssignment,
} from "../catalog/assignment-write.js";
import { dropModule, prepareModule, writeModule, type PreparedModule } from "../catalog/module-write.js";
import { refuseUnknownBlobs } from "../blobs/referenced.js";
import {
  assignmentContent,
  baseHash,
  catalogContentHash,
  catalogSummary,
  moduleContent,
  type CatalogContent,
  type CatalogKind,
  type CatalogOp,
  type WriteHooks,
} from "./catalog-content.js";
import { needsApproval } from "./gate.js";
import { planChanged } from "./refusals.js";

const ACTION = "catalog.write";

/** A write the API asks for, validated as far as it can be without the database. */
export type CatalogWrite =
  | { kind: "assignment"; op: "create" | "update"; input: AssignmentInput }
  | { kind: "assignment"; op: "delete"; name: string }
  | { kind: "module"; op: "upload"; prepared: PreparedModule }
  | { kind: "module"; op: "delete"; name: string };

/** The change request a held write became (HeldCatalogWrite). */
export interface Held {
  changeRequestId: string;
  summary: string;
}

function nameOf(w: CatalogWrite): string {
  if ("input" in w) return w.input.name;
  return "prepared" in w ? w.prepared.row.name : w.name;
}
const VERB = { create: "created", update: "updated", upload: "uploaded", delete: "deleted" } as const;

/** The write ran its course and was rolled back: how a held write is validated by the real write path. */
class DryRun extends Error {}

/** Another execution of the same request finished first: its result is the answer. */
class AlreadyDone extends Error {
  constructor(readonly result: string) {
    super("already executed");
  }
}

type Hooks = WriteHooks<AssignmentRow> & WriteHooks<ModuleRow>;

/** Runs the write through the direct path (catalog/assignment-write.ts, catalog/module-write.ts). */
async function write(engine: Engine, w: CatalogWrite, actor: Actor, hooks: Hooks): Promise<void> {
  if ("input" in w) {
    if (w.op === "create") await insertAssignment(engine, w.input, actor, hooks);
    else await replaceAssignment(engine, w.input, actor, hooks);
  } else if ("prepared" in w) await writeModule(engine, w.prepared, actor, hooks);
  else if (w.kind === "assignment") await removeAssignment(engine, w.name, actor, hooks);
  else await dropModule(engine, w.name, actor, hooks);
}

/**
 * Asks the policies about an API catalog write. Undefined: write now (no policy, or an admin broke
 * glass). Otherwise the write was validated by running it in a transaction rolled back, stored as
 * pending and submitted as a change request: nothing changed.
 */
export async function gateCatalogWrite(
  engine: Engine,
  w: CatalogWrite,
  actor: Actor,
  ask: { reason: string; breakGlass: boolean },
): Promise<Held | undefined> {
  const name = nameOf(w);
  const verdict = await needsApproval(engine, {
    action: ACTION,
    agents: [],
    actor,
    reason: ask.reason,
    breakGlass: ask.breakGlass,
    target: { id: name, name, type: w.kind },
    doing: `${VERB[w.op]} ${w.kind} ${name}`,
  });
  if (verdict.kind === "run") return undefined;
  return hold(engine, w, actor, verdict.reason);
}

/** The object before and after, as the write path sees them, with nothing stored. */
async function dryRun(engine: Engine, w: CatalogWrite, actor: Actor) {
  let current: AssignmentRow | ModuleRow | undefined;
  let next: AssignmentRow | ModuleRow | undefined;
  const hooks: Hooks = {
    locked: async (_db: Queryable, c: AssignmentRow | ModuleRow | undefined) => {
      current = c;
    },
    done: async (_db: Queryable, n: AssignmentRow | ModuleRow | undefined) => {
      next = n;
      throw new DryRun();
    },
  };
  try {
    await write(engine, w, actor, hooks);
  } catch (err) {
    if (!(err instanceof DryRun)) throw err;
  }
  return { current, next };
}

/** What the pending row keeps to carry the write out later. */
function pendingBody(w: CatalogWrite, next: AssignmentRow | ModuleRow | undefined): Record<string, unknown> {
  if ("input" in w) return { ...w.input, parameters: (next as AssignmentRow).parameters };
  if ("prepared" in w) {
    const m = w.prepared.row;
    return { content: m.content, files: m.files, sha256: m.sha256, resources: m.resource_count };
  }
  return {};
}

async function hold(engine: Engine, w: CatalogWrite, actor: Actor, reason: string): Promise<Held> {
  const { deps, clients } = engine;
  const name = nameOf(w);
  const { current, next } = await dryRun(engine, w, actor);
  const op: CatalogOp = w.op === "upload" ? (current ? "update" : "create") : w.op;
  const id = deps.ids.next();
  const content: CatalogContent =
    w.kind === "assignment"
      ? assignmentContent(op, name, { current: current as AssignmentRow, next: next as AssignmentRow }, id)
      : moduleContent(op, name, { current: current as ModuleRow, next: next as ModuleRow }, id);
  await deps.events.tx(async (db) => {
    // Under lock, as an upload checks them: the blobs a held upload names cannot be collected
    // between this check and the pending row that keeps them (blobs/references.ts).
    if ("prepared" in w) await refuseUnknownBlobs(db, w.prepared.blobs, { lock: true });
    await pendingCatalogDb.insert(db, {
      id,
      kind: w.kind,
      op,
      name,
      body: pendingBody(w, next),
      base_hash: content.base_hash,
      created_at: deps.clock.now(),
    });
  });
  const summary = catalogSummary(content);
  try {
    const cr = await clients.approvals.submitChangeRequest(
      {
        action: ACTION,
        targetType: w.kind,
        targetName: name,
        summary,
        reason,
        content: content as unknown as JsonObject,
        contentHash: catalogContentHash(content),
        agents: [],
      },
      { actor },
    );
    await pendingCatalogDb.bindRequest(deps.pool, id, cr.id);
    return { changeRequestId: cr.id, summary };
  } catch (err) {
    // No request holds it: nothing may ever execute it (and its blobs need not be kept).
    await pendingCatalogDb.remove(deps.pool, id);
    throw err;
  }
}

/** The write a pending row describes, prepared again as the requester would make it now. */
async function pendingWrite(engine: Engine, p: PendingCatalogWrite, actor: Actor): Promise<CatalogWrite> {
  if (p.kind === "assignment") {
    if (p.op === "delete") return { kind: "assignment", op: "delete", name: p.name };
    return { kind: "assignment", op: p.op, input: p.body as unknown as AssignmentInput };
  }
  if (p.op === "delete") return { kind: "module", op: "delete", name: p.name };
  const files = (p.body.files as { path: string; digest: string; size: number }[] | null) ?? [];
  const prepared = await prepareModule(
    engine,
    {
      name: p.name,
      content: String(p.body.content),
      files: files.map((f) => ({ path: f.path, digest: f.digest, size: BigInt(f.size) })),
    },
    actor,
  );
  if (prepared.row.sha256 !== p.body.sha256) throw planChanged(`module '${p.name}' would not be stored as approved`);
  return { kind: "module", op: "upload", prepared };
}

/** The pending row an approved request names, checked against the request's content. */
async function approvedPending(engine: Engine, req: { id: string; contentHash: string; content?: unknown }) {
  const c = (req.content ?? {}) as Partial<CatalogContent>;
  const p = typeof c.pending_id === "string" ? await pendingCatalogDb.get(engine.deps.pool, c.pending_id) : undefined;
  const matches =
    p &&
    p.kind === c.kind &&
    p.op === c.op &&
    p.name === c.name &&
    p.base_hash === c.base_hash &&
    (p.change_request_id === null || p.change_request_id === req.id) &&
    catalogContentHash(c as CatalogContent) === req.contentHash;
  if (!matches)
    throw invalid("invalid_request", "the change request names no held catalog write", { field: "content" });
  return p;
}

/**
 * Carries out an approved catalog write once, as the requester, through the direct write path: the
 * object must hash as it did when the write was held (plan_changed otherwise; the request stays
 * pending), and the pending row is marked executed in the write's transaction, so a retried call
 * answers the recorded result.
 */
export async function executeCatalogWrite(
  engine: Engine,
  req: { id: string; contentHash: string; approvers: string[]; content?: unknown },
  actor: Actor,
): Promise<string> {
  const p = await approvedPending(engine, req);
  if (p.executed_at !== null) return p.result ?? "";
  const result = `${VERB[p.op]} ${p.kind} ${p.name}`;
  const hooks: Hooks = {
    metadata: { change_request_id: req.id, approved_by: req.approvers },
    locked: async (db: Queryable, current: AssignmentRow | ModuleRow | undefined) => {
      const again = await pendingCatalogDb.lock(db, p.id);
      if (again?.executed_at != null) throw new AlreadyDone(again.result ?? "");
      if (baseHash(p.kind as CatalogKind, current) !== p.base_hash)
        throw planChanged(`${p.kind} '${p.name}' changed since the request was submitted`);
    },
    done: async (db: Queryable) => {
      await pendingCatalogDb.markExecuted(db, p.id, req.id, engine.deps.clock.now(), result);
    },
  };
  try {
    await write(engine, await pendingWrite(engine, p, actor), actor, hooks);
  } catch (err) {
    if (err instanceof AlreadyDone) return err.result;
    throw err;
  }
  return result;
}
