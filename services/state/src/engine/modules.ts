import type { BundleFile } from "@orch/contracts";
import { notFound, type Queryable } from "@orch/kit";
import { modulesDb, type ModuleRow } from "../db/catalog.js";
import { parseModule } from "../module/parse.js";
import { inlineTemplateFiles } from "../module/template-files.js";
import type { ParsedModule } from "../module/types.js";
import type { ModuleSource } from "./render.js";

/** Parsed modules by content hash: a fan-out or drift pass parses each version once. */
export interface ModuleCache {
  parse(name: string, sha256: string, content: string, files?: readonly BundleFile[] | null): ParsedModule;
  /** The parsed version when cached: its content need not be read again. */
  get(sha256: string): ParsedModule | undefined;
}

export function createModuleCache(max = 200): ModuleCache {
  const cache = new Map<string, ParsedModule>();
  return {
    parse(name, sha256, content, files) {
      const hit = cache.get(sha256);
      if (hit) return hit;
      const parsed = parseModule(content, name, files);
      if (cache.size >= max) cache.delete(cache.keys().next().value!);
      cache.set(sha256, parsed);
      return parsed;
    },
    get: (sha256) => cache.get(sha256),
  };
}

/** The current version of each named module, in the given order; 404 module_not_found for any missing. */
export async function loadSources(
  db: Queryable,
  cache: ModuleCache,
  names: readonly string[],
): Promise<ModuleSource[]> {
  const rows = new Map((await modulesDb.getMany(db, [...names])).map((r: ModuleRow) => [r.name, r]));
  const out = names.map((name) => {
    const row = rows.get(name);
    if (!row) throw notFound("module_not_found", `no module '${name}'`, { module: name });
    return { name, sha256: row.sha256, parsed: cache.parse(name, row.sha256, row.content, row.files) };
  });
  for (const s of out) await inlineTemplateFiles(db, s.parsed);
  return out;
}
