import type { AuthService } from "@orch/contracts";
import { forbidden, unauthenticated, type Handlers } from "@orch/kit";
import { consoleSessionOpener } from "../console-session.js";
import { loginCodesDb } from "../db/login-codes.js";
import { operatorsDb, type OperatorRow } from "../db/operators.js";
import { toOperator } from "../convert.js";
import type { AuthDeps } from "../deps.js";
import { loginFailureRecorder } from "../login-failures.js";
import { ssoRequired, ssoRequiredError } from "../sso/require.js";
import { hashToken, newSecret } from "./login.js";

type LoginCodeHandlers = Pick<Handlers<typeof AuthService>, "createLoginCode" | "exchangeLoginCode">;

type Failure = "invalid_login_code" | "login_code_expired" | "unknown_operator" | "sso_required";
type Outcome =
  | { failure: Failure; operatorId?: string }
  | { failure?: undefined; session: { token: string; expiresAt: number }; operator: OperatorRow };

const refusal = (reason: Failure) =>
  reason === "sso_required"
    ? ssoRequiredError()
    : reason === "invalid_login_code"
      ? unauthenticated(reason, "the login code is unknown or was already used; run `orchctl console` again")
      : reason === "login_code_expired"
        ? unauthenticated(reason, "the login code has expired; run `orchctl console` again")
        : unauthenticated(reason, "unknown or inactive operator");

/** One-time console login links (`orchctl console`): a short-lived code exchanged once for a session. */
export function loginCodeHandlers(deps: AuthDeps): LoginCodeHandlers {
  const { events, clock, config } = deps;
  const recordFailure = loginFailureRecorder({
    events,
    clock,
    windowMs: config.auth.login_failure_window_seconds * 1000,
  });
  const openSession = consoleSessionOpener(deps);

  return {
    async createLoginCode(_req, ctx) {
      if (ctx.actor.type !== "operator") {
        throw forbidden("operator_required", "a login code is issued to the calling operator");
      }
      const { value: code, hash } = newSecret();
      const now = clock.now();
      const expiresAt = now + config.auth.login_code_ttl_seconds * 1000;
      await events.tx(async (db, emit) => {
        const o = await operatorsDb.byId(db, ctx.actor.id);
        if (!o?.active) throw refusal("unknown_operator");
        await loginCodesDb.add(db, hash, o.id, now, expiresAt);
        const actor = { id: o.id, name: o.name, type: "operator" };
        await emit({
          type: "auth.login_code.created",
          summary: `${o.name} asked for a console login link`,
          actor,
          target: actor,
          metadata: { expires_at: new Date(expiresAt).toISOString() },
        });
      });
      return { code, expiresAt };
    },

    async exchangeLoginCode(req) {
      const now = clock.now();
      // The code is deleted in this transaction whatever the outcome: a failed attempt spends it too.
      const r = await events.tx(async (db, emit): Promise<Outcome> => {
        const code = await loginCodesDb.take(db, hashToken(req.code));
        if (!code) return { failure: "invalid_login_code" };
        const operatorId = code.operator_id;
        if (code.expires_at <= now) return { failure: "login_code_expired", operatorId };
        const o = await operatorsDb.byId(db, operatorId);
        if (!o?.active) return { failure: "unknown_operator", operatorId };
        if (ssoRequired(config.auth, o)) return { failure: "sso_required", operatorId };
        const session = await openSession(db, emit, o, { via: "login_code", remoteAddress: req.remoteAddress });
        return { session, operator: o };
      });
      if (r.failure) {
        await recordFailure({
          reason: r.failure,
          method: "login_code",
          operatorId: r.operatorId,
          remoteAddress: req.remoteAddress,
        });
        throw refusal(r.failure);
      }
      return { ...r.session, operator: toOperator(r.operator) };
    },
  };
}
