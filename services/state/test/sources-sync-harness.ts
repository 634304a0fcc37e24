import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Test } from "tap";
import { createTestRepo, startGitHttpServer, type GitHttpServer, type TestRepo } from "@orch/kit/testing";
import { sourcesDb, type SourceRow } from "../src/db/sources.js";
import { createSourceBox } from "../src/sources/seal.js";
import { createSourceSync } from "../src/sources/sync.js";
import { ADMIN, startStack, TEST_SOURCE_KEYS } from "./harness.js";

/**
 * The state stack with a git source syncer built on its engine (the service's own wiring is the
 * handlers' business), a real repository served over git's smart HTTP, and the agents' marker dir.
 */
export async function startSourcesStack(t: Test) {
  const root = mkdtempSync(join(tmpdir(), "orch-src-root-"));
  const cache = mkdtempSync(join(tmpdir(), "orch-src-cache-"));
  const marks = mkdtempSync(join(tmpdir(), "orch-src-marks-"));
  const s = await startStack(t, { state: { sources_dir: cache } });
  const servers: GitHttpServer[] = [];
  t.teardown(async () => {
    await Promise.all(servers.map((x) => x.close()));
    for (const d of [root, cache, marks]) rmSync(d, { recursive: true, force: true });
  });
  const box = createSourceBox(TEST_SOURCE_KEYS)!;
  const sync = createSourceSync(s.state.svc.engine, box);
  const pool = s.state.deps.pool;

  return {
    s,
    sync,
    pool,
    marks,
    /** A repository under the served root; `serve` starts a server of its own (to stop it later). */
    async repo(name: string): Promise<TestRepo> {
      return createTestRepo(join(root, name));
    },
    async server(): Promise<GitHttpServer> {
      const srv = await startGitHttpServer(root);
      servers.push(srv);
      return srv;
    },
    /** Registers a source as CreateSource would store it, not yet due. */
    async addSource(name: string, url: string, o: Partial<SourceRow> = {}): Promise<void> {
      await sourcesDb.insert(pool, {
        name,
        url,
        branch: "main",
        path: "",
        interval_s: 300,
        auth_kind: "none",
        auth_sealed: null,
        webhook_sealed: box.sealWebhook(name, "a-webhook-secret-of-32-characters"),
        status: "pending",
        commit: "",
        synced_at: 0,
        attempted_at: 0,
        attempted_commit: "",
        next_sync_at: Date.now() + 3_600_000,
        failures: 0,
        error: "",
        errors: [],
        created_at: Date.now(),
        created_by: ADMIN.id,
        ...o,
      });
    },
    row: async (name: string) => (await sourcesDb.get(pool, name))!,
    manual: { kind: "manual", actor: ADMIN } as const,
    /** A module whose one resource writes `<marks>/<prefix>-<hostname>` with `content`. */
    module(name: string, content: string, prefix = name): string {
      return [
        `name: ${name}`,
        "resources:",
        "  - id: mark",
        "    type: file",
        `    path: '${marks}/${prefix}-{{ attributes.hostname }}'`,
        `    content: '${content}'`,
        "",
      ].join("\n");
    },
    assignment(selector: string, modules: string[], extra: Record<string, unknown> = {}): string {
      const lines = [`selector: '${selector}'`, "modules:", ...modules.map((m) => `  - ${m}`)];
      for (const [k, v] of Object.entries(extra)) lines.push(`${k}: ${typeof v === "string" ? `'${v}'` : v}`);
      return `${lines.join("\n")}\n`;
    },
  };
}
