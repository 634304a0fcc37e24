// Which database `npm run up` uses. A checkout's stack keeps its admin key, secrets key and bus
// passwords in its state dir; a database set up by another checkout holds operators and secrets
// those keys do not open. So a checkout whose state is new, finding the default database already
// set up by someone else, takes a database of its own instead of printing a login that cannot work.
import { createHash } from "node:crypto";

export const DEFAULT_DATABASE = "orch";

/** A database name of this checkout's own: stable for the same state dir, distinct between clones. */
/** @param {string} stateDir */
export function ownDatabaseName(stateDir) {
  return `${DEFAULT_DATABASE}_${createHash("sha256").update(stateDir).digest("hex").slice(0, 10)}`;
}

/**
 * The database to use.
 * - `recorded`: the name this state dir used before (its `database` file), if any: kept.
 * - `freshState`: the state dir has no admin key yet (this is the checkout's first run).
 * - `defaultTaken`: the default database exists and already has operators.
 * Returns `{ name, own }`: `own` is true when the checkout moved to its own database.
 * @param {{ recorded?: string, freshState: boolean, defaultTaken: boolean, stateDir: string }} facts
 * @returns {{ name: string, own: boolean }}
 */
export function chooseDatabase({ recorded, freshState, defaultTaken, stateDir }) {
  if (recorded) return { name: recorded, own: recorded !== DEFAULT_DATABASE };
  if (freshState && defaultTaken) return { name: ownDatabaseName(stateDir), own: true };
  return { name: DEFAULT_DATABASE, own: false };
}
