import { buildAsyncApi } from "@orch/contracts";
import { AUDIT_STREAM, auditSubject } from "@orch/kit";
import { route } from "../route.js";
import { AsyncApiOut } from "./asyncapi-schemas.js";

/**
 * The AsyncAPI document of the audit events integrators consume from NATS. Public like the OpenAPI
 * document: it describes the contract, not the deployment's data.
 */
export function asyncApiRoutes() {
  // Built once: it depends only on the catalogue and the descriptors compiled into this process.
  const document = buildAsyncApi({ stream: AUDIT_STREAM, subject: auditSubject });
  return [
    route({
      method: "GET",
      path: "/api/v1/asyncapi.json",
      auth: "public",
      summary: "AsyncAPI document of the audit events on NATS",
      description:
        "The audit event subjects (`audit.<event_type>` on the JetStream stream `AUDIT`), one message per " +
        "event type, payload `orch.v1.AuditEvent` (protobuf). See docs/integrations.md.",
      tags: ["audit"],
      responses: { 200: AsyncApiOut },
      async handler() {
        return document;
      },
    }),
  ];
}
