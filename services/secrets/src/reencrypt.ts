import { count } from "@orch/contracts";
import { SYSTEM_ACTOR, type Actor, type Events, type Logger, type Queryable } from "@orch/kit";
import { sealedOf } from "./convert.js";
import { pendingDb } from "./db/pending.js";
import { secretsDb } from "./db/secrets.js";
import { KeyringError, type Keyring } from "./keyring.js";

export interface ReencryptResult {
  activeKey: string;
  reencrypted: number;
  /** Names of secrets that did not decrypt (unknown key id or failed authentication). */
  failed: string[];
}

const BATCH = 200;

/**
 * Moves every secret not sealed with the active key to it, in one transaction (rows locked as they
 * are read, a batch at a time) with one `secret.reencrypted` event. A row that does not decrypt is
 * left as it is and reported, so one bad row does not block the rest.
 */
export async function reencryptAll(
  deps: { events: Events; log: Logger },
  keyring: Keyring,
  actor: Actor = SYSTEM_ACTOR,
): Promise<ReencryptResult> {
  return deps.events.tx(async (db, emit) => {
    let after = "";
    let reencrypted = 0;
    const failed: string[] = [];
    const from = new Set<string>();
    for (;;) {
      const rows = await secretsDb.staleForUpdate(db, keyring.active, after, BATCH);
      for (const row of rows) {
        try {
          const sealed = keyring.seal(row.name, keyring.open(row.name, sealedOf(row)));
          await secretsDb.updateSealed(db, row.name, sealed);
          from.add(row.key_id);
          reencrypted++;
        } catch (err) {
          if (!(err instanceof KeyringError)) throw err;
          deps.log.warn({ secret: row.name, key_id: err.keyId, reason: err.reason }, "secret not re-encrypted");
          failed.push(row.name);
        }
      }
      if (rows.length < BATCH) break;
      after = rows.at(-1)!.name;
    }
    const pending = await reencryptPending(db, keyring, deps.log);
    if (reencrypted > 0 || failed.length > 0 || pending > 0) {
      await emit({
        type: "secret.reencrypted",
        summary: `${count(reencrypted, "secret")} re-encrypted with key ${keyring.active}${failed.length ? `, ${failed.length} failed` : ""}`,
        actor,
        target: { id: keyring.active, name: keyring.active, type: "secret_key" },
        metadata: {
          count: reencrypted,
          key_id: keyring.active,
          from_keys: [...from].sort(),
          failed,
          pending_writes: pending,
        },
        ...(failed.length ? { severity: "warning" as const } : {}),
      });
    }
    return { activeKey: keyring.active, reencrypted, failed };
  });
}

/**
 * Held writes' values (pending_writes) move too, so a key rotation does not strand a write waiting
 * for approval. Not counted as secrets; one that does not decrypt is left and logged (its approval
 * would fail to write it anyway). Answers how many moved.
 */
async function reencryptPending(db: Queryable, keyring: Keyring, log: Logger): Promise<number> {
  let after = "";
  let moved = 0;
  for (;;) {
    const rows = await pendingDb.staleForUpdate(db, keyring.active, after, BATCH);
    for (const row of rows) {
      try {
        const sealed = keyring.seal(row.name, keyring.open(row.name, sealedOf(row as Parameters<typeof sealedOf>[0])));
        await pendingDb.updateSealed(db, row.id, sealed);
        moved++;
      } catch (err) {
        if (!(err instanceof KeyringError)) throw err;
        log.warn({ pending_write: row.id, secret: row.name, key_id: err.keyId }, "held secret write not re-encrypted");
      }
    }
    if (rows.length < BATCH) return moved;
    after = rows.at(-1)!.id;
  }
}
