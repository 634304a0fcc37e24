import type { Logger, Pool } from "@orch/kit";
import { eventsDb, type EventRow, isKnownId } from "./db/events.js";

export type Inserted = Array<{ id: string; seq: number }>;

/**
 * Only data exceptions, constraint violations and size limits (SQLSTATE classes 22, 23, 54) are
 * blamed on an event; anything else (connection loss, shutdown, timeouts, even our own bugs) is
 * retried, because terminating events on it would lose them.
 */
export function transient(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return !["22", "23", "54"].includes(code.slice(0, 2));
}

/** The plain insert first; a batch holding a stored id (a redelivery) again with ON CONFLICT. */
async function insertBatch(pool: Pool, rows: EventRow[]): Promise<Inserted> {
  try {
    return await eventsDb.insertNew(pool, rows);
  } catch (err) {
    if (!isKnownId(err)) throw err;
    // One statement, its own transaction: committed (and the ingest lock released) when it returns.
    return eventsDb.insert(pool, rows);
  }
}

/** Inserts rows one by one after a batch was refused, so one bad event cannot block the rest. */
async function insertEach(
  pool: Pool,
  log: Logger,
  rows: EventRow[],
): Promise<{ inserted: Inserted; refused: Set<string> }> {
  const inserted: Inserted = [];
  const refused = new Set<string>();
  for (const row of rows) {
    try {
      inserted.push(...(await eventsDb.insert(pool, [row])));
    } catch (err) {
      if (transient(err)) throw err;
      log.error(
        { id: row.id, event_type: row.event_type, pg_code: (err as { code?: string }).code },
        "Postgres refused an audit event; terminated",
      );
      refused.add(row.id);
    }
  }
  return { inserted, refused };
}

/**
 * Stores a batch in one statement, or, when Postgres refuses it for its data, row by row with the
 * refused ids set apart. Throws what is worth retrying (see transient).
 */
export async function insertRows(
  pool: Pool,
  log: Logger,
  rows: EventRow[],
): Promise<{ inserted: Inserted; refused: Set<string> }> {
  try {
    return { inserted: await insertBatch(pool, rows), refused: new Set() };
  } catch (err) {
    if (transient(err)) throw err;
    return insertEach(pool, log, rows);
  }
}
