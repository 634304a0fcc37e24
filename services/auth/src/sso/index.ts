// Single sign-on (docs/sso.md): the SsoService handlers and the refresher, served by the auth service.
import type { SsoService } from "@orch/contracts";
import type { Handlers } from "@orch/kit";
import type { AuthDeps } from "../deps.js";
import { backchannelHandlers } from "./backchannel.js";
import { ssoContext, type SsoContext } from "./context.js";
import { deviceHandlers } from "./handlers-device.js";
import { loginHandlers } from "./handlers-login.js";
import { providerHandlers } from "./handlers-providers.js";
import { startRefresher } from "./refresher-driver.js";

export function ssoHandlers(c: SsoContext): Handlers<typeof SsoService> {
  return {
    ...providerHandlers(c),
    ...loginHandlers(c),
    ...deviceHandlers(c),
    ...backchannelHandlers(c),
  };
}

export {
  backchannelHandlers,
  deviceHandlers,
  loginHandlers as ssoLoginHandlers,
  providerHandlers,
  ssoContext,
  startRefresher,
};
export type { SsoContext };
export function ssoService(deps: AuthDeps) {
  const c = ssoContext(deps);
  return { context: c, handlers: ssoHandlers(c) };
}
