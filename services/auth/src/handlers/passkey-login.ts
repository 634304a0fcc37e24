import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import { generateAuthenticationOptions, verifyAuthenticationResponse } from "@simplewebauthn/server";
import { operatorsDb } from "../db/operators.js";
import { passkeysDb } from "../db/passkeys.js";
import { toOperator } from "../convert.js";
import { ssoRequired, ssoRequiredError } from "../sso/require.js";
import { parseWebAuthnResponse, requireRp } from "../webauthn.js";
import {
  badChallenge,
  badPasskey,
  unknownOperator,
  type PasskeyContext,
  type PasskeyHandlers,
} from "./passkey-context.js";

export function beginPasskeyLogin(c: PasskeyContext): PasskeyHandlers["beginPasskeyLogin"] {
  const { pool, clock } = c.deps;
  const { challengeTtlMs } = c;
  return async (req) => {
    const { rpId } = requireRp(req);
    // Discoverable credentials: the authenticator offers the operator's passkeys, the server names none.
    const options = await generateAuthenticationOptions({
      rpID: rpId,
      allowCredentials: [],
      userVerification: "required",
      timeout: challengeTtlMs,
    });
    await passkeysDb.addChallenge(pool, options.challenge, "login", null, clock.now() + challengeTtlMs);
    return { optionsJson: JSON.stringify(options) };
  };
}

export function finishPasskeyLogin(c: PasskeyContext): PasskeyHandlers["finishPasskeyLogin"] {
  const { pool, events, clock } = c.deps;
  const { takeChallenge, passkeyFailed, openSession } = c;
  return async (req, ctx) => {
    const { rpId, origin } = requireRp(req);
    const remote = req.remoteAddress;
    const parsed = parseWebAuthnResponse<AuthenticationResponseJSON>(req.responseJson);
    // Both looked up before either is judged, so the challenge is spent whatever the outcome.
    const [passkey, challengeOk] = await Promise.all([
      passkeysDb.byCredentialId(pool, parsed.credentialId),
      takeChallenge(parsed.challenge, "login", null),
    ]);
    if (!passkey) {
      await passkeyFailed("unknown_passkey", remote, { credential: parsed.credentialId });
      throw badPasskey();
    }
    const operatorId = passkey.operator_id;
    if (!challengeOk) {
      await passkeyFailed("invalid_webauthn_challenge", remote, { operatorId });
      throw badChallenge();
    }
    // The user handle is the operator id the passkey was registered with; another one is not this credential.
    const handleOk =
      parsed.userHandle === undefined || Buffer.from(parsed.userHandle, "base64url").toString("utf8") === operatorId;
    const verified = await verifyAuthenticationResponse({
      response: parsed.response,
      expectedChallenge: parsed.challenge,
      expectedOrigin: origin,
      expectedRPID: rpId,
      credential: {
        id: passkey.credential_id,
        publicKey: new Uint8Array(passkey.public_key),
        counter: passkey.counter,
        transports: passkey.transports,
      },
      requireUserVerification: true,
    }).then(
      (v) => (v.verified && handleOk ? v.authenticationInfo : undefined),
      (err: unknown) => void ctx.log.info({ err }, "passkey sign-in refused"),
    );
    if (!verified) {
      await passkeyFailed("invalid_signature", remote, { operatorId });
      throw badPasskey();
    }
    const r = await events.tx(async (db, emit) => {
      const o = await operatorsDb.byId(db, operatorId);
      if (!o?.active) return undefined;
      if (ssoRequired(c.deps.config.auth, o)) return "sso_required" as const;
      // False when the passkey was removed meanwhile: no session may outlive its removal.
      if (!(await passkeysDb.markUsed(db, passkey.id, verified.newCounter, verified.credentialBackedUp, clock.now()))) {
        return "removed" as const;
      }
      const session = await openSession(db, emit, o, {
        via: "passkey",
        remoteAddress: remote,
        passkeyId: passkey.id,
      });
      return { session, operator: o };
    });
    if (r === "sso_required") {
      await passkeyFailed("sso_required", remote, { operatorId, credential: parsed.credentialId });
      throw ssoRequiredError();
    }
    if (r === "removed") {
      await passkeyFailed("unknown_passkey", remote, { operatorId, credential: parsed.credentialId });
      throw badPasskey();
    }
    if (!r) {
      await passkeyFailed("unknown_operator", remote, { operatorId, credential: parsed.credentialId });
      throw unknownOperator();
    }
    return { ...r.session, operator: toOperator(r.operator) };
  };
}
