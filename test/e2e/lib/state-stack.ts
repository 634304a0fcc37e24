// The stack the state end-to-end tests share: auth, agents, secrets, state and gateway as real
// processes, a pool of real orch-agents dialling the agent link, and a scratch directory.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, startNats, startSystem, type TestOwner } from "@orch/kit/testing";
import { agentPool } from "../../../services/agents/test/harness.js";

export interface StateStackOptions {
  /** Names the scratch directory (`orch-e2e-<name>-…`). */
  name: string;
  /** Byte the secrets key is filled with, so each file's ciphertexts differ. */
  keyByte?: number;
  /** Extra or overriding service environment (drift, sweep and timeout intervals). */
  env?: Record<string, string>;
  /** Services besides auth, agents, secrets, state and gateway (e.g. audit, to read events back). */
  extraServices?: string[];
}

/**
 * Everything is torn down with `owner` (tap's `t`), each part's stop registered before it starts,
 * so a start-up that fails leaks nothing: the agents first (they hold links), then the services,
 * the database and NATS.
 */
export async function startStateStack(owner: TestOwner, o: StateStackOptions) {
  const dir = mkdtempSync(join(tmpdir(), `orch-e2e-${o.name}-`));
  owner.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const nats = await startNats({ owner });
  const db = await createTestDatabase({ owner });
  const system = await startSystem({
    owner,
    nats,
    db,
    services: ["auth", "agents", "secrets", ...(o.extraServices ?? []), "state", "gateway"],
    env: {
      ORCH_AGENTS_LINK_HOST: "127.0.0.1",
      ORCH_SECRETS_KEYS: `k1:${Buffer.alloc(32, o.keyByte ?? 9).toString("base64")}`,
      ORCH_STATE_DRIFT_INTERVAL_SECONDS: "0",
      ...o.env,
    },
  });
  const agents = agentPool();
  owner.teardown(() => agents.stop());
  return { nats, db, linkPort: system.linkPort, system, agents, dir };
}
