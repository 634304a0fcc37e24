import { fileURLToPath } from "node:url";
import { create, toBinary, type JsonObject } from "@bufbuild/protobuf";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { AuditEventSchema, type AuditEvent } from "@orch/contracts";
import { ensureAuditStream, systemClock, type Clock, type NatsConnection } from "@orch/kit";
import { serviceDeps, type DbHandle, type NatsHandle } from "@orch/kit/testing";
import { monotonicFactory, ulid } from "ulid";
import { auditConfigSchema } from "../src/config.js";
import { createAuditService } from "../src/service.js";

export const AUDIT_MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));

/**
 * One in-process audit service on the test NATS and database: short ack wait for redelivery tests,
 * and no scheduled retention run (tests call svc.runRetention()).
 */
export async function startAudit(
  nats: NatsHandle,
  db: DbHandle,
  o: { audit?: Record<string, unknown>; clock?: Clock } = {},
) {
  const deps = await serviceDeps({
    name: "audit",
    nats,
    db,
    schema: "audit",
    migrations: AUDIT_MIGRATIONS,
    clock: o.clock ?? systemClock,
    config: auditConfigSchema.parse({
      audit: { ack_wait_ms: 2000, prune_start_delay_seconds: 86_400, prune_interval_minutes: 1440, ...(o.audit ?? {}) },
    }),
  });
  const svc = await createAuditService(deps);
  return {
    deps,
    svc,
    async stop() {
      await svc.stop();
      await deps.close();
    },
  };
}

export interface EventSpec {
  type?: string;
  /** Unix ms; defaults to now. */
  at?: number;
  actor?: { id: string; name: string; type: string };
  target?: { id: string; name: string; type: string };
  metadata?: JsonObject;
  summary?: string;
  severity?: string;
}

/**
 * Builds AuditEvents the way the kit does: the ULID carries the timestamp (monotonic within a
 * millisecond; a plain ULID for times earlier than the last one, where the monotonic factory
 * would keep the later time).
 */
export function eventFactory() {
  const next = monotonicFactory();
  let last = 0;
  return (s: EventSpec = {}): AuditEvent => {
    const at = s.at ?? Date.now();
    const id = at >= last ? next(at) : ulid(at);
    last = Math.max(last, at);
    return create(AuditEventSchema, {
      id,
      timestamp: new Date(at).toISOString(),
      eventType: s.type ?? "operator.created",
      severity: s.severity ?? "info",
      summary: s.summary ?? "test event",
      actor: s.actor ?? { id: "system", name: "system", type: "system" },
      target: s.target ?? { id: "t1", name: "thing", type: "thing" },
      metadata: s.metadata ?? {},
    });
  };
}

/** Publishes events on the AUDIT stream as an outbox relay would (Nats-Msg-Id = id). */
export async function publisher(nc: NatsConnection) {
  await ensureAuditStream(nc, { replicas: 1, maxAgeDays: 1 });
  const js: JetStreamClient = jetstream(nc, { timeout: 10_000 });
  return async (events: AuditEvent[], concurrency = 200) => {
    for (let i = 0; i < events.length; i += concurrency) {
      await Promise.all(
        events
          .slice(i, i + concurrency)
          .map((e) => js.publish(`audit.${e.eventType}`, toBinary(AuditEventSchema, e), { msgID: e.id })),
      );
    }
  };
}

export async function countRows(db: {
  query: (q: string) => Promise<{ rows: Array<{ n: number }> }>;
}): Promise<number> {
  return Number((await db.query("SELECT count(*)::int AS n FROM events")).rows[0]?.n ?? 0);
}
