import type { SecretsService } from "@orch/contracts";
import type { Handlers } from "@orch/kit";
import { reencryptAll } from "../reencrypt.js";
import type { HandlerContext } from "../deps.js";
import { requireAdmin } from "./access.js";

type ReencryptHandlers = Pick<Handlers<typeof SecretsService>, "reencrypt">;

export function reencryptHandlers({ deps, keyring }: HandlerContext): ReencryptHandlers {
  return {
    async reencrypt(_req, ctx) {
      requireAdmin(ctx);
      const r = await reencryptAll(deps, keyring, ctx.actor);
      return { activeKey: r.activeKey, reencrypted: r.reencrypted, failed: r.failed };
    },
  };
}
