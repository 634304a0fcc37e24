import type { BundleFile } from "@orch/contracts";
import type { Queryable } from "@orch/kit";

export interface ModuleRow {
  name: string;
  content: string;
  sha256: string;
  description: string;
  resource_count: number;
  uploaded_at: number;
  uploaded_by: string;
  uploaded_by_name: string;
  /** The git source managing it (null: uploaded through the API), its commit, and whether its file left the source. */
  source: string | null;
  source_commit: string;
  removed_from_source: boolean;
  /** A bundle's files (sorted by path); null for a module uploaded as YAML. */
  files: BundleFile[] | null;
}

/** A stored module version: what a snapshot's hash names. */
export interface ModuleVersion {
  content: string;
  files: BundleFile[] | null;
}

export interface AssignmentRow {
  name: string;
  selector: string;
  modules: string[];
  description: string | null;
  created_at: number;
  created_by: string;
  /** Enforcement: drift found by a scheduled check is re-applied (engine/enforce.ts). */
  enforce: boolean;
  /** The git source managing it (null: created through the API) and its commit. */
  source: string | null;
  source_commit: string;
  /** A sync that changes it or its modules applies it, with these batch settings. */
  apply_on_sync: boolean;
  sync_batch: string;
  sync_max_failures: number | null;
  /** What it gives its modules' declared parameters (module/parameters.ts); {} when none. */
  parameters: Record<string, unknown>;
}

const MODULE_COLS =
  "name, content, sha256, description, resource_count, uploaded_at, uploaded_by, uploaded_by_name, source, source_commit, removed_from_source, files";
const MODULE_LIST_COLS =
  "name, ''::text AS content, sha256, description, resource_count, uploaded_at, uploaded_by, uploaded_by_name, source, source_commit, removed_from_source, NULL::jsonb AS files";
const ASSIGNMENT_COLS =
  "name, selector, modules, description, created_at, created_by, enforce, source, source_commit, apply_on_sync, sync_batch, sync_max_failures, parameters";

export const modulesDb = {
  async get(db: Queryable, name: string): Promise<ModuleRow | undefined> {
    return (await db.query<ModuleRow>(`SELECT ${MODULE_COLS} FROM modules WHERE name = $1`, [name])).rows[0];
  },
  /** The named modules that exist, locked against deletion until the transaction ends. */
  async getManyForShare(db: Queryable, names: string[]): Promise<ModuleRow[]> {
    return (
      await db.query<ModuleRow>(`SELECT ${MODULE_COLS} FROM modules WHERE name = ANY($1) ORDER BY name FOR SHARE`, [
        names,
      ])
    ).rows;
  },
  async getMany(db: Queryable, names: string[]): Promise<ModuleRow[]> {
    return (await db.query<ModuleRow>(`SELECT ${MODULE_COLS} FROM modules WHERE name = ANY($1)`, [names])).rows;
  },
  async page(db: Queryable, limit: number, after: string): Promise<ModuleRow[]> {
    return (
      await db.query<ModuleRow>(`SELECT ${MODULE_LIST_COLS} FROM modules WHERE name > $1 ORDER BY name LIMIT $2`, [
        after,
        limit,
      ])
    ).rows;
  },
  /** Upserts; returns whether a module of that name existed. */
  async upsert(db: Queryable, m: ModuleRow): Promise<boolean> {
    await db.query(
      "INSERT INTO module_versions (sha256, name, content, created_at, files) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (sha256) DO NOTHING",
      [m.sha256, m.name, m.content, m.uploaded_at, m.files === null ? null : JSON.stringify(m.files)],
    );
    const r = await db.query<{ inserted: boolean }>(
      `INSERT INTO modules (${MODULE_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
       ON CONFLICT (name) DO UPDATE SET content = EXCLUDED.content, sha256 = EXCLUDED.sha256, description = EXCLUDED.description,
         resource_count = EXCLUDED.resource_count, uploaded_at = EXCLUDED.uploaded_at, uploaded_by = EXCLUDED.uploaded_by, uploaded_by_name = EXCLUDED.uploaded_by_name,
         source = EXCLUDED.source, source_commit = EXCLUDED.source_commit, removed_from_source = EXCLUDED.removed_from_source,
         files = EXCLUDED.files
       RETURNING (xmax = 0) AS inserted`,
      [
        m.name,
        m.content,
        m.sha256,
        m.description,
        m.resource_count,
        m.uploaded_at,
        m.uploaded_by,
        m.uploaded_by_name,
        m.source,
        m.source_commit,
        m.removed_from_source,
        m.files === null ? null : JSON.stringify(m.files),
      ],
    );
    return !r.rows[0]!.inserted;
  },
  async lockForDelete(db: Queryable, name: string): Promise<ModuleRow | undefined> {
    return (await db.query<ModuleRow>(`SELECT ${MODULE_COLS} FROM modules WHERE name = $1 FOR UPDATE`, [name])).rows[0];
  },
  async remove(db: Queryable, name: string): Promise<void> {
    await db.query("DELETE FROM modules WHERE name = $1", [name]);
  },
  async version(db: Queryable, sha256: string): Promise<ModuleVersion | undefined> {
    return (await db.query<ModuleVersion>("SELECT content, files FROM module_versions WHERE sha256 = $1", [sha256]))
      .rows[0];
  },
  /** Drops versions no module and no snapshot refers to. */
  async pruneVersions(db: Queryable, olderThan: number): Promise<number> {
    const r = await db.query(
      `DELETE FROM module_versions v WHERE v.created_at < $1
         AND NOT EXISTS (SELECT 1 FROM modules m WHERE m.sha256 = v.sha256)
         AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.module_sha256 = v.sha256)`,
      [olderThan],
    );
    return r.rowCount ?? 0;
  },
};

export const assignmentsDb = {
  async get(db: Queryable, name: string): Promise<AssignmentRow | undefined> {
    return (await db.query<AssignmentRow>(`SELECT ${ASSIGNMENT_COLS} FROM assignments WHERE name = $1`, [name]))
      .rows[0];
  },
  async page(db: Queryable, limit: number, after: string): Promise<AssignmentRow[]> {
    return (
      await db.query<AssignmentRow>(
        `SELECT ${ASSIGNMENT_COLS} FROM assignments WHERE name > $1 ORDER BY name LIMIT $2`,
        [after, limit],
      )
    ).rows;
  },
  async insert(db: Queryable, a: AssignmentRow): Promise<void> {
    await db.query(
      `INSERT INTO assignments (${ASSIGNMENT_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [
        a.name,
        a.selector,
        a.modules,
        a.description,
        a.created_at,
        a.created_by,
        a.enforce,
        a.source,
        a.source_commit,
        a.apply_on_sync,
        a.sync_batch,
        a.sync_max_failures,
        JSON.stringify(a.parameters),
      ],
    );
  },
  /** The row, locked until the transaction ends (an update reads the old values it replaces). */
  async getForUpdate(db: Queryable, name: string): Promise<AssignmentRow | undefined> {
    return (
      await db.query<AssignmentRow>(`SELECT ${ASSIGNMENT_COLS} FROM assignments WHERE name = $1 FOR UPDATE`, [name])
    ).rows[0];
  },
  /** Rewrites the definition and the source fields (a sync updates both; the API only its own rows). */
  async update(db: Queryable, a: Omit<AssignmentRow, "created_at" | "created_by">): Promise<void> {
    await db.query(
      `UPDATE assignments SET selector = $2, modules = $3, description = $4, enforce = $5, source = $6, source_commit = $7,
         apply_on_sync = $8, sync_batch = $9, sync_max_failures = $10, parameters = $11 WHERE name = $1`,
      [
        a.name,
        a.selector,
        a.modules,
        a.description,
        a.enforce,
        a.source,
        a.source_commit,
        a.apply_on_sync,
        a.sync_batch,
        a.sync_max_failures,
        JSON.stringify(a.parameters),
      ],
    );
  },
  /** Every assignment using at least one of these modules, by name. */
  async usingAny(db: Queryable, modules: string[]): Promise<AssignmentRow[]> {
    return (
      await db.query<AssignmentRow>(
        `SELECT ${ASSIGNMENT_COLS} FROM assignments WHERE modules && $1::text[] ORDER BY name`,
        [modules],
      )
    ).rows;
  },
  /** Every enforced assignment using at least one of these modules, by name. */
  async enforcedUsing(db: Queryable, modules: string[]): Promise<AssignmentRow[]> {
    return (
      await db.query<AssignmentRow>(
        `SELECT ${ASSIGNMENT_COLS} FROM assignments WHERE enforce AND modules && $1::text[] ORDER BY name`,
        [modules],
      )
    ).rows;
  },
  async remove(db: Queryable, name: string): Promise<AssignmentRow | undefined> {
    return (
      await db.query<AssignmentRow>(`DELETE FROM assignments WHERE name = $1 RETURNING ${ASSIGNMENT_COLS}`, [name])
    ).rows[0];
  },
  /**
   * Every assignment using the module (an upload re-checks their parameters). Not locked: a
   * concurrent create or update locks the module first, so it waits for the upload and then reads
   * the new version.
   */
  async allUsing(db: Queryable, module: string): Promise<AssignmentRow[]> {
    return (
      await db.query<AssignmentRow>(
        `SELECT ${ASSIGNMENT_COLS} FROM assignments WHERE modules @> ARRAY[$1]::text[] ORDER BY name`,
        [module],
      )
    ).rows;
  },
  async usingModule(db: Queryable, module: string): Promise<string[]> {
    return (
      await db.query<{ name: string }>(
        "SELECT name FROM assignments WHERE modules @> ARRAY[$1]::text[] ORDER BY name LIMIT 10",
        [module],
      )
    ).rows.map((r) => r.name);
  },
};

/** What a git source's sync and plan read and write (sources/): its own objects and the names its tree claims. */
export const sourceCatalogDb = {
  /** Modules not managed by `source`: what its assignments may reference besides its own tree. */
  async moduleNamesOutside(db: Queryable, source: string): Promise<string[]> {
    return (
      await db.query<{ name: string }>("SELECT name FROM modules WHERE source IS DISTINCT FROM $1", [source])
    ).rows.map((r) => r.name);
  },
  /**
   * The named modules and every module `source` manages, without content; `lock` holds them until
   * the transaction ends (in name order, as an assignment create locks its modules).
   */
  async modules(db: Queryable, source: string, names: string[], lock: boolean): Promise<ModuleRow[]> {
    return (
      await db.query<ModuleRow>(
        `SELECT ${MODULE_LIST_COLS} FROM modules WHERE name = ANY($1) OR source = $2 ORDER BY name${lock ? " FOR UPDATE" : ""}`,
        [names, source],
      )
    ).rows;
  },
  /** The named assignments and every assignment `source` manages; `lock` as for modules. */
  async assignments(db: Queryable, source: string, names: string[], lock: boolean): Promise<AssignmentRow[]> {
    return (
      await db.query<AssignmentRow>(
        `SELECT ${ASSIGNMENT_COLS} FROM assignments WHERE name = ANY($1) OR source = $2 ORDER BY name${lock ? " FOR UPDATE" : ""}`,
        [names, source],
      )
    ).rows;
  },
  /** A managed module whose file left the tree while an assignment still uses it. */
  async markRemoved(db: Queryable, name: string): Promise<void> {
    await db.query("UPDATE modules SET removed_from_source = true WHERE name = $1", [name]);
  },
};
