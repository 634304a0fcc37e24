import { fileURLToPath } from "node:url";
import { createTestDatabase, ed25519, serviceDeps, startNats } from "@orch/kit/testing";
import { agentsConfigSchema } from "../../agents/src/config.js";
import { createAgentsService } from "../../agents/src/service.js";
import { startAuth, startGateway } from "./harness.js";

/**
 * The real auth and agents services in-process behind the real gateway, on a private NATS and a
 * fresh database: what the agents route tests and the CLI's agents commands run against. `agents`
 * is merged into the agents service's config (the link is plain TCP on a free port).
 */
export async function startAgentsStack(
  o: { agents?: Record<string, unknown>; releases?: Record<string, unknown> } = {},
) {
  const nats = await startNats();
  const db = await createTestDatabase();
  const admin = ed25519();
  const auth = await startAuth(nats, db, admin);
  const agentsDeps = await serviceDeps({
    name: "agents",
    nats,
    db,
    schema: "agents",
    migrations: fileURLToPath(new URL("../../agents/migrations", import.meta.url)),
    config: agentsConfigSchema.parse({
      agents: { link_host: "127.0.0.1", link_port: 0, insecure: true, ...o.agents },
      ...(o.releases ? { releases: o.releases } : {}),
    }),
  });
  const agentsSvc = await createAgentsService(agentsDeps);
  const gw = await startGateway(nats);
  return {
    nats,
    db,
    admin,
    /** The agents service's deps (its pool seeds rows directly). */
    agentsDeps,
    agentsSvc,
    gw,
    /** Stops everything, the gateway first; close what talks to it (simulated links) before. */
    async stop() {
      await gw.stop();
      await agentsSvc.stop();
      await agentsDeps.close();
      await auth.stop();
      await db.drop();
      await nats.stop();
    },
  };
}
