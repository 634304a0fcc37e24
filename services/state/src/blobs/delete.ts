import { count, type StateService } from "@orch/contracts";
import { forbidden, notFound, precondition, type Actor, type EventInput, type Handlers } from "@orch/kit";
import type { Engine } from "../engine/index.js";
import { checkDigest } from "./digest.js";
import { blobUsers, type BlobUser } from "./references.js";
import { blobsDb, type BlobRow } from "./tables.js";

/** Modules a blob_in_use problem names (the message says how many more there are). */
const SHOWN_USERS = 5;

/** Who deletes the blobs nothing names (metadata reason: unreferenced). */
export const BLOB_GC_ACTOR: Actor = { id: "system:blob-gc", name: "blob-gc", type: "system", role: "" };

export const blobNotFound = (digest: string) => notFound("blob_not_found", `no blob ${digest} is stored`);

const modules = (names: string[]) => `module${names.length > 1 ? "s" : ""} ${names.join(", ")}`;

/** 409 blob_in_use naming the first few modules, those whose current content names it first. */
export function blobInUse(digest: string, users: readonly BlobUser[]) {
  const ordered = [...users.filter((u) => u.current), ...users.filter((u) => !u.current)];
  const shown = ordered.slice(0, SHOWN_USERS);
  const current = shown.filter((u) => u.current).map((u) => u.module);
  const kept = shown.filter((u) => !u.current).map((u) => u.module);
  const by = [
    ...(current.length ? [modules(current)] : []),
    ...(kept.length ? [`a kept version of ${modules(kept)} (snapshots and drift checks use it)`] : []),
  ].join(", and by ");
  const more = users.length - shown.length;
  return precondition(
    "blob_in_use",
    `blob ${digest} is named by ${by}${more > 0 ? `, and by ${count(more, "more module")}` : ""}`,
    { modules: shown.map((u) => u.module), more },
  );
}

/** The audit event of one deleted blob. */
export function blobDeleted(b: BlobRow, actor: Actor, reason?: "unreferenced"): EventInput {
  const why = reason === "unreferenced" ? " (no module names it)" : "";
  return {
    type: "blob.deleted",
    summary: `blob ${b.digest.slice(0, 19)}… (${b.size} bytes) deleted by ${actor.name}${why}`,
    actor,
    target: { id: b.digest, name: b.digest, type: "blob" },
    metadata: { digest: b.digest, size: b.size, ...(reason ? { reason } : {}) },
  };
}

/**
 * DeleteBlob (admin): 404 when not stored, 409 blob_in_use while a module or a kept version names
 * it (references.ts); else the blob, its chunks and its git mappings go with one blob.deleted event.
 */
export function deleteBlobHandler({ deps }: Engine): Handlers<typeof StateService>["deleteBlob"] {
  const { events } = deps;
  return async (req, ctx) => {
    // The gateway enforces the admin role; checked again so a bus caller cannot skip it.
    if (ctx.actor.type !== "system" && ctx.actor.role !== "admin") throw forbidden();
    const digest = checkDigest(req.digest);
    await events.tx(async (db, emit) => {
      // Locked first: a module upload naming it either committed before this reads who names it,
      // or finds it gone when it locks the blobs it names (referenced.ts, `lock`).
      const row = await blobsDb.lockForDelete(db, digest);
      if (!row) throw blobNotFound(digest);
      const users = (await blobUsers(db, [digest])).get(digest);
      if (users) throw blobInUse(digest, users);
      await blobsDb.remove(db, [row]);
      await emit(blobDeleted(row, ctx.actor));
    });
    return {};
  };
}
