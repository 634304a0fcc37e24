import type { AuthService } from "@orch/contracts";
import { forbidden, notFound, unauthenticated, type CallContext, type Handlers } from "@orch/kit";
import { consoleSessionOpener } from "../console-session.js";
import { operatorsDb, type OperatorRow } from "../db/operators.js";
import { passkeysDb, type ChallengePurpose } from "../db/passkeys.js";
import type { AuthDeps } from "../deps.js";
import { loginFailureRecorder } from "../login-failures.js";

export type PasskeyHandlers = Pick<
  Handlers<typeof AuthService>,
  | "beginPasskeyRegistration"
  | "finishPasskeyRegistration"
  | "listPasskeys"
  | "removePasskey"
  | "beginPasskeyLogin"
  | "finishPasskeyLogin"
>;

export const badChallenge = () =>
  unauthenticated("invalid_webauthn_challenge", "the WebAuthn challenge is unknown, used or expired; start again");
export const badPasskey = () =>
  unauthenticated("invalid_passkey", "the passkey is not registered or its signature does not verify");
export const unknownOperator = () => unauthenticated("unknown_operator", "unknown or inactive operator");

// The gateway enforces who may reach which route; the service checks again so a bus caller cannot skip it.
export function requireSelfOrAdmin(ctx: CallContext, op: OperatorRow) {
  if (ctx.actor.type === "system" || ctx.actor.role === "admin" || ctx.actor.id === op.id) return;
  throw forbidden("permission_denied", "only the operator itself or an admin may do this");
}

/** Registration binds a credential to the caller: an admin registering for someone else could sign in as them. */
export function requireSelf(ctx: CallContext, op: OperatorRow) {
  if (ctx.actor.type === "system" || ctx.actor.id === op.id) return;
  throw forbidden("permission_denied", "a passkey can only be registered by its own operator");
}

/** What the passkey RPCs share. */
export interface PasskeyContext {
  deps: AuthDeps;
  challengeTtlMs: number;
  operator(idOrName: string): Promise<OperatorRow>;
  /** Consumes the challenge the browser signed; refuses one that is unknown, expired or not this ceremony's. */
  takeChallenge(challenge: string, purpose: ChallengePurpose, operatorId: string | null): Promise<boolean>;
  passkeyFailed(
    reason: string,
    remoteAddress: string,
    o: { operatorId?: string; credential?: string },
  ): ReturnType<ReturnType<typeof loginFailureRecorder>>;
  openSession: ReturnType<typeof consoleSessionOpener>;
}

export function passkeyContext(deps: AuthDeps): PasskeyContext {
  const { pool, events, clock, config } = deps;
  const recordFailure = loginFailureRecorder({
    events,
    clock,
    windowMs: config.auth.login_failure_window_seconds * 1000,
  });
  return {
    deps,
    challengeTtlMs: config.auth.webauthn_challenge_ttl_seconds * 1000,
    async operator(idOrName) {
      const op = await operatorsDb.byIdOrName(pool, idOrName);
      if (!op) throw notFound("operator_not_found", `no operator '${idOrName}'`);
      return op;
    },
    async takeChallenge(challenge, purpose, operatorId) {
      const ch = await passkeysDb.takeChallenge(pool, challenge);
      return ch !== undefined && ch.purpose === purpose && ch.operator_id === operatorId && ch.expires_at > clock.now();
    },
    passkeyFailed: (reason, remoteAddress, o) => recordFailure({ reason, method: "passkey", remoteAddress, ...o }),
    openSession: consoleSessionOpener(deps),
  };
}
