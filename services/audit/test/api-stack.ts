// The audit API tests' stack: NATS, a database, auth, the audit service and the gateway as real
// parts, an admin and an operator (olga) signed in, a publisher of audit events on the bus, and a
// reader of the audit schema. `restartAudit` swaps the audit service for one with another config.
import pg from "pg";
import type { Test } from "tap";
import { createTestDatabase, ed25519, startNats } from "@orch/kit/testing";
import { call, login, startAuth, startGateway } from "../../gateway/test/harness.js";
import { publisher, startAudit } from "./harness.js";

type AuditConfig = Parameters<typeof startAudit>[2];

export async function startAuditApi(t: Test, config: AuditConfig = { audit: { retention_days: 30 } }) {
  const nats = await startNats();
  const db = await createTestDatabase();
  const adminKey = ed25519();
  const auth = await startAuth(nats, db, adminKey);
  let audit = await startAudit(nats, db, config);
  const gw = await startGateway(nats);
  t.teardown(async () => {
    await gw.stop();
    await audit.stop();
    await auth.stop();
    await db.drop();
    await nats.stop();
  });
  const admin = await login(gw.url, adminKey);
  const opKey = ed25519();
  const added = await call(gw.url, "POST", "/api/v1/operators", {
    token: admin,
    body: { name: "olga", public_key: opKey.publicKeyHex },
  });
  if (added.status !== 201) throw new Error(`cannot add an operator: ${added.text}`);
  const operator = await login(gw.url, opKey);
  const nc = await nats.connect("publisher");
  t.teardown(() => nc.close());
  const reader = new pg.Pool({ connectionString: db.url, max: 2, options: "-c search_path=audit" });
  t.teardown(() => reader.end());
  return {
    nats,
    db,
    gw,
    admin,
    operator,
    nc,
    reader,
    publish: await publisher(nc),
    stored: async (id: string) => (await reader.query("SELECT 1 FROM events WHERE id = $1", [id])).rowCount === 1,
    /** The audit service now running (restartAudit replaces it). */
    get audit() {
      return audit;
    },
    async restartAudit(next: AuditConfig) {
      await audit.stop();
      audit = await startAudit(nats, db, next);
    },
  };
}
