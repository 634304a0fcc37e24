import { execFile, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import type { DbHandle } from "./database.js";
import { freePort } from "./ports.js";
import { waitMs } from "./wait.js";

const run = promisify(execFile);

const PG_BIN = process.env.ORCH_PG_BIN ?? "/usr/lib/postgresql/15/bin";
/** initdb and the server refuse to run as root: everything runs as this OS user. */
const PG_USER = "postgres";

export type PgStopMode = "fast" | "immediate";

export interface PrivatePostgres {
  port: number;
  /** The temp directory holding the cluster (data/), its log and its unix socket. */
  dir: string;
  /** postgres://postgres@127.0.0.1:PORT/<db> */
  url(db?: string): string;
  /** The postmaster's pid while it runs (read from postmaster.pid), else undefined. */
  pid(): number | undefined;
  /** A fresh database on this instance, dropped by `drop` (a no-op while the server is down). */
  createDatabase(prefix?: string): Promise<DbHandle>;
  /** pg_ctl stop: "fast" ends sessions and checkpoints, "immediate" is a crash (recovery replays WAL on start). */
  stop(mode?: PgStopMode): Promise<void>;
  /** pg_ctl start -w on the same port and data directory. */
  start(): Promise<void>;
  restart(mode?: PgStopMode): Promise<void>;
  /** Stops the server (immediate) and removes the temp directory. */
  destroy(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const ids = async (): Promise<{ uid: number; gid: number }> => {
  const [u, g] = await Promise.all([run("id", ["-u", PG_USER]), run("id", ["-g", PG_USER])]);
  return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
};

const asPg = (bin: string, args: string[]) =>
  run("runuser", ["-u", PG_USER, "--", join(PG_BIN, bin), ...args], { timeout: 60_000 });

/**
 * A Postgres cluster of its own for one test file (initdb into a temp dir, own port, trust auth),
 * so a test can stop and restart the database without touching the shared server. Runs as the
 * `postgres` OS user. A detached watchdog stops the server and removes the directory when the test
 * process dies without calling destroy(), so a crashed test leaves no postmaster behind.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const { uid, gid } = await ids();
  const dir = mkdtempSync(join(tmpdir(), "orch-pg-"));
  chownSync(dir, uid, gid);
  const data = join(dir, "data");
  const log = join(dir, "server.log");
  const port = await freePort();
  const pidFile = join(data, "postmaster.pid");

  // --no-sync only skips initdb's own flush of the template files; the server runs with fsync on.
  await asPg("initdb", ["-D", data, "-U", PG_USER, "-A", "trust", "-E", "UTF8", "--no-sync", "--locale=C"]);
  writeFileSync(
    join(data, "postgresql.auto.conf"),
    [
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      "fsync = on",
      "synchronous_commit = on",
      "max_connections = 200",
      // Small footprint: several helpers share a 2-core machine.
      "shared_buffers = 32MB",
      "log_min_messages = warning",
      "",
    ].join("\n"),
  );
  chownSync(join(data, "postgresql.auto.conf"), uid, gid);

  const watchdog = startWatchdog(process.pid, dir, data);
  const pid = (): number | undefined => {
    if (!existsSync(pidFile)) return undefined;
    const n = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  };
  const running = () => existsSync(pidFile);
  const url = (db = "postgres") => `postgres://${PG_USER}@127.0.0.1:${port}/${db}`;

  const handle: PrivatePostgres = {
    port,
    dir,
    url,
    pid,
    async start() {
      if (running()) return;
      await asPg("pg_ctl", ["start", "-D", data, "-l", log, "-w", "-t", "60"]).catch((err: Error) => {
        throw new Error(`pg_ctl start failed: ${err.message}\n${tail(log)}`);
      });
    },
    async stop(mode = "fast") {
      const was = pid();
      if (!running()) return;
      await asPg("pg_ctl", ["stop", "-D", data, "-m", mode, "-w", "-t", "60"]);
      // pg_ctl returns once postmaster.pid is gone, which the postmaster removes on its way out:
      // on a busy machine the process can outlive it by a moment. Stopped means gone.
      if (was) await processGone(was, waitMs(10_000));
    },
    async restart(mode = "fast") {
      await handle.stop(mode);
      await handle.start();
    },
    async createDatabase(prefix = "orch_t") {
      const name = `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
      await adminQuery(url(), `CREATE DATABASE ${name}`);
      const db: DbHandle = {
        url: url(name),
        name,
        async drop() {
          if (!running()) return;
          await adminQuery(url(), `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
        },
        [Symbol.asyncDispose]: () => db.drop(),
      };
      return db;
    },
    async destroy() {
      await handle.stop("immediate").catch(() => {
        const p = pid();
        if (p) process.kill(p, "SIGQUIT");
      });
      watchdog.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
    [Symbol.asyncDispose]: () => handle.destroy(),
  };
  try {
    await handle.start();
  } catch (err) {
    await handle.destroy();
    throw err;
  }
  return handle;
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, "utf8").slice(-2000);
  } catch {
    return "";
  }
}

/**
 * A shell loop, detached from the test process, that waits for that process to end and then kills
 * the postmaster it finds in postmaster.pid (SIGQUIT: immediate shutdown, children included) and
 * removes the directory. destroy() kills it first, so it only acts after a crash.
 */
function startWatchdog(owner: number, dir: string, data: string) {
  const script = [
    `while kill -0 ${owner} 2>/dev/null; do sleep 1; done`,
    `pid=$(head -n1 '${data}/postmaster.pid' 2>/dev/null)`,
    `[ -n "$pid" ] && kill -QUIT "$pid" 2>/dev/null`,
    "sleep 2",
    `[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null`,
    `rm -rf '${dir}'`,
  ].join("\n");
  const child = spawn("sh", ["-c", script], { detached: true, stdio: "ignore" });
  child.unref();
  return child;
}

/** Resolves once `pid` has exited (gone, or a zombie nobody reaped); throws after `timeoutMs`. */
async function processGone(pid: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    let state: string;
    try {
      state = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      return;
    }
    if (/^\d+ \(.*\) Z/.test(state)) return;
    if (Date.now() > until) throw new Error(`postmaster ${pid} still running ${timeoutMs} ms after pg_ctl stop`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
