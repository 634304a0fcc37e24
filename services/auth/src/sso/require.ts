import { forbidden } from "@orch/kit";
import type { AuthConfig } from "../config.js";
import type { OperatorRow } from "../db/operators.js";

/**
 * `auth.require_sso_for_roles`: an operator of a listed role without an SSO identity may not sign
 * in with a key, a login code or a passkey, unless it is a break-glass operator
 * (`auth.break_glass_operators`, the bootstrap admin by default) so SSO cannot lock everyone out.
 */
export function ssoRequired(auth: AuthConfig["auth"], o: Pick<OperatorRow, "role" | "name" | "sso_source">): boolean {
  if (o.sso_source) return false;
  if (!auth.require_sso_for_roles.includes(o.role)) return false;
  return !auth.break_glass_operators.includes(o.name);
}

export const ssoRequiredError = () =>
  forbidden("sso_required", "operators of this role sign in through single sign-on (`orchctl login --sso`)");
