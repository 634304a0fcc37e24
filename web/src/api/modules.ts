/**
 * Modules: list, one (with its YAML), upload (create or a new version), delete, and the upload
 * history. The API keeps only the current content of a name, so the history comes from the audit
 * log's `module.uploaded` events (time, who, SHA-256, resource count of every upload).
 */
import { type AuditEvent, followPages, type ModuleInfo, type ModulePage } from "@orch/client";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import { type HeldCatalogWrite, isHeldCatalogWrite } from "./catalog-held";

export type { ModuleInfo, ModulePage };
export type ModuleSummary = ModulePage["modules"][number];

export const moduleKeys = {
  all: ["modules"] as const,
  list: () => ["modules", "list"] as const,
  detail: (name: string) => ["modules", "detail", name] as const,
  history: (name: string) => ["modules", "history", name] as const,
};

const PAGE = 500;

/** Every module, all pages (the list page and the assignment form's checkboxes). */
export function useModules() {
  return useQuery({
    queryKey: moduleKeys.list(),
    queryFn: async ({ signal }): Promise<ModuleSummary[]> => {
      const page = async (cursor: string | undefined) =>
        unwrap(
          await api.GET("/api/v1/modules", {
            params: { query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
            signal,
          }),
        );
      const all: ModuleSummary[] = [];
      await followPages(await page(undefined), page, (p) => all.push(...p.modules));
      return all;
    },
    placeholderData: keepPreviousData,
  });
}

export function useModule(name: string, opts: { enabled?: boolean } = {}) {
  return useQuery({
    queryKey: moduleKeys.detail(name),
    queryFn: async ({ signal }): Promise<ModuleInfo> =>
      unwrap(await api.GET("/api/v1/modules/{name}", { params: { path: { name } }, signal })),
    enabled: opts.enabled ?? true,
  });
}

/** Upload (POST /modules): the name must equal the YAML's own `name:`; a refusal points at a line. */
export function useUploadModule() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: { name: string; content: string }) => unwrap(await api.POST("/api/v1/modules", { body })),
    onSuccess: (m) =>
      // Held for approval (catalog.write): nothing changed yet.
      isHeldCatalogWrite(m) ||
      Promise.all([
        qc.invalidateQueries({ queryKey: moduleKeys.list() }),
        qc.invalidateQueries({ queryKey: moduleKeys.detail(m.name) }),
        qc.invalidateQueries({ queryKey: moduleKeys.history(m.name) }),
      ]),
  });
}

/** Deletes a module; `onHeld` hears of a delete an approval policy held (before the caller's onSuccess). */
export function useDeleteModule(onHeld?: (held: HeldCatalogWrite) => void) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (name: string) =>
      unwrap(await api.DELETE("/api/v1/modules/{name}", { params: { path: { name } } })),
    onSuccess: (r, name) => {
      if (isHeldCatalogWrite(r)) return onHeld?.(r);
      qc.removeQueries({ queryKey: moduleKeys.detail(name) });
    },
    onSettled: () => qc.invalidateQueries({ queryKey: moduleKeys.list() }),
  });
}

/** One upload of a module, from its audit event. */
export interface ModuleVersion {
  eventId: string;
  timestamp: string;
  by: string;
  sha256: string | undefined;
  resources: number | undefined;
  bytes: number | undefined;
  replaced: boolean;
}

/** How far back the history looks: module events, newest first, at most this many pages of 500. */
const HISTORY_PAGES = 4;

export function toModuleVersion(e: AuditEvent): ModuleVersion {
  const m = e.metadata;
  return {
    eventId: e.id,
    timestamp: e.timestamp,
    by: e.actor.name || e.actor.id,
    sha256: typeof m.sha256 === "string" ? m.sha256 : undefined,
    resources: typeof m.resources === "number" ? m.resources : undefined,
    bytes: typeof m.bytes === "number" ? m.bytes : undefined,
    replaced: m.replaced === true,
  };
}

/**
 * The uploads of this module since it was last deleted, newest first. Until the newest one is the
 * current content (the audit log is written just after the upload), it asks again every 2 s, for
 * at most 30 s.
 */
export function useModuleHistory(name: string, currentSha256: string | undefined) {
  return useQuery({
    queryKey: moduleKeys.history(name),
    queryFn: async ({ signal }): Promise<ModuleVersion[]> => {
      const versions: ModuleVersion[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < HISTORY_PAGES; i++) {
        const page = unwrap(
          await api.GET("/api/v1/audit", {
            params: { query: { category: "module", limit: PAGE, ...(cursor ? { cursor } : {}) } },
            signal,
          }),
        );
        for (const e of page.events) {
          if (e.target.type !== "module" || e.target.name !== name) continue;
          // An earlier module of the same name was deleted: its uploads are not this module's history.
          if (e.event_type === "module.deleted") return versions;
          if (e.event_type === "module.uploaded") versions.push(toModuleVersion(e));
        }
        if (!page.next_cursor) break;
        cursor = page.next_cursor;
      }
      return versions;
    },
    enabled: currentSha256 !== undefined,
    // Bounded: an upload older than the pages searched never shows, and must not poll forever.
    refetchInterval: (q) =>
      currentSha256 && q.state.data?.[0]?.sha256 !== currentSha256 && q.state.dataUpdateCount < 15 ? 2000 : false,
  });
}
