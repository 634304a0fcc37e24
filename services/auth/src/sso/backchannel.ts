// OIDC Back-Channel Logout 1.0: the provider posts a signed logout token; a valid one ends every
// session of the operator it names at once (the operator stays active: it may sign in again).
import type { SsoService } from "@orch/contracts";
import { invalid, SYSTEM_ACTOR, type Handlers } from "@orch/kit";
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from "jose";
import { sessionsDb } from "../db/sessions.js";
import { publishRevocation } from "./access.js";
import type { SsoContext } from "./context.js";
import { identitiesDb, type IdentityRow } from "./identities-db.js";
import type { ProviderRow } from "./providers-db.js";

type BackchannelHandlers = Pick<Handlers<typeof SsoService>, "backchannelLogout">;

const LOGOUT_EVENT = "http://schemas.openid.net/event/backchannel-logout";

const badToken = (why: string) => invalid("invalid_logout_token", `the logout token is invalid: ${why}`);

/** The claims a logout token must (and must not) carry, beyond the signature, iss, aud and iat. */
function checkLogoutClaims(payload: JWTPayload): { sub?: string; sid?: string } {
  const events = payload.events;
  if (!events || typeof events !== "object" || !(LOGOUT_EVENT in events))
    throw badToken("no back-channel logout event");
  // A nonce would make it an ID token: the spec forbids it so one cannot pass for the other.
  if ("nonce" in payload) throw badToken("it carries a nonce");
  const sub = typeof payload.sub === "string" && payload.sub !== "" ? payload.sub : undefined;
  const sid = typeof payload.sid === "string" && payload.sid !== "" ? payload.sid : undefined;
  if (!sub && !sid) throw badToken("it names neither sub nor sid");
  return { ...(sub ? { sub } : {}), ...(sid ? { sid } : {}) };
}

export function backchannelHandlers(c: SsoContext): BackchannelHandlers {
  const { pool, events, nc } = c.deps;
  const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();
  const keySet = (uri: string) => {
    let set = keySets.get(uri);
    if (!set) keySets.set(uri, (set = createRemoteJWKSet(new URL(uri))));
    return set;
  };

  async function verify(p: ProviderRow, token: string) {
    const meta = (await c.configFor(p)).serverMetadata();
    if (!meta.jwks_uri) throw badToken("the provider publishes no keys");
    // Only asymmetric signatures: `none` proves nothing and an HS* key would be the client secret.
    const algorithms = (meta.id_token_signing_alg_values_supported ?? ["RS256"]).filter(
      (a) => a !== "none" && !a.startsWith("HS"),
    );
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keySet(meta.jwks_uri), {
        issuer: meta.issuer,
        audience: p.client_id,
        algorithms,
        requiredClaims: ["iat", "jti", "events"],
        maxTokenAge: "10m",
        clockTolerance: 60,
      }));
    } catch (err) {
      throw badToken(err instanceof Error ? err.message : "verification failed");
    }
    return checkLogoutClaims(payload);
  }

  return {
    async backchannelLogout(req) {
      c.requireRing();
      const p = await c.provider(pool, req.provider);
      const who = await verify(p, req.logoutToken);
      const ended: string[] = [];
      const count = await events.tx(async (db, emit) => {
        const found: IdentityRow[] = who.sub
          ? [await identitiesDb.bySubject(db, p.id, who.sub)].filter((i): i is IdentityRow => i !== undefined)
          : await identitiesDb.bySid(db, p.id, who.sid ?? "");
        let total = 0;
        for (const identity of found) {
          const n = await sessionsDb.removeOperatorTokens(db, identity.operator_id);
          const o = await db.query<{ name: string }>("SELECT name FROM operators WHERE id = $1", [
            identity.operator_id,
          ]);
          const name = o.rows[0]?.name ?? identity.operator_id;
          await emit({
            type: "auth.sso.logout",
            summary: `${name} signed out by ${p.name} (back-channel logout): ${n} session(s) ended`,
            actor: SYSTEM_ACTOR,
            target: { id: identity.operator_id, name, type: "operator" },
            metadata: { provider: p.name, sessions_ended: n, ...(who.sid ? { sid: who.sid } : {}) },
          });
          ended.push(identity.operator_id);
          total += n;
        }
        return total;
      });
      for (const id of ended) publishRevocation(nc, id);
      return { sessionsEnded: count };
    },
  };
}
