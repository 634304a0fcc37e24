import { existsSync, readFileSync } from "node:fs";
import t from "tap";
import pg from "pg";
import { startPrivatePostgres } from "@orch/kit/testing";

const query = async (url: string, sql: string, params: unknown[] = []) => {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows;
  } finally {
    await c.end();
  }
};

// A process that exited but was not yet reaped (a zombie) still answers kill(pid, 0): read its state instead.
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

t.test("a committed row survives an immediate (crash) stop, and destroy leaves nothing behind", async (t) => {
  const pgi = await startPrivatePostgres();
  t.teardown(() => pgi.destroy());
  t.not(pgi.port, 5432, "its own port, not the shared server's");
  const db = await pgi.createDatabase("orch_pp");
  await query(db.url, "CREATE TABLE t (k text PRIMARY KEY, v int NOT NULL)");
  await query(db.url, "INSERT INTO t VALUES ($1, $2)", ["acked", 42]);

  const before = pgi.pid();
  t.ok(before && alive(before), "the postmaster runs");
  await pgi.stop("immediate");
  t.equal(pgi.pid(), undefined, "no postmaster.pid after the stop");
  t.ok(before && !alive(before), "the postmaster is gone");
  await t.rejects(query(db.url, "SELECT 1"), { code: "ECONNREFUSED" }, "clients are refused while it is down");

  await pgi.start();
  t.same(await query(db.url, "SELECT k, v FROM t"), [{ k: "acked", v: 42 }], "the row is still there");
  await pgi.restart("fast");
  t.same(await query(db.url, "SELECT count(*)::int AS n FROM t"), [{ n: 1 }], "and after a fast restart");

  const last = pgi.pid();
  await pgi.destroy();
  t.notOk(existsSync(pgi.dir), "the temp directory is removed");
  t.ok(last && !alive(last), "the postmaster is stopped");
});
