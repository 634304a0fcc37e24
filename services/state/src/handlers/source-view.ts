import { notFound, type Queryable } from "@orch/kit";
import { sourcesDb, type SourceView } from "../db/sources.js";

export const missingSource = (name: string) => notFound("source_not_found", `no git source '${name}'`);

/** The source with its counts, or source_not_found. */
export async function viewSource(db: Queryable, name: string): Promise<SourceView> {
  const row = await sourcesDb.get(db, name);
  if (!row) throw missingSource(name);
  return row;
}
