// Who may publish and subscribe to what on the bus: the one source for deploy/nats/accounts.conf,
// deploy/nats/local.conf and the NATS ConfigMap in deploy/k8s/components/nats. Edit this file,
// then run `node deploy/nats/generate.mjs` (test/deploy/nats-permissions.test.ts fails while the
// generated files are stale).
//
// Vocabulary (each list holds NATS subject patterns):
//   serves     RPC subjects the service answers (queue group = service name). Gives subscribe
//              permission and `allow_responses`, so it may publish exactly one reply to each
//              request it received, wherever the reply subject points.
//   requests   subjects it may send requests to. Gives publish permission and a subscription on
//              the reply inbox.
//   publish / subscribe   plain (non-request) traffic: broadcasts, terminal streams.
//   deny       explicit refusals, checked before any allow (a safety net for wildcards above).
//   jetstream  roles on the AUDIT stream, expanded by JETSTREAM_ROLES below.

/** The services of the fleet orchestrator, one NATS user each (user name = service name). */
export const SERVICES = ["gateway", "auth", "agents", "state", "secrets", "notify", "audit", "terminal"];

/**
 * Reply inbox of a service: the kit connects with `inboxPrefix: _INBOX_<service>`, so one service
 * can never read the replies meant for another (e.g. Resolve replies carrying secret values).
 */
export const INBOX = (service) => `_INBOX_${service}.>`;

/** The JetStream stream that captures every audit event. */
export const AUDIT_STREAM = "AUDIT";

const rpc = (service, method = "*") => `orch.${service}.${method}`;
const AGENT_LINK = "orch.agent.*.>"; // orch.agent.<node_id>.<Method>, served by the agents replica holding the link
const TERMINAL_DATA = "orch.term.>"; // orch.term.<session_id>.{in,out,ctl}
const REVOKED = "orch.auth.revoked"; // token revocation broadcast
const STATE_PROGRESS = "orch.state.progress.*"; // per-resource progress an agent publishes during an operation
const RUN_PROGRESS = "orch.state.runs.*"; // assignment-run progress state announces to the gateway's run streams (packages/contracts/src/run-progress.ts)
const COMMAND_OUTPUT = "orch.state.output.*"; // fleet command output chunks an agent publishes while its job runs (packages/contracts/src/rules/commands.ts)
const COMMAND_RUNS = "orch.state.commands.*"; // fleet command run events state announces to the gateway's run streams
const AUDIT_FEED = "orch.audit.feed.events"; // stored events announced by audit to the gateway's live tails (GET /audit/stream)

/**
 * JetStream API subjects per role, narrowed to the AUDIT stream (no user may delete or purge
 * streams, or touch any other stream).
 */
export const JETSTREAM_ROLES = {
  // Outbox relays: ensure the stream exists (INFO/CREATE/UPDATE) and publish events (PubAck
  // arrives on the inbox).
  "audit-publisher": {
    publish: [
      "$JS.API.INFO",
      `$JS.API.STREAM.INFO.${AUDIT_STREAM}`,
      `$JS.API.STREAM.CREATE.${AUDIT_STREAM}`,
      `$JS.API.STREAM.UPDATE.${AUDIT_STREAM}`,
      "audit.>",
    ],
    subscribe: [],
  },
  // Durable consumers on AUDIT: create or look up their consumer, pull (MSG.NEXT) and ack.
  // Deleting consumers stays an operator action.
  "audit-consumer": {
    publish: [
      "$JS.API.INFO",
      `$JS.API.STREAM.INFO.${AUDIT_STREAM}`,
      `$JS.API.CONSUMER.CREATE.${AUDIT_STREAM}`,
      `$JS.API.CONSUMER.CREATE.${AUDIT_STREAM}.>`,
      `$JS.API.CONSUMER.DURABLE.CREATE.${AUDIT_STREAM}.*`,
      `$JS.API.CONSUMER.INFO.${AUDIT_STREAM}.*`,
      `$JS.API.CONSUMER.MSG.NEXT.${AUDIT_STREAM}.*`,
      `$JS.API.CONSUMER.NAMES.${AUDIT_STREAM}`,
      `$JS.API.CONSUMER.LIST.${AUDIT_STREAM}`,
      // No `$JS.ACK.AUDIT.>` here: an ack is the reply to a delivered message, allowed once by the
      // consumer's allow_responses. nats-server records every delivered reply subject for a user with
      // allow_responses and forgets it only when that permission is used; an explicit ack right left
      // each record until it expired (2 min), and past 4,096 records every delivery walked them all
      // (ingest fell from 26,000 to 3,700 events/s in bench/audit.ts).
    ],
    subscribe: [],
    /** Acks go out as responses (allow_responses), never by an explicit right. */
    responses: true,
  },
};

/** Every service except the gateway persists changes and so relays audit events. */
const writer = ["audit-publisher"];

/** @type {Record<string, {serves: string[], requests: string[], publish: string[], subscribe: string[], deny: {publish: string[], subscribe: string[]}, jetstream: string[], note: string}>} */
export const USERS = {
  gateway: {
    note: "public API: requests every service, never secret values, never writes audit events",
    serves: [rpc("gateway", "_ping")],
    requests: SERVICES.filter((s) => s !== "gateway").map((s) => rpc(s)),
    publish: [TERMINAL_DATA],
    subscribe: [TERMINAL_DATA, REVOKED, AUDIT_FEED, RUN_PROGRESS, COMMAND_RUNS],
    // Secrets are resolved only for the state service; revocations come only from auth; audit
    // events only from the services that made the change.
    // Change requests are submitted and executed only by the services that hold and run them.
    deny: {
      publish: [
        rpc("secrets", "Resolve"),
        rpc("auth", "SubmitChangeRequest"),
        rpc("auth", "SyncSourcePolicies"),
        rpc("state", "ExecuteChangeRequest"),
        rpc("state", "ReplanChangeRequest"),
        rpc("terminal", "ExecuteChangeRequest"),
        rpc("secrets", "ExecuteChangeRequest"),
        REVOKED,
        "audit.>",
        "$JS.>",
      ],
      subscribe: [],
    },
    jetstream: [],
  },
  auth: {
    note: "operators, challenges, tokens, approvals; broadcasts revocations; executes and re-plans change requests",
    serves: [rpc("auth", ">")],
    requests: [
      rpc("state", "ExecuteChangeRequest"),
      rpc("state", "ReplanChangeRequest"),
      rpc("terminal", "ExecuteChangeRequest"),
      rpc("secrets", "ExecuteChangeRequest"),
    ],
    publish: [REVOKED],
    subscribe: [],
    deny: { publish: [], subscribe: [] },
    jetstream: writer,
  },
  agents: {
    note: "agent registry and the gRPC links; serves per-agent subjects for the links it holds and relays their terminal bytes",
    serves: [rpc("agents", ">"), AGENT_LINK],
    // Reaching an agent held by another replica (approve, remove, tags) goes through its subject.
    requests: [AGENT_LINK],
    publish: [TERMINAL_DATA, STATE_PROGRESS, COMMAND_OUTPUT],
    subscribe: [TERMINAL_DATA],
    deny: { publish: [], subscribe: [] },
    jetstream: writer,
  },
  state: {
    note: "modules, assignments, operations; resolves secrets for templates",
    serves: [rpc("state", ">")],
    requests: [
      rpc("secrets", "Resolve"),
      AGENT_LINK,
      rpc("agents", ">"),
      rpc("notify", "GetMaintenanceStatus"),
      rpc("auth", "EvaluateApproval"),
      rpc("auth", "SubmitChangeRequest"),
      // A git source's approval-policies/ (docs/approvals.md#policies-from-git).
      rpc("auth", "SyncSourcePolicies"),
    ],
    publish: [RUN_PROGRESS, COMMAND_RUNS],
    subscribe: [COMMAND_OUTPUT],
    deny: { publish: [], subscribe: [] },
    jetstream: writer,
  },
  secrets: {
    note: "encrypted secrets; the only responder on orch.secrets.Resolve",
    serves: [rpc("secrets", ">")],
    // Secret writes a policy holds are submitted as change requests (docs/approvals.md).
    requests: [rpc("agents", "GetAgent"), rpc("auth", "EvaluateApproval"), rpc("auth", "SubmitChangeRequest")],
    publish: [],
    subscribe: [],
    deny: { publish: [], subscribe: [] },
    jetstream: writer,
  },
  notify: {
    note: "notifications and channel deliveries from the AUDIT stream",
    serves: [rpc("notify", ">")],
    requests: [rpc("auth", "ListOperators")],
    publish: [],
    subscribe: [],
    deny: { publish: [], subscribe: [] },
    jetstream: [...writer, "audit-consumer"],
  },
  audit: {
    note: "stores the AUDIT stream in Postgres, prunes by retention",
    serves: [rpc("audit", ">")],
    requests: [],
    publish: [AUDIT_FEED],
    subscribe: [],
    deny: { publish: [], subscribe: [] },
    jetstream: [...writer, "audit-consumer"],
  },
  terminal: {
    note: "terminal sessions: asks agents for a PTY, records the byte streams",
    serves: [rpc("terminal", ">")],
    // GetAgent: a scoped operator's agent is looked up in the registry, which owns the tags the
    // scope selects on (services/terminal/src/handlers/scope.ts).
    // Terminal opens a policy holds are submitted as change requests (docs/approvals.md).
    requests: [
      AGENT_LINK,
      rpc("agents", "GetAgent"),
      rpc("auth", "EvaluateApproval"),
      rpc("auth", "SubmitChangeRequest"),
    ],
    publish: [TERMINAL_DATA],
    subscribe: [TERMINAL_DATA],
    deny: { publish: [], subscribe: [] },
    jetstream: writer,
  },
};
