import { isErrorReason, SOURCE_POLICIES_DIR } from "@orch/contracts";
import type { SourceFileErrorRow } from "../db/sources.js";
import type { Engine } from "../engine/index.js";
import { sourceActor } from "./actor.js";
import type { TreePolicy } from "./policy-file.js";

/**
 * Hands a tree's approval policies to the auth service, which owns policies (docs/approvals.md
 * #policies-from-git): it checks them as the API checks a PUT and, only when all pass, makes them
 * the source's. Its refusals come back as the sync's file errors, at the field's line. Called on
 * every sync, so a tree that dropped its last policy removes it.
 */
export async function handOverPolicies(
  engine: Engine,
  source: string,
  commit: string,
  policies: readonly TreePolicy[],
): Promise<SourceFileErrorRow[]> {
  const res = await engine.clients.approvals.syncSourcePolicies(
    { source, commit, policies: policies.map((p) => p.policy), release: false },
    { actor: sourceActor(source) },
  );
  const byName = new Map(policies.map((p) => [p.name, p]));
  return res.errors.map((e) => {
    const p = byName.get(e.name);
    const at = p?.at[e.field] ?? { line: 0, column: 0 };
    return {
      file: p?.file ?? `${SOURCE_POLICIES_DIR}/${e.name}.yaml`,
      ...at,
      // The auth service answers catalogued codes; anything else is reported as the policy's fault.
      code: isErrorReason(e.code) ? e.code : "invalid_approval_policy",
      message: e.message,
    };
  });
}

/** The source is being deleted: its policies stay, managed through the API from now on. */
export async function releasePolicies(engine: Engine, source: string): Promise<number> {
  const res = await engine.clients.approvals.syncSourcePolicies(
    { source, commit: "", policies: [], release: true },
    { actor: sourceActor(source) },
  );
  return res.updated;
}
