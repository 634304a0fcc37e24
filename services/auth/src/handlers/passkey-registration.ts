import type { RegistrationResponseJSON } from "@simplewebauthn/server";
import { generateRegistrationOptions, verifyRegistrationResponse } from "@simplewebauthn/server";
import { conflict, invalid, isUniqueViolation } from "@orch/kit";
import { passkeysDb } from "../db/passkeys.js";
import { parseWebAuthnResponse, passkeyName, requireRp, toPasskey } from "../webauthn.js";
import { badChallenge, requireSelf, type PasskeyContext, type PasskeyHandlers } from "./passkey-context.js";

export function beginPasskeyRegistration(c: PasskeyContext): PasskeyHandlers["beginPasskeyRegistration"] {
  const { pool, clock } = c.deps;
  const { operator, challengeTtlMs } = c;
  return async (req, ctx) => {
    const { rpId } = requireRp(req);
    const op = await operator(req.operatorId);
    requireSelf(ctx, op);
    const existing = await passkeysDb.ofOperator(pool, op.id);
    const options = await generateRegistrationOptions({
      rpName: "orch",
      rpID: rpId,
      userName: op.name,
      userID: new Uint8Array(Buffer.from(op.id, "utf8")),
      attestationType: "none",
      excludeCredentials: existing.map((p) => ({ id: p.credential_id, transports: p.transports })),
      // A passkey is the whole sign-in (no key, no password): user verification (PIN, biometrics) is required,
      // so a stolen security key alone opens nothing.
      authenticatorSelection: { residentKey: "required", userVerification: "required" },
      timeout: challengeTtlMs,
    });
    await passkeysDb.addChallenge(pool, options.challenge, "register", op.id, clock.now() + challengeTtlMs);
    return { optionsJson: JSON.stringify(options) };
  };
}

export function finishPasskeyRegistration(c: PasskeyContext): PasskeyHandlers["finishPasskeyRegistration"] {
  const { events, clock, ids } = c.deps;
  const { operator, takeChallenge } = c;
  return async (req, ctx) => {
    const { rpId, origin } = requireRp(req);
    const name = passkeyName(req.name);
    const op = await operator(req.operatorId);
    requireSelf(ctx, op);
    const parsed = parseWebAuthnResponse<RegistrationResponseJSON>(req.responseJson);
    if (!(await takeChallenge(parsed.challenge, "register", op.id))) throw badChallenge();
    const info = await verifyRegistrationResponse({
      response: parsed.response,
      expectedChallenge: parsed.challenge,
      expectedOrigin: origin,
      expectedRPID: rpId,
      requireUserVerification: true,
    }).then(
      (v) => (v.verified ? v.registrationInfo : undefined),
      (err: unknown) => void ctx.log.info({ err }, "passkey registration refused"),
    );
    if (!info) {
      throw invalid("invalid_passkey_response", "the authenticator's registration response does not verify", {
        field: "response",
      });
    }
    const row = {
      id: ids.next(),
      operator_id: op.id,
      credential_id: info.credential.id,
      public_key: Buffer.from(info.credential.publicKey),
      counter: info.credential.counter,
      transports: info.credential.transports ?? [],
      device_type: info.credentialDeviceType,
      backed_up: info.credentialBackedUp,
      name,
      created_at: clock.now(),
      last_used_at: null,
    };
    try {
      await events.tx(async (db, emit) => {
        await passkeysDb.insert(db, row);
        const actor = { id: op.id, name: op.name, type: "operator" };
        await emit({
          type: "auth.passkey.registered",
          summary: `${op.name} registered passkey '${name}'`,
          actor,
          target: { id: row.id, name, type: "passkey" },
          metadata: { operator_id: op.id, device_type: row.device_type, backed_up: row.backed_up },
        });
      });
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw conflict("passkey_exists", "this authenticator is already registered");
      }
      throw err;
    }
    return toPasskey(row);
  };
}
