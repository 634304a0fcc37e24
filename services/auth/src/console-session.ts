import type { Emit, Queryable } from "@orch/kit";
import type { OperatorRow } from "./db/operators.js";
import { sessionsDb, type ConsoleVia } from "./db/sessions.js";
import type { AuthDeps } from "./deps.js";
import { newSecret } from "./handlers/login.js";

export interface ConsoleSessionOpts {
  via: ConsoleVia;
  remoteAddress: string;
  /** The passkey that opened the session: removing it ends the session. */
  passkeyId?: string;
  /** False when the caller audits the sign-in itself (single sign-on: `auth.sso.login_succeeded`). */
  audit?: boolean;
}

/**
 * Opens a web console session inside the caller's transaction: a token in the same format and the
 * same table as a key login's (so Authenticate, logout and operator removal treat it alike), plus
 * its `auth.login.succeeded` event.
 */
export function consoleSessionOpener(deps: Pick<AuthDeps, "clock" | "config">) {
  const ttlMs = deps.config.auth.console_session_ttl_hours * 3_600_000;
  return async function openConsoleSession(
    db: Queryable,
    emit: Emit,
    o: OperatorRow,
    opts: ConsoleSessionOpts,
  ): Promise<{ token: string; expiresAt: number }> {
    const now = deps.clock.now();
    const { value: token, hash } = newSecret();
    const expiresAt = now + ttlMs;
    await sessionsDb.addConsoleToken(db, {
      hash,
      operatorId: o.id,
      createdAt: now,
      expiresAt,
      via: opts.via,
      ...(opts.passkeyId ? { passkeyId: opts.passkeyId } : {}),
    });
    if (opts.audit === false) return { token, expiresAt };
    const actor = { id: o.id, name: o.name, type: "operator" };
    await emit({
      type: "auth.login.succeeded",
      summary: `${o.name} signed in to the console (${opts.via.replace("_", " ")})`,
      actor,
      target: actor,
      metadata: {
        method: opts.via,
        remote_address: opts.remoteAddress,
        expires_at: new Date(expiresAt).toISOString(),
        ...(opts.passkeyId ? { passkey_id: opts.passkeyId } : {}),
      },
    });
    return { token, expiresAt };
  };
}
