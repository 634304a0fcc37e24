import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import pg from "pg";
import { onExit, type TestOwner } from "./owner.js";

export interface DbHandle {
  url: string;
  name: string;
  drop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const dropStatement = (name: string) => `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`;

/**
 * Drops the database from an exit handler, where nothing asynchronous runs any more: a short-lived
 * node process does it while this one waits.
 */
function dropAtExit(base: string, name: string): void {
  const pgPath = createRequire(import.meta.url).resolve("pg");
  const script = [
    `const pg = require(${JSON.stringify(pgPath)});`,
    "const c = new pg.Client({ connectionString: process.argv[1] });",
    "c.connect().then(() => c.query(process.argv[2])).catch(() => {}).finally(() => c.end());",
  ].join("\n");
  spawnSync(process.execPath, ["-e", script, base, dropStatement(name)], { stdio: "ignore", timeout: 15_000 });
}

/**
 * A fresh database for one test file, dropped afterwards. Base server from TEST_DATABASE_URL.
 * A string is the name's prefix; with `owner` (tap's `t`) the drop is registered before the
 * database is created, and a process that exits without dropping it drops it on the way out
 * (./owner.ts).
 */
export async function createTestDatabase(
  opts: string | { prefix?: string; owner?: TestOwner } = {},
): Promise<DbHandle> {
  const { prefix = "orch_t", owner } = typeof opts === "string" ? { prefix: opts } : opts;
  const base = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const name = `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const u = new URL(base);
  u.pathname = `/${name}`;
  const unguard = onExit(() => dropAtExit(base, name));
  const handle: DbHandle = {
    url: u.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(dropStatement(name)).catch(() => {});
      await c.end();
      unguard();
    },
    [Symbol.asyncDispose]: () => handle.drop(),
  };
  owner?.teardown(() => handle.drop());
  const admin = new pg.Client({ connectionString: base });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    unguard();
    throw err;
  } finally {
    await admin.end().catch(() => {});
  }
  return handle;
}
