// Module uploads and deletes as the API makes them, shared by the direct handlers and the execution of
// an approved catalog.write (approvals/catalog-write.ts).
import { count, type ModuleFile } from "@orch/contracts";
import { notFound, precondition, type Actor } from "@orch/kit";
import type { WriteHooks } from "../approvals/catalog-content.js";
import { checkModuleContent, validName } from "../validate.js";
import { assignmentsDb, modulesDb, type ModuleRow } from "../db/catalog.js";
import { refuseBrokenAssignments } from "../engine/assignment-parameters.js";
import type { Engine } from "../engine/index.js";
import { parseModule } from "../module/parse.js";
import type { ParsedModule } from "../module/types.js";
import { refuseManaged } from "../handlers/managed.js";
import { refuseUnknownBlobs } from "../blobs/referenced.js";
import { asRef, bundleFiles } from "../module/bundle-manifest.js";
import { inlineTemplateFiles } from "../module/template-files.js";
import { moduleSha256 } from "../module/version-hash.js";

/** The upload found no module to lock, then replaced one created meanwhile (perhaps by a sync): retried once. */
class CreatedMeanwhile extends Error {}

/** An upload checked as far as it can be outside the write's transaction: the row to store and what it names. */
export interface PreparedModule {
  row: ModuleRow;
  parsed: ParsedModule;
  blobs: { blobs: ParsedModule["blobs"] };
}

type Hooks = WriteHooks<ModuleRow>;

/** Parses and checks an upload (YAML, bundle manifest, blobs, templates) as `actor` would store it. */
export async function prepareModule(
  { deps }: Engine,
  req: { name: string; content: string; files?: readonly Pick<ModuleFile, "path" | "digest" | "size">[] },
  actor: Actor,
): Promise<PreparedModule> {
  const { pool, clock } = deps;
  const name = validName(req.name, "name", "module");
  checkModuleContent(req.content);
  const files = bundleFiles(req.files ?? []);
  const parsed = parseModule(req.content, name, files);
  const blobs = { blobs: [...parsed.blobs, ...(files ?? []).map(asRef)] };
  await refuseUnknownBlobs(pool, blobs);
  await inlineTemplateFiles(pool, parsed);
  const row: ModuleRow = {
    name,
    content: req.content,
    sha256: moduleSha256(req.content, files),
    description: parsed.description,
    resource_count: parsed.resources.length,
    uploaded_at: clock.now(),
    uploaded_by: actor.id,
    uploaded_by_name: actor.name,
    source: null,
    source_commit: "",
    removed_from_source: false,
    files,
  };
  return { row, parsed, blobs };
}

/** Stores a prepared upload: the write the API and an approved change request share. */
export async function writeModule(
  { deps, cache }: Engine,
  { row, parsed, blobs }: PreparedModule,
  actor: Actor,
  hooks: Hooks = {},
): Promise<ModuleRow> {
  const { name, files } = row;
  const upload = () =>
    deps.events.tx(async (db, emit) => {
      // Locked: a sync cannot take the module over between this check and the write.
      const existing = await modulesDb.lockForDelete(db, name);
      await hooks.locked?.(db, existing);
      if (existing) refuseManaged("module", existing);
      if (existing) await refuseBrokenAssignments(db, cache, name, parsed);
      // Again under lock: a blob deleted since the check above is refused, not named.
      await refuseUnknownBlobs(db, blobs, { lock: true });
      const replaced = await modulesDb.upsert(db, row);
      if (replaced && !existing) throw new CreatedMeanwhile();
      await emit({
        type: "module.uploaded",
        summary: `module ${name} ${replaced ? "replaced" : "uploaded"} by ${actor.name} (${count(row.resource_count, "resource")})`,
        actor,
        target: { id: name, name, type: "module" },
        metadata: {
          sha256: row.sha256,
          resources: row.resource_count,
          replaced,
          bytes: Buffer.byteLength(row.content),
          ...(files ? { files: files.length } : {}),
          ...hooks.metadata,
        },
      });
      await hooks.done?.(db, row);
    });
  try {
    await upload();
  } catch (err) {
    if (!(err instanceof CreatedMeanwhile)) throw err;
    // Rolled back; this time the row exists and is locked and checked.
    await upload();
  }
  return row;
}

/** Deletes a module no assignment uses: the write the API and an approved change request share. */
export async function dropModule({ deps }: Engine, name: string, actor: Actor, hooks: Hooks = {}): Promise<void> {
  await deps.events.tx(async (db, emit) => {
    // Locking the module first orders this against a concurrent assignment create (FOR SHARE there).
    const row = await modulesDb.lockForDelete(db, name);
    await hooks.locked?.(db, row);
    if (!row) throw notFound("module_not_found", `no module '${name}'`);
    refuseManaged("module", row);
    const users = await assignmentsDb.usingModule(db, name);
    if (users.length)
      throw precondition(
        "module_in_use",
        `module '${name}' is used by assignment${users.length > 1 ? "s" : ""} ${users.join(", ")}`,
        { assignments: users },
      );
    await modulesDb.remove(db, name);
    await emit({
      type: "module.deleted",
      summary: `module ${name} deleted by ${actor.name}`,
      actor,
      target: { id: name, name, type: "module" },
      metadata: { sha256: row.sha256, ...hooks.metadata },
    });
    await hooks.done?.(db, undefined);
  });
}
