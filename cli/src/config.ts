/**
 * Local state under the orchctl home (`--home`, $ORCHCTL_HOME, default ~/.config/orchctl):
 * `session.json` = {server, token, expires_at, operator}, mode 0600, in a 0700 directory.
 */
import { mkdir, readFile, rename, rm, writeFile, chmod } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { CliError } from "./errors.js";

export const DEFAULT_SERVER = "http://127.0.0.1:8080";
export const SESSION_FILE = "session.json";

export interface Operator {
  id: string;
  name: string;
  role: string;
  public_key: string;
  active: boolean;
  created_at: string;
  created_by?: string | null;
  [extra: string]: unknown;
}

export interface Session {
  server: string;
  token: string;
  expires_at: string;
  operator: Operator;
}

/** The user's home directory, honouring an injected $HOME. */
export function userHome(env: Record<string, string | undefined>): string {
  return env.HOME || homedir();
}

/** `--home` > $ORCHCTL_HOME > $HOME/.config/orchctl */
export function resolveHome(flag: string | undefined, env: Record<string, string | undefined>): string {
  return flag || env.ORCHCTL_HOME || join(userHome(env), ".config", "orchctl");
}

/** Creates `dir` (and parents) with mode 0700. An already existing directory is left as it is. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  const created = await mkdir(dir, { recursive: true, mode: 0o700 });
  // mkdir's mode is filtered by the umask; make the directory we created exactly 0700.
  if (created !== undefined) await chmod(dir, 0o700);
}

/** Writes a file atomically with mode 0600 (temp file + rename, so the mode holds on overwrite). */
export async function writePrivateFile(path: string, data: string): Promise<void> {
  const tmp = join(dirname(path), `.${process.pid}.${Date.now()}.tmp`);
  await writeFile(tmp, data, { mode: 0o600, flag: "wx" });
  try {
    await chmod(tmp, 0o600);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

export function sessionPath(home: string): string {
  return join(home, SESSION_FILE);
}

export async function readSession(home: string): Promise<Session | null> {
  let text: string;
  try {
    text = await readFile(sessionPath(home), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new CliError(`cannot read ${sessionPath(home)}: ${(err as Error).message}`, "session_unreadable", {
      cause: err,
    });
  }
  try {
    const s = JSON.parse(text) as Partial<Session>;
    if (typeof s.server !== "string" || typeof s.token !== "string") throw new Error("missing server or token");
    return s as Session;
  } catch (err) {
    throw new CliError(
      `${sessionPath(home)} is corrupt (${(err as Error).message}); run orchctl login`,
      "session_corrupt",
      { cause: err },
    );
  }
}

export async function writeSession(home: string, session: Session): Promise<string> {
  await ensurePrivateDir(home);
  const path = sessionPath(home);
  await writePrivateFile(path, `${JSON.stringify(session, null, 2)}\n`);
  return path;
}

/** Deletes session.json; returns whether there was one. */
export async function deleteSession(home: string): Promise<boolean> {
  try {
    await rm(sessionPath(home));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
}

/** Whether the session's expires_at lies in the past (unparseable dates are left to the server). */
export function sessionExpired(session: Session, now = Date.now()): boolean {
  const t = Date.parse(session.expires_at);
  return Number.isFinite(t) && t <= now;
}
