import t from "tap";
import type { JsonObject } from "@bufbuild/protobuf";
import { AgentStateService } from "@orch/contracts";
import { OrchError, rpcClient, serveRpc, type RpcServer } from "@orch/kit";
import { silentLogger, startNats, eventually } from "@orch/kit/testing";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { AgentError, type AgentHandlers } from "../src/runtime.js";
import { stateFeature } from "../src/state/feature.js";
import { scratch, stubRuntime } from "./state-harness.js";

// Real nats-server; the agent side is stateFeature served with the kit exactly where the link relays
// it (orch.agent.<node_id>.Execute), so the request and the Struct specs/observed cross the bus as protobuf.
const nats = await startNats({ owner: t });
const agentNc = await nats.connect("agent");
const callerNc = await nats.connect("state-service");
const nodeId = "node-nats-test";
const subjectBase = `orch.agent.${nodeId}`;

const { rt, served } = stubRuntime();
rt.publish = (subject, data) => agentNc.publish(subject, data);
await stateFeature(rt);
const handlers = served.get(AgentStateService.typeName) as AgentHandlers<typeof AgentStateService>;
const server: RpcServer = serveRpc({
  nc: agentNc,
  name: "agent",
  service: AgentStateService,
  subjectBase,
  queue: null,
  log: silentLogger(),
  handlers: {
    // As the link does: an AgentError reaches the caller with its code and reason.
    execute: (req, ctx) =>
      handlers.execute(req, { deadline: ctx.deadline }).catch((e: unknown) => {
        throw e instanceof AgentError ? new OrchError(e.code, e.reason, e.message) : e;
      }),
  },
});
// The subscriptions must reach the server before another connection sends to them.
await agentNc.flush();
t.teardown(async () => {
  await server.stop();
});

const client = rpcClient(callerNc, "", AgentStateService, { timeoutMs: 30_000, subjectBase });

t.test(
  "plan then apply over NATS: Struct specs in, results with diffs and Struct observed out, progress published",
  async (t) => {
    const dir = scratch(t);
    const resources: { id: string; module: string; type: string; spec: JsonObject; requires: string[] }[] = [
      {
        id: "conf",
        module: "web",
        type: "file",
        spec: { path: join(dir, "conf"), content: "port=8080\n", mode: "0600" },
        requires: ["web/run"],
      },
      {
        id: "run",
        module: "web",
        type: "exec",
        spec: { command: "echo ready", env: { N: 1 }, timeout_seconds: 10 },
        requires: [],
      },
    ];
    const plan = await client.execute({ operationId: "", mode: "plan", resources, mask: [] });
    t.same(
      plan.results.map((r) => [r.id, r.module, r.type, r.status, r.changed]),
      [
        ["run", "web", "exec", "changed", true],
        ["conf", "web", "file", "changed", true],
      ],
    );
    t.match(plan.results[1]!.diff, /^\+port=8080$/m);
    t.same(plan.results[0]!.observed, { would_run: true });

    const progress: unknown[] = [];
    const sub = callerNc.subscribe("orch.state.progress.01NATSOP", {
      callback: (_e, m) => void progress.push(m.json()),
    });
    t.teardown(() => sub.unsubscribe());
    await callerNc.flush();
    const apply = await client.execute({ operationId: "01NATSOP", mode: "apply", resources, mask: ["8080"] });
    const [run, conf] = apply.results;
    t.equal(run!.stdout, "ready\n");
    t.equal(conf!.status, "changed");
    t.notMatch(conf!.diff, /8080/, "masked on the way back");
    t.equal(readFileSync(join(dir, "conf"), "utf8"), "port=8080\n");
    t.equal(conf!.observed!.mode, "0600");
    t.equal(conf!.observed!.size, 10);
    // Rendered with a secret (the mask): sealed, so no hash of it.
    t.equal(conf!.observed!.sealed, true);
    t.notOk("sha256" in conf!.observed!);
    t.ok(conf!.durationMs > 0);
    await eventually(() => progress.length === 2);
    t.same(progress, [
      { id: "run", module: "web", status: "changed", changed: true },
      { id: "conf", module: "web", status: "changed", changed: true },
    ]);

    const again = await client.execute({
      operationId: "",
      mode: "apply",
      resources: [{ ...resources[0]!, requires: [] }],
      mask: [],
    });
    t.equal(again.results[0]!.status, "ok");
  },
);

t.test("a refused request arrives as an error with its reason", async (t) => {
  const err = await client
    .execute({
      mode: "apply",
      resources: [{ id: "a", module: "m", type: "exec", spec: { command: "true" }, requires: ["m/a"] }],
    })
    .then(
      () => undefined,
      (e: unknown) => e as OrchError,
    );
  t.equal(err?.code, "INVALID_ARGUMENT");
  t.equal(err?.reason, "cyclic_requires");
});
