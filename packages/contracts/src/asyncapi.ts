import { EVENT_TYPES, Severities, type EventType } from "./events.js";
import { AUDIT_FEED_SUBJECT } from "./audit-feed.js";
import { AuditFeedSchema } from "./gen/orch/v1/audit_pb.js";
import { AuditEventSchema } from "./gen/orch/v1/common_pb.js";
import { protoJsonSchemas, type JsonSchema } from "./proto-json-schema.js";

/** Version of the event contract below; bump the major when a change would break a consumer. */
export const EVENTS_CONTRACT_VERSION = "1.0.0";

/** Where the events travel; the kit owns both (`AUDIT_STREAM`, `auditSubject`) and passes them in. */
export interface AuditBus {
  /** The JetStream stream that captures every event. */
  stream: string;
  /** The subject of one event type; `subject(">")` is the stream's filter. */
  subject: (eventType: string) => string;
}

const MESSAGE_REF = "#/components/schemas/";
const CONTENT_TYPE = "application/x-protobuf";
const PARAM = "eventType";

/**
 * What the descriptor cannot say about AuditEvent's fields (the .proto comments are not in the
 * embedded descriptor): formats and the closed sets the code enforces. A key naming no field fails
 * generation, so a renamed field cannot leave a stale note behind.
 */
const FIELD_NOTES: Record<string, Record<string, JsonSchema>> = {
  [AuditEventSchema.typeName]: {
    id: { description: "ULID; unique per event, the same on every redelivery.", pattern: "^[0-9A-HJKMNP-TV-Z]{26}$" },
    timestamp: { description: "When the change was made: RFC 3339, milliseconds, UTC.", format: "date-time" },
    event_type: { description: "The catalogue type; the subject's suffix.", enum: Object.keys(EVENT_TYPES) },
    severity: { description: "Usually the type's default severity.", enum: [...Severities] },
    summary: { description: "One-line human summary." },
    actor: { description: "Who did it (type operator, agent or system)." },
    target: { description: "What it was done to (type: the resource kind)." },
    metadata: { description: "google.protobuf.Struct: a JSON object of event-specific fields; never a secret value." },
  },
  "orch.v1.Ref": {
    id: { description: "Identifier (operator id, node id, resource name)." },
    name: { description: "Human-readable name." },
    type: { description: "Kind: operator, agent, system, or the resource kind for targets." },
  },
};

function schemas(): Record<string, JsonSchema> {
  const out = protoJsonSchemas([AuditEventSchema, AuditFeedSchema], MESSAGE_REF);
  for (const [message, notes] of Object.entries(FIELD_NOTES)) {
    const props = out[message]?.properties as Record<string, JsonSchema> | undefined;
    if (!props) throw new Error(`asyncapi: field notes for ${message}, which AuditEvent does not reach`);
    for (const [field, note] of Object.entries(notes)) {
      if (!props[field]) throw new Error(`asyncapi: field notes for ${message}.${field}, which does not exist`);
      props[field] = { ...props[field], ...note };
    }
  }
  out[AuditEventSchema.typeName]!.description =
    "The decoded protobuf message orch.v1.AuditEvent (proto/orch/v1/common.proto), with proto field names. " +
    "On the wire it is protobuf binary; fields with default values are omitted there.";
  out.AuditEventHeaders = {
    type: "object",
    properties: {
      "Nats-Msg-Id": {
        type: "string",
        description: "The event id: the stream drops a re-send of the same event within its duplicate window.",
      },
      traceparent: {
        type: "string",
        description:
          "W3C trace context of the request that caused the event, when tracing is on (OpenTelemetry); continue it to link your processing to that request.",
      },
    },
  };
  return out;
}

function message(bus: AuditBus, type: EventType): JsonSchema {
  const { severity, description } = EVENT_TYPES[type];
  return {
    name: type,
    title: type,
    summary: description,
    description: `Subject \`${bus.subject(type)}\`; default severity ${severity}.`,
    contentType: CONTENT_TYPE,
    tags: [{ name: type.slice(0, type.indexOf(".")) }],
    headers: { $ref: `${MESSAGE_REF}AuditEventHeaders` },
    payload: {
      allOf: [{ $ref: `${MESSAGE_REF}${AuditEventSchema.typeName}` }, { properties: { event_type: { const: type } } }],
    },
    "x-default-severity": severity,
  };
}

/**
 * The AsyncAPI 3.0 document of what integrators may consume from NATS: the audit events on the
 * JetStream stream, one message per catalogue type, and the audit service's live feed of stored
 * events (core NATS). Other `orch.*` subjects (RPC, broadcasts, terminal bytes) are internal and
 * not part of the contract. Pure: same catalogue, same document
 * (packages/contracts/asyncapi.json is its committed output).
 */
export function buildAsyncApi(bus: AuditBus): Record<string, unknown> {
  const types = Object.keys(EVENT_TYPES) as EventType[];
  const channelMessages = Object.fromEntries(types.map((t) => [t, { $ref: `#/components/messages/${t}` }]));
  return {
    asyncapi: "3.0.0",
    info: {
      title: "Orchestrator audit events",
      version: EVENTS_CONTRACT_VERSION,
      description: [
        `Every state change of the fleet orchestrator publishes one \`${AuditEventSchema.typeName}\` on`,
        `\`${bus.subject(`{${PARAM}}`)}\`, captured by the JetStream stream \`${bus.stream}\` (\`${bus.subject(">")}\`).`,
        "Consume it with your own durable pull consumer with explicit ack, filtered as you need",
        `(\`${bus.subject(">")}\`, \`${bus.subject("agent.>")}\`, \`${bus.subject("operator.created")}\`),`,
        "and be idempotent on `id`: a message not acked in time is delivered again with the same id.",
        `Payloads are protobuf binary (\`${CONTENT_TYPE}\`); the schemas describe the decoded message.`,
        `The live feed \`${AUDIT_FEED_SUBJECT}\` announces events once stored (core NATS, at most once);`,
        "other subjects under `orch.` are internal and not part of this contract. For a live tail over HTTP",
        "use `GET /api/v1/audit/stream` (Server-Sent Events; see the OpenAPI document, /api/v1/openapi.json).",
      ].join(" "),
    },
    defaultContentType: CONTENT_TYPE,
    servers: {
      nats: {
        host: "{host}:{port}",
        protocol: "nats",
        description: "The orchestrator's NATS cluster, with JetStream.",
        variables: {
          host: { default: "127.0.0.1", description: "A NATS server of the deployment." },
          port: { default: "4222" },
        },
        security: [{ $ref: "#/components/securitySchemes/natsUser" }],
      },
    },
    channels: {
      audit: {
        address: bus.subject(`{${PARAM}}`),
        title: "Audit events",
        description: [
          `Subjects of the JetStream stream \`${bus.stream}\`. It keeps events by age`,
          "(`nats.audit_stream_max_age_days`, file storage): a consumer stopped for longer misses the oldest.",
        ].join(" "),
        parameters: {
          [PARAM]: {
            description: "The event type; it contains dots (`agent.tags.updated`), so filter with `>`.",
            enum: types,
          },
        },
        messages: channelMessages,
        "x-jetstream-stream": bus.stream,
      },
      auditFeed: {
        address: AUDIT_FEED_SUBJECT,
        title: "Live feed of stored events",
        description: [
          "Core NATS (not captured by any stream): after each batch of events is committed to the audit store,",
          "the audit service publishes them here, in storage order, so they are already visible to",
          "`GET /api/v1/audit`. At most once: a subscriber that is away or slow misses messages, so it is for",
          "live views; anything that must see every event consumes the stream. Subscribing needs a NATS user",
          "allowed to (the gateway's, in the generated permissions).",
        ].join(" "),
        messages: { AuditFeed: { $ref: "#/components/messages/AuditFeed" } },
      },
    },
    operations: {
      consumeAuditEvents: {
        action: "receive",
        channel: { $ref: "#/channels/audit" },
        title: "Consume audit events",
        description: [
          `Create a durable consumer on \`${bus.stream}\` (explicit ack, a filter subject under`,
          `\`${bus.subject(">")}\`), decode each message with the ${AuditEventSchema.typeName} schema, ack after`,
          "processing. The consumer's position survives restarts; deleting the consumer resets it.",
        ].join(" "),
        messages: types.map((t) => ({ $ref: `#/channels/audit/messages/${t}` })),
      },
      followStoredEvents: {
        action: "receive",
        channel: { $ref: "#/channels/auditFeed" },
        title: "Follow stored events live",
        description:
          "Subscribe (no queue group, no ack): each message is one AuditFeed, a batch of events with their storage sequence.",
        messages: [{ $ref: "#/channels/auditFeed/messages/AuditFeed" }],
      },
    },
    components: {
      schemas: schemas(),
      messages: {
        ...Object.fromEntries(types.map((t) => [t, message(bus, t)])),
        AuditFeed: {
          name: "AuditFeed",
          title: "Stored events",
          summary: "A committed batch of events, in storage order.",
          contentType: CONTENT_TYPE,
          payload: { $ref: `${MESSAGE_REF}${AuditFeedSchema.typeName}` },
        },
      },
      securitySchemes: {
        natsUser: {
          type: "userPassword",
          description: "A NATS user allowed to create and pull consumers on the stream (role audit-consumer).",
        },
      },
    },
  };
}
