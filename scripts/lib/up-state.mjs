// Where `npm run up` keeps its state (keys, development CA, NATS store, the agents' data), and how
// its messages name those files: one rule for up and `npm run agent`, so a second stack
// (ORCH_UP_STATE_DIR) is told about, and trusts, its own files. Plain Node (runs before `npm ci`).
import { isAbsolute, join, relative, resolve } from "node:path";

const ROOT = new URL("../..", import.meta.url).pathname;

/** ORCH_UP_STATE_DIR (relative to the clone, where npm runs scripts), else the clone's .orch. */
export const upStateDir = (env = process.env, root = ROOT) => resolve(root, env.ORCH_UP_STATE_DIR || ".orch");

/** A path as messages show it: relative to `cwd` when inside it (".orch/admin.key"), else absolute. */
export function shownPath(path, cwd = process.cwd()) {
  const rel = relative(cwd, path);
  return rel && rel !== ".." && !rel.startsWith("../") && !isAbsolute(rel) ? rel : path;
}

/** `shownPath` of a file in the state dir: state(".orch", "tls/ca.crt"). */
export const statePath = (stateDir, file, cwd = process.cwd()) => shownPath(join(stateDir, file), cwd);
