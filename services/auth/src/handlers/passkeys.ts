import { create, toBinary } from "@bufbuild/protobuf";
import { RevocationSchema, type AuthService } from "@orch/contracts";
import { conflict, forbidden, invalid, notFound, unauthenticated, type CallContext, type Handlers } from "@orch/kit";
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { consoleSessionOpener } from "../console-session.js";
import { operatorsDb, type OperatorRow } from "../db/operators.js";
import { passkeysDb, type ChallengePurpose } from "../db/passkeys.js";
import { toOperator } from "../convert.js";
import type { AuthDeps } from "../deps.js";
import { loginFailureRecorder } from "../login-failures.js";
import { parseWebAuthnResponse, passkeyName, requireRp, toPasskey } from "../webauthn.js";
import { REVOCATION_SUBJECT } from "./login.js";

type PasskeyHandlers = Pick<
  Handlers<typeof AuthService>,
  | "beginPasskeyRegistration"
  | "finishPasskeyRegistration"
  | "listPasskeys"
  | "removePasskey"
  | "beginPasskeyLogin"
  | "finishPasskeyLogin"
>;

const badChallenge = () =>
  unauthenticated("invalid_webauthn_challenge", "the WebAuthn challenge is unknown, used or expired; start again");
const badPasskey = () =>
  unauthenticated("invalid_passkey", "the passkey is not registered or its signature does not verify");
const unknownOperator = () => unauthenticated("unknown_operator", "unknown or inactive operator");

// The gateway enforces who may reach which route; the service checks again so a bus caller cannot skip it.
function requireSelfOrAdmin(ctx: CallContext, op: OperatorRow) {
  if (ctx.actor.type === "system" || ctx.actor.role === "admin" || ctx.actor.id === op.id) return;
  throw forbidden("permission_denied", "only the operator itself or an admin may do this");
}

/** Registration binds a credential to the caller: an admin registering for someone else could sign in as them. */
function requireSelf(ctx: CallContext, op: OperatorRow) {
  if (ctx.actor.type === "system" || ctx.actor.id === op.id) return;
  throw forbidden("permission_denied", "a passkey can only be registered by its own operator");
}

export function passkeyHandlers(deps: AuthDeps): PasskeyHandlers {
  const { pool, events, clock, config, ids, nc } = deps;
  const challengeTtlMs = config.auth.webauthn_challenge_ttl_seconds * 1000;
  const recordFailure = loginFailureRecorder({
    events,
    clock,
    windowMs: config.auth.login_failure_window_seconds * 1000,
  });
  const passkeyFailed = (reason: string, remoteAddress: string, o: { operatorId?: string; credential?: string }) =>
    recordFailure({ reason, method: "passkey", remoteAddress, ...o });
  const openSession = consoleSessionOpener(deps);

  const operator = async (idOrName: string) => {
    const op = await operatorsDb.byIdOrName(pool, idOrName);
    if (!op) throw notFound("operator_not_found", `no operator '${idOrName}'`);
    return op;
  };

  /** Consumes the challenge the browser signed; refuses one that is unknown, expired or not this ceremony's. */
  const takeChallenge = async (challenge: string, purpose: ChallengePurpose, operatorId: string | null) => {
    const ch = await passkeysDb.takeChallenge(pool, challenge);
    return ch !== undefined && ch.purpose === purpose && ch.operator_id === operatorId && ch.expires_at > clock.now();
  };

  return {
    async beginPasskeyRegistration(req, ctx) {
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
    },

    async finishPasskeyRegistration(req, ctx) {
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
        if ((err as { code?: string }).code === "23505") {
          throw conflict("passkey_exists", "this authenticator is already registered");
        }
        throw err;
      }
      return toPasskey(row);
    },

    async listPasskeys(req, ctx) {
      const op = await operator(req.operatorId);
      requireSelfOrAdmin(ctx, op);
      return { passkeys: (await passkeysDb.ofOperator(pool, op.id)).map(toPasskey) };
    },

    async removePasskey(req, ctx) {
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
    },

    async beginPasskeyLogin(req) {
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
    },

    async finishPasskeyLogin(req, ctx) {
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
        // False when the passkey was removed meanwhile: no session may outlive its removal.
        if (
          !(await passkeysDb.markUsed(db, passkey.id, verified.newCounter, verified.credentialBackedUp, clock.now()))
        ) {
          return "removed" as const;
        }
        const session = await openSession(db, emit, o, {
          via: "passkey",
          remoteAddress: remote,
          passkeyId: passkey.id,
        });
        return { session, operator: o };
      });
      if (r === "removed") {
        await passkeyFailed("unknown_passkey", remote, { operatorId, credential: parsed.credentialId });
        throw badPasskey();
      }
      if (!r) {
        await passkeyFailed("unknown_operator", remote, { operatorId, credential: parsed.credentialId });
        throw unknownOperator();
      }
      return { ...r.session, operator: toOperator(r.operator) };
    },
  };
}
