import { precondition } from "@orch/kit";

/**
 * Refuses an API change to an object a git source owns: the next sync would silently undo it, so
 * the repository is the only place to change it (or deleting the source releases it).
 */
export function refuseManaged(
  kind: "module" | "assignment" | "value set",
  row: { name: string; source: string | null; source_commit: string },
): void {
  if (row.source === null) return;
  throw precondition(
    "managed_by_source",
    `${kind} '${row.name}' is managed by git source '${row.source}' (commit ${row.source_commit.slice(0, 7)}): change it in the repository`,
    { source: row.source, commit: row.source_commit },
  );
}
