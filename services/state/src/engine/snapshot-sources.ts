import { modulesDb } from "../db/catalog.js";
import { snapshotsDb, type SnapshotRow } from "../db/snapshots.js";
import { inlineTemplateFiles } from "../module/template-files.js";
import type { StateDeps } from "../deps.js";
import type { ModuleCache } from "./modules.js";
import type { ModuleSource } from "./render.js";

/** The modules of an agent's snapshot, exactly as applied (version and attributes/tags read). */
export async function snapshotSources(deps: StateDeps, cache: ModuleCache, nodeId: string): Promise<ModuleSource[]> {
  return sourcesOf(deps, cache, await snapshotsDb.ofNode(deps.pool, nodeId));
}

/** The modules of snapshot rows already read (the runner reads many agents' rows at once). */
export async function sourcesOf(
  deps: StateDeps,
  cache: ModuleCache,
  snaps: readonly SnapshotRow[],
): Promise<ModuleSource[]> {
  const out: ModuleSource[] = [];
  for (const s of snaps) {
    // Operations read their agent's snapshot (engine/operation-run.ts, sealing): a cached version is not
    // read from the database again.
    let parsed = cache.get(s.module_sha256);
    if (!parsed) {
      const version = await modulesDb.version(deps.pool, s.module_sha256);
      if (version === undefined) continue;
      parsed = cache.parse(s.module, s.module_sha256, version.content, version.files);
    }
    await inlineTemplateFiles(deps.pool, parsed);
    out.push({
      name: s.module,
      sha256: s.module_sha256,
      parsed,
      inputs: {
        attributes: s.attributes,
        tags: s.tags,
        // Version 2: rendered again with the values and parameters the apply used.
        ...(s.used_values ? { values: s.used_values } : {}),
        ...(s.parameters ? { parameters: s.parameters } : {}),
      },
    });
  }
  return out;
}
