import { readFileSync } from "node:fs";
import t from "tap";
import { Parser } from "@asyncapi/parser";
import { Ajv } from "ajv";
import { create, toJson } from "@bufbuild/protobuf";
import { AUDIT_FEED_SUBJECT, AuditEventSchema, AuditFeedSchema, buildAsyncApi, EVENT_TYPES } from "@orch/contracts";
import { AUDIT_STREAM, auditSubject } from "@orch/kit";
import { ASYNCAPI_FILE, renderAsyncApi } from "../scripts/gen-asyncapi.ts";

// The AsyncAPI document integrators read the audit event contract from: valid AsyncAPI, complete
// against the catalogue, its schemas true to the protobuf message, and committed as generated.
const committed = readFileSync(ASYNCAPI_FILE, "utf8");
const doc: any = JSON.parse(committed);
const types = Object.keys(EVENT_TYPES);

t.test("the committed asyncapi.json is what the generator writes", async (t) => {
  t.equal(committed, renderAsyncApi(), "run `npm run generate:asyncapi`");
});

t.test("the document is valid AsyncAPI 3.0 (no error diagnostics)", async (t) => {
  const { document, diagnostics } = await new Parser().parse(committed);
  const errors = diagnostics.filter((d) => d.severity === 0).map((d) => `${d.path.join("/")}: ${d.message}`);
  t.same(errors, [], "no errors");
  t.ok(document, "parsed");
  t.equal(document!.version(), "3.0.0");
  const parsed = document!
    .messages()
    .all()
    .map((m) => m.name());
  t.same([...parsed].sort(), [...types, "AuditFeed"].sort(), "one message per catalogue type, and the feed's");
  const op = document!.operations().all();
  t.same(
    op.map((o) => [
      o.action(),
      o
        .channels()
        .all()
        .map((c) => c.address()),
    ]),
    [
      ["receive", [auditSubject("{eventType}")]],
      ["receive", [AUDIT_FEED_SUBJECT]],
    ],
    "integrators only receive: the audit subjects and the live feed",
  );
});

t.test("every catalogue type is a message of the audit channel, with its subject and severity", async (t) => {
  const channel = doc.channels.audit;
  t.equal(channel.address, auditSubject("{eventType}"));
  t.same(channel.parameters.eventType.enum, types);
  t.same(Object.keys(channel.messages), types);
  t.same(Object.keys(doc.components.messages), [...types, "AuditFeed"]);
  t.same(
    doc.operations.consumeAuditEvents.messages.map((m: { $ref: string }) => m.$ref),
    types.map((type) => `#/channels/audit/messages/${type}`),
  );
  for (const [type, { severity }] of Object.entries(EVENT_TYPES)) {
    const m = doc.components.messages[type];
    t.equal(m["x-default-severity"], severity, type);
    t.match(m.description, auditSubject(type), `${type}: subject named`);
    t.equal(m.contentType, "application/x-protobuf");
  }
  t.match(doc.info.description, `stream \`${AUDIT_STREAM}\``);
});

t.test("the live feed: the subject the audit service publishes on, payload AuditFeed", async (t) => {
  t.equal(doc.channels.auditFeed.address, AUDIT_FEED_SUBJECT);
  t.equal(doc.components.messages.AuditFeed.payload.$ref, `#/components/schemas/${AuditFeedSchema.typeName}`);
  t.same(
    Object.keys(doc.components.schemas[AuditFeedSchema.typeName].properties),
    AuditFeedSchema.fields.map((f) => f.name),
  );
  t.match(doc.channels.auditFeed.description, /at most once/i);
});

t.test("the payload schema follows the protobuf descriptor and accepts a real decoded event", async (t) => {
  const schema = doc.components.schemas[AuditEventSchema.typeName];
  t.same(
    Object.keys(schema.properties),
    AuditEventSchema.fields.map((f) => f.name),
    "one property per proto field, in field order",
  );
  t.match(schema.properties.actor, { $ref: "#/components/schemas/orch.v1.Ref", description: String });

  const ajv = new Ajv({ strict: false, formats: { "date-time": true } });
  ajv.addSchema({ ...doc, $id: "asyncapi" });
  const event = create(AuditEventSchema, {
    id: "01JABCDEFGHJKMNPQRSTVWXYZ0",
    timestamp: "2025-01-02T03:04:05.678Z",
    eventType: "operator.created",
    severity: "info",
    summary: "operator alice added",
    actor: { id: "op1", name: "admin", type: "operator" },
    target: { id: "op2", name: "alice", type: "operator" },
    metadata: { role: "operator", nested: { n: 1 } },
  });
  const json = toJson(AuditEventSchema, event, { useProtoFieldName: true });
  const payload = ajv.compile({ $ref: "asyncapi#/components/messages/operator.created/payload" });
  t.ok(payload(json), `valid: ${ajv.errorsText(payload.errors)}`);
  t.notOk(payload({ ...(json as object), event_type: "operator.removed" }), "another type's event is not this message");
  t.notOk(payload({ ...(json as object), severity: "fatal" }), "severity is a closed set");
});

t.test("the generator derives subjects and stream from what it is given", async (t) => {
  const other = buildAsyncApi({ stream: "EVENTS", subject: (s) => `events.${s}` }) as typeof doc;
  t.equal(other.channels.audit.address, "events.{eventType}");
  t.match(other.channels.audit.description, "`EVENTS`");
  t.notMatch(JSON.stringify(other), /audit\.operator\.created/, "no subject hard-coded");
});
