import { notFound, OrchError, unavailable } from "@orch/kit";
import { modulesDb, sourceCatalogDb } from "../db/catalog.js";
import type { SourceRow } from "../db/sources.js";
import type { StateDeps } from "../deps.js";
import { GitError, openGitRepo } from "./git.js";
import { requireBox, type SourceBox } from "./seal.js";
import { parseModule } from "../module/parse.js";
import type { DeclaringModule } from "../module/parameters.js";
import { checkTreeBlobs, checkTreeTemplateFiles } from "./tree-blobs.js";
import { bundleDigests } from "./tree-bundles.js";
import { checkTreeParameters, outsideModules } from "./tree-parameters.js";
import { parseTree } from "./tree.js";
import type { Tree } from "./tree-types.js";

/** A ref of the source fetched and validated (not yet compared with the catalog). */
export interface ReadTree {
  commit: string;
  tree: Tree;
}

/**
 * Fetches `ref` (shallow), lists the tree under the source's path and validates every file, with
 * references resolved against the modules the catalog holds outside this source. Throws GitError
 * for fetch failures and source_keys_unset when the credentials cannot be opened.
 */
export async function readSourceTree(
  deps: StateDeps,
  box: SourceBox | undefined,
  row: SourceRow,
  ref: string,
): Promise<ReadTree> {
  const { config, log, pool } = deps;
  const auth = row.auth_sealed ? requireBox(box).openAuth(row.name, row.auth_sealed) : undefined;
  const repo = openGitRepo({
    cacheDir: config.state.sources_dir,
    name: row.name,
    url: row.url,
    ...(auth ? { auth } : {}),
    timeoutMs: config.state.sources_git_timeout_ms,
    log,
  });
  const commit = await repo.fetch(ref);
  const files = await repo.readTree(commit, row.path);
  const known = new Set(await sourceCatalogDb.moduleNamesOutside(pool, row.name));
  const tree = parseTree(files, known, await bundleDigests(deps, repo, row.name, files));
  checkTreeParameters(tree, await outsideDeclarations(deps, tree, known));
  await checkTreeBlobs(pool, tree);
  await checkTreeTemplateFiles(pool, tree);
  return { commit, tree };
}

/** The parameter declarations of catalog modules (outside the source) that the tree's assignments use. */
async function outsideDeclarations(
  { pool }: StateDeps,
  tree: Tree,
  known: ReadonlySet<string>,
): Promise<Map<string, DeclaringModule>> {
  const names = outsideModules(tree).filter((m) => known.has(m));
  const out = new Map<string, DeclaringModule>();
  if (names.length === 0) return out;
  for (const m of await modulesDb.getMany(pool, names)) {
    try {
      out.set(m.name, { name: m.name, parameters: parseModule(m.content, m.name).parameters });
    } catch (err) {
      // Stored before a parser change made it invalid: its assignments fail at apply as they would anyway.
      if (!(err instanceof OrchError)) throw err;
    }
  }
  return out;
}

/** A fetch failure as the API answers it (plan): 404 for a missing ref, else 503 with git's reason. */
export function gitFailureError(err: unknown): unknown {
  if (!(err instanceof GitError)) return err;
  if (err.failure === "ref_not_found") return notFound("source_ref_not_found", err.message);
  return unavailable("source_unreachable", `the repository cannot be fetched (${err.failure}): ${err.message}`, {
    failure: err.failure,
  });
}

/** Whether a sync records this as a failed attempt (rather than rethrowing it as a fault). */
export const isRecordable = (err: unknown): err is GitError | OrchError =>
  err instanceof GitError || (err instanceof OrchError && err.reason === "source_keys_unset");
