import { create, toBinary } from "@bufbuild/protobuf";
import { RevocationSchema } from "@orch/contracts";
import { notFound } from "@orch/kit";
import { passkeysDb } from "../db/passkeys.js";
import type { AuthDeps } from "../deps.js";
import { toPasskey } from "../webauthn.js";
import { REVOCATION_SUBJECT } from "./login.js";
import { passkeyContext, requireSelfOrAdmin, type PasskeyContext, type PasskeyHandlers } from "./passkey-context.js";
import { beginPasskeyLogin, finishPasskeyLogin } from "./passkey-login.js";
import { beginPasskeyRegistration, finishPasskeyRegistration } from "./passkey-registration.js";

/** The passkey RPCs: registration (passkey-registration.ts), sign-in (passkey-login.ts), listing and removal. */
export function passkeyHandlers(deps: AuthDeps): PasskeyHandlers {
  const c = passkeyContext(deps);
  return {
    beginPasskeyRegistration: beginPasskeyRegistration(c),
    finishPasskeyRegistration: finishPasskeyRegistration(c),
    listPasskeys: listPasskeys(c),
    removePasskey: removePasskey(c),
    beginPasskeyLogin: beginPasskeyLogin(c),
    finishPasskeyLogin: finishPasskeyLogin(c),
  };
}

export function listPasskeys(c: PasskeyContext): PasskeyHandlers["listPasskeys"] {
  const { pool } = c.deps;
  const { operator } = c;
  return async (req, ctx) => {
    const op = await operator(req.operatorId);
    requireSelfOrAdmin(ctx, op);
    return { passkeys: (await passkeysDb.ofOperator(pool, op.id)).map(toPasskey) };
  };
}

export function removePasskey(c: PasskeyContext): PasskeyHandlers["removePasskey"] {
  const { events, nc } = c.deps;
  const { operator } = c;
  return async (req, ctx) => {
    const op = await operator(req.operatorId);
    requireSelfOrAdmin(ctx, op);
    const removed = await events.tx(async (db, emit) => {
      const r = await passkeysDb.remove(db, op.id, req.passkeyId);
      if (!r) throw notFound("passkey_not_found", `operator ${op.name} has no passkey '${req.passkeyId}'`);
      await emit({
        type: "auth.passkey.removed",
        summary: `passkey '${r.row.name}' of ${op.name} removed by ${ctx.actor.name}`,
        actor: ctx.actor,
        target: { id: r.row.id, name: r.row.name, type: "passkey" },
        metadata: { operator_id: op.id, operator_name: op.name, revoked_sessions: r.tokenHashes.length },
      });
      return r;
    });
    // The sessions are gone from the database; tell every gateway to drop its cached copies now.
    for (const tokenHash of removed.tokenHashes) {
      const revocation = create(RevocationSchema, { tokenHash, tokenOperatorId: op.id });
      nc.publish(REVOCATION_SUBJECT, toBinary(RevocationSchema, revocation));
    }
    return {};
  };
}
