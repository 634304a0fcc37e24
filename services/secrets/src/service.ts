import { AgentsService, ApprovalService, SecretsService } from "@orch/contracts";
import { rpcClient, serveRpc, withJobLock, type Service } from "@orch/kit";
import { secretsDb } from "./db/secrets.js";
import type { HandlerContext, SecretsDeps } from "./deps.js";
import { changeRequestHandlers } from "./handlers/change-requests.js";
import { reencryptHandlers } from "./handlers/reencrypt.js";
import { resolveHandlers } from "./handlers/resolve.js";
import { secretHandlers } from "./handlers/secrets.js";
import { parseKeyring, type Keyring } from "./keyring.js";
import { reencryptAll } from "./reencrypt.js";

/** Says which stored secrets the keyring cannot open, so a removed key is noticed at start. */
async function checkKeyUsage(deps: SecretsDeps, keyring: Keyring): Promise<void> {
  const usage = await secretsDb.keyUsage(deps.pool);
  const missing = usage.filter((u) => !keyring.has(u.key_id));
  if (missing.length)
    deps.log.error(
      { missing_keys: missing },
      "some secrets are sealed with keys that are not in ORCH_SECRETS_KEYS; they cannot be resolved",
    );
  const stale = usage
    .filter((u) => u.key_id !== keyring.active && keyring.has(u.key_id))
    .reduce((n, u) => n + u.count, 0);
  if (stale)
    deps.log.info(
      { secrets: stale, active_key: keyring.active },
      "secrets sealed with an older key; run `orchctl secrets reencrypt` to move them",
    );
}

export async function createSecretsService(deps: SecretsDeps): Promise<Service> {
  // The config schema has validated the keyring already; this builds the live one.
  const keyring = parseKeyring(deps.config.secrets.keys);
  const timeoutMs = deps.config.nats.request_timeout_ms;
  const agents = rpcClient(deps.nc, "agents", AgentsService, { timeoutMs });
  const approvals = rpcClient(deps.nc, "auth", ApprovalService, { timeoutMs });
  const hc: HandlerContext = { deps, keyring, agents, approvals };
  deps.log.info({ active_key: keyring.active, key_ids: keyring.ids }, "keyring loaded");
  if (deps.config.secrets.reencrypt_on_start) {
    await withJobLock(deps.pool, "secrets.reencrypt", async () => {
      const r = await reencryptAll(deps, keyring);
      deps.log.info(
        { reencrypted: r.reencrypted, failed: r.failed.length, active_key: r.activeKey },
        "re-encryption at start finished",
      );
    });
  }
  await checkKeyUsage(deps, keyring);
  const rpc = serveRpc({
    nc: deps.nc,
    idempotency: deps.idempotency,
    name: "secrets",
    service: SecretsService,
    log: deps.log,
    handlers: {
      ...secretHandlers(hc),
      ...resolveHandlers(hc),
      ...reencryptHandlers(hc),
      ...changeRequestHandlers(hc),
    },
  });
  return {
    async stop() {
      await rpc.stop();
    },
  };
}
