import { UNNOTIFIED_FLAG } from "@orch/contracts";
import { SYSTEM_ACTOR, type Events, type Queryable } from "@orch/kit";
import { operatorsDb } from "./db/operators.js";

/** A failed key login (Ed25519 challenge): the presented key says which operator was tried. */
export interface KeyLoginFailure {
  reason: string;
  publicKey: string;
  remoteAddress: string;
}

/**
 * A failed console sign-in. The code or passkey names the operator when it was known (an expired
 * code, a valid passkey of an inactive operator); `credential` names what was presented otherwise.
 */
export interface ConsoleLoginFailure {
  reason: string;
  method: "login_code" | "passkey";
  operatorId?: string | undefined;
  /** What was presented when no operator is known (a passkey's credential id; never a code). */
  credential?: string | undefined;
  remoteAddress: string;
}

export type LoginFailure = KeyLoginFailure | ConsoleLoginFailure;

/**
 * Records failed logins without letting anyone flood the operators' inboxes.
 * A failure for a key no active operator holds can be caused by anyone at will: it is recorded at
 * `info` and marked so notify sends it to no inbox and no channel. For a real operator the first
 * failure in a window is a `warning` (that one notifies); later ones in the same window are recorded
 * quietly, so a burst of attempts against one operator notifies once per window.
 */
export function loginFailureRecorder(deps: { events: Events; clock: { now(): number }; windowMs: number }) {
  const { events, clock, windowMs } = deps;

  /** True when this failure opens a new window for the operator (atomic across replicas). */
  const opensWindow = async (db: Queryable, operatorId: string, now: number): Promise<boolean> => {
    const r = await db.query(
      `INSERT INTO login_failure_windows (operator_id, window_start) VALUES ($1, $2)
       ON CONFLICT (operator_id) DO UPDATE SET window_start = EXCLUDED.window_start
       WHERE login_failure_windows.window_start <= $2 - $3::bigint
       RETURNING 1`,
      [operatorId, now, windowMs],
    );
    return (r.rowCount ?? 0) > 0;
  };

  return async function recordLoginFailure(f: LoginFailure): Promise<void> {
    await events.tx(async (db, emit) => {
      const viaConsole = "method" in f;
      const op = viaConsole
        ? f.operatorId
          ? await operatorsDb.byId(db, f.operatorId)
          : undefined
        : await operatorsDb.byKey(db, f.publicKey);
      // A boolean, never undefined: the event records `known_operator: false` for unknown keys.
      const known = op?.active === true;
      const notifies = known && (await opensWindow(db, op.id, clock.now()));
      const target = known
        ? { id: op.id, name: op.name, type: "operator" }
        : viaConsole
          ? unknownConsoleTarget(f)
          : { id: f.publicKey, name: f.publicKey.slice(0, 16), type: "public_key" };
      await emit({
        type: "auth.login.failed",
        severity: notifies ? "warning" : "info",
        summary: known ? `login failed for ${op.name}: ${f.reason}` : `login failed: ${f.reason}`,
        actor: SYSTEM_ACTOR,
        target,
        metadata: {
          reason: f.reason,
          ...(viaConsole ? { method: f.method } : { public_key: f.publicKey }),
          remote_address: f.remoteAddress,
          known_operator: known,
          ...(notifies ? {} : { [UNNOTIFIED_FLAG]: true }),
        },
      });
    });
  };
}

function unknownConsoleTarget(f: ConsoleLoginFailure) {
  if (f.method === "passkey" && f.credential)
    return { id: f.credential, name: f.credential.slice(0, 16), type: "passkey" };
  // Never the code itself: an unknown one may be a mistyped live one.
  return { id: f.method, name: f.method.replace("_", " "), type: f.method };
}
