import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import type { Logger } from "@orch/kit";
import { createTestDatabase, ed25519, serviceDeps, startNats } from "@orch/kit/testing";
import { startAgentsService } from "../../agents/test/harness.js";
import { startAudit } from "../../audit/test/harness.js";
import { startNotify } from "../../notify/test/harness.js";
import { startSecrets } from "../../secrets/test/harness.js";
import { stateConfigSchema } from "../../state/src/config.js";
import { createStateService } from "../../state/src/service.js";
import { startTerminal } from "../../terminal/test/harness.js";
import { login, startAuth, startGateway } from "./harness.js";

const STATE_MIGRATIONS = fileURLToPath(new URL("../../state/migrations", import.meta.url));
export const ALL_SERVICES = ["auth", "agents", "audit", "notify", "secrets", "state", "terminal"];

/**
 * Every service in this process on a private NATS and database, behind the real gateway: for
 * tests that walk the whole route table, where a route must reach its real service.
 */
export async function startStack(o: { gatewayLog?: Logger } = {}) {
  const nats = await startNats();
  const db = await createTestDatabase();
  const admin = ed25519();
  const auth = await startAuth(nats, db, admin);
  const agents = await startAgentsService(nats, db);
  const audit = await startAudit(nats, db);
  const notify = await startNotify(nats, db);
  const secrets = await startSecrets(nats, db, `k1:${randomBytes(32).toString("base64")}`);
  const stateDeps = await serviceDeps({
    name: "state",
    nats,
    db,
    schema: "state",
    migrations: STATE_MIGRATIONS,
    config: stateConfigSchema.parse({ state: { drift_interval_seconds: 0 } }),
  });
  const state = await createStateService(stateDeps);
  const terminal = await startTerminal(nats, db);
  const gw = await startGateway(nats, undefined, { services: ALL_SERVICES }, o.gatewayLog ? { log: o.gatewayLog } : {});
  const token = await login(gw.url, admin);
  return {
    nats,
    db,
    admin,
    gw,
    token,
    async stop() {
      await gw.stop();
      await terminal.stop();
      await state.stop();
      await stateDeps.close();
      await secrets.stop();
      await notify.stop();
      await audit.stop();
      await agents.stop();
      await auth.stop();
      await db.drop();
      await nats.stop();
    },
  };
}
