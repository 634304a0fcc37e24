import { createHash, randomBytes } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { RevocationSchema, type AuthService } from "@orch/contracts";
import { unauthenticated, type Handlers } from "@orch/kit";
import { operatorsDb } from "../db/operators.js";
import { sessionsDb } from "../db/sessions.js";
import { normaliseKey, publicKeyObject, verifySignature } from "../keys.js";
import { loginFailureRecorder } from "../login-failures.js";
import { toOperator } from "../convert.js";
import { grantsDb } from "../approvals/grants-db.js";
import { ssoRequired, ssoRequiredError } from "../sso/require.js";
import type { AuthDeps } from "../deps.js";

export const REVOCATION_SUBJECT = "orch.auth.revoked";
export const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

/**
 * A new bearer secret (a session token or a console login code): 32 random bytes, base64url. Only
 * its hash is ever stored, so a database dump opens no session.
 */
export function newSecret(): { value: string; hash: string } {
  const value = randomBytes(32).toString("base64url");
  return { value, hash: hashToken(value) };
}

// One answer for unknown and inactive operators: which of the two is the admins' business.
const unknownOperator = () => unauthenticated("unknown_operator", "unknown or inactive operator");
const badNonce = () =>
  unauthenticated("invalid_nonce", "the nonce is unknown, used or expired; request a new challenge");
const badSignature = () => unauthenticated("invalid_signature", "the signature does not verify with this public key");

type LoginHandlers = Pick<Handlers<typeof AuthService>, "challenge" | "verify" | "authenticate" | "logout">;

export function loginHandlers(deps: AuthDeps): LoginHandlers {
  const { pool, events, clock, config, nc } = deps;
  const windowMs = config.auth.login_failure_window_seconds * 1000;
  const recordFailure = loginFailureRecorder({ events, clock, windowMs });
  const loginFailed = (reason: string, publicKey: string, remoteAddress: string) =>
    recordFailure({ reason, publicKey, remoteAddress });

  return {
    async challenge(req) {
      const publicKey = normaliseKey(req.publicKey);
      publicKeyObject(publicKey);
      const op = await operatorsDb.byKey(pool, publicKey);
      // Refused outright (seed API): a public key is public, so saying it opens no account hides
      // nothing worth hiding, and no nonce is stored for keys nobody holds. Anyone can cause this at
      // will, so it is audited at info and notifies nobody (loginFailureRecorder); the gateway's
      // per-address sign-in budget bounds how fast.
      if (!op?.active) {
        await loginFailed("unknown_operator", publicKey, req.remoteAddress);
        throw unknownOperator();
      }
      const nonce = randomBytes(32).toString("hex");
      const expiresAt = clock.now() + config.auth.challenge_ttl_seconds * 1000;
      await sessionsDb.addChallenge(pool, nonce, publicKey, expiresAt);
      return { nonce, expiresAt };
    },

    async verify(req) {
      const publicKey = normaliseKey(req.publicKey);
      const now = clock.now();
      const ch = await sessionsDb.takeChallenge(pool, req.nonce.toLowerCase());
      // The signature is judged first, so a caller without the private key learns nothing about the
      // nonce it presents (whether it is live, used or another key's).
      if (!verifySignature(publicKey, Buffer.from(req.nonce, "hex"), req.signature)) {
        await loginFailed("invalid_signature", publicKey, req.remoteAddress);
        throw badSignature();
      }
      if (!ch || ch.public_key !== publicKey || ch.expires_at < now) {
        await loginFailed(ch && ch.expires_at < now ? "expired_nonce" : "invalid_nonce", publicKey, req.remoteAddress);
        throw badNonce();
      }
      const { value: token, hash } = newSecret();
      const expiresAt = now + config.auth.token_ttl_hours * 3_600_000;
      const op = await events.tx(async (db, emit) => {
        const o = await operatorsDb.byKey(db, publicKey);
        if (!o?.active) return undefined;
        if (ssoRequired(config.auth, o)) return "sso_required" as const;
        await sessionsDb.addToken(db, hash, o.id, now, expiresAt);
        const actor = { id: o.id, name: o.name, type: "operator" };
        await emit({
          type: "auth.login.succeeded",
          summary: `${o.name} logged in`,
          actor,
          target: actor,
          metadata: { remote_address: req.remoteAddress, expires_at: new Date(expiresAt).toISOString() },
        });
        return o;
      });
      if (!op || op === "sso_required") {
        await loginFailed(op ?? "unknown_operator", publicKey, req.remoteAddress);
        throw op ? ssoRequiredError() : unknownOperator();
      }
      return { token, expiresAt, operator: toOperator(op) };
    },

    async authenticate(req) {
      const row = req.token ? await sessionsDb.principal(pool, hashToken(req.token), clock.now()) : undefined;
      if (!row) throw unauthenticated("invalid_token", "the token is invalid, expired or revoked");
      return {
        operator: toOperator(row, await grantsDb.activeFor(pool, row.id, clock.now())),
        expiresAt: row.expires_at,
      };
    },

    async logout(req, ctx) {
      const hash = hashToken(req.token);
      await events.tx(async (db, emit) => {
        await sessionsDb.removeToken(db, hash);
        await emit({
          type: "auth.logout",
          summary: `${ctx.actor.name} logged out`,
          actor: ctx.actor,
          target: { id: ctx.actor.id, name: ctx.actor.name, type: "operator" },
        });
      });
      // The owner lets gateways also end that operator's connections opened without a known token.
      const revocation = create(RevocationSchema, { tokenHash: hash, tokenOperatorId: ctx.actor.id });
      nc.publish(REVOCATION_SUBJECT, toBinary(RevocationSchema, revocation));
      return {};
    },
  };
}
