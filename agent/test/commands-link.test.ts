import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AgentCommandService, type CommandOutputChunk, CommandOutputChunkSchema } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import { createTestDatabase, eventually, freePort, startNats, testLinkTls } from "@orch/kit/testing";
import { agentsClient, startAgentsService } from "../../services/agents/test/harness.js";
import { commandsFeature } from "../src/commands/feature.js";
import { createAgent } from "../src/daemon.js";
import { loadOrCreateIdentity } from "../src/identity.js";
import { createAgentLogger } from "../src/log.js";
import { parseOptions, type DaemonOptions } from "../src/options.js";
import type { AgentRuntime, Feature } from "../src/runtime.js";

// RunCommand over real NATS through the real agents service and link to the real agent feature;
// its output chunks reach a bus subscriber only for jobs the link relayed to this agent.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const port = await freePort();
const svc = await startAgentsService(nats, db, { link_port: port });
const nc = await nats.connect("state-service");
const { c, as } = agentsClient(nc);
const dir = mkdtempSync(join(tmpdir(), "orch-agent-cmd-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const log = createAgentLogger("warn", () => {});

let rt: AgentRuntime | undefined;
const capture: Feature = (r) => {
  rt = r;
};
const options = parseOptions(
  ["--server", `127.0.0.1:${port}`, "--data-dir", dir, "--metrics-interval", "3600", "--ca", testLinkTls().caCert],
  {},
) as DaemonOptions;
const identity = loadOrCreateIdentity(dir, log);
const agent = createAgent({ options, identity, log, features: [commandsFeature, capture] });
await agent.start();
t.teardown(async () => {
  await agent.stop();
  await svc.stop();
  await nc.close();
});

const nodeId = identity.nodeId;
await eventually(async () => (await c.getAgent({ id: nodeId }, as).catch(() => undefined))?.connected);
await c.setApproval({ nodeId, status: "approved", name: "cmd-agent" }, as);
const commands = rpcClient(nc, "", AgentCommandService, { timeoutMs: 30_000, subjectBase: `orch.agent.${nodeId}` });
// Each probe gets a short timeout of its own: one that waited out the 30 s above on a starved
// machine would leave the wait no room for a second try once the agent is ready.
const probe = rpcClient(nc, "", AgentCommandService, { timeoutMs: 3000, subjectBase: `orch.agent.${nodeId}` });
await eventually(() => probe.cancelCommand({ jobId: "01WARMUP" }).catch(() => undefined), 20_000);

const seen: Array<{ subject: string; chunk: CommandOutputChunk }> = [];
const sub = nc.subscribe("orch.state.output.>", {
  callback: (_e, m) => void seen.push({ subject: m.subject, chunk: fromBinary(CommandOutputChunkSchema, m.data) }),
});
await nc.flush();
t.teardown(() => sub.unsubscribe());
const text = (job: string, stream: string) =>
  Buffer.concat(
    seen.filter((s) => s.subject === `orch.state.output.${job}` && s.chunk.stream === stream).map((s) => s.chunk.data),
  ).toString("utf8");

t.test("RunCommand through the link: the answer, and its chunks on orch.state.output.<job_id>", async (t) => {
  const r = await commands.runCommand({
    jobId: "01LINKJOBA",
    runId: "01RUN",
    argv: ["sh", "-c", 'printf "héllo\\n"; echo "$WHO" >&2; exit 4'],
    env: { WHO: "ops" },
    timeoutSeconds: 10,
  });
  t.equal(r.exitCode, 4);
  t.equal(Buffer.from(r.stdout).toString(), "héllo\n");
  await eventually(() => text("01LINKJOBA", "stderr") === "ops\n");
  t.equal(text("01LINKJOBA", "stdout"), "héllo\n");
  const seqs = seen.filter((s) => s.chunk.jobId === "01LINKJOBA").map((s) => s.chunk.seq);
  t.same(
    seqs,
    seqs.map((_, i) => i + 1),
  );
});

t.test("a subject for a job never relayed to this agent is refused by the link", async (t) => {
  const chunk = (jobId: string, data: string) =>
    toBinary(
      CommandOutputChunkSchema,
      create(CommandOutputChunkSchema, { jobId, stream: "stdout", data: Buffer.from(data), seq: 99 }),
    );
  // Both frames go through one link in order; had the first been allowed it would arrive first.
  rt!.publish("orch.state.output.01NEVERRELAYED", chunk("01NEVERRELAYED", "forged"));
  rt!.publish("orch.state.output.01LINKJOBA", chunk("01LINKJOBA", "barrier"));
  await eventually(() => seen.some((s) => Buffer.from(s.chunk.data).toString() === "barrier"));
  t.notOk(
    seen.some((s) => s.subject === "orch.state.output.01NEVERRELAYED"),
    "nothing published for the unrelayed job",
  );
  const row = await svc.deps.pool.query("SELECT kind FROM link_grants WHERE node_id = $1 AND ref = $2", [
    nodeId,
    "01LINKJOBA",
  ]);
  t.same(row.rows, [{ kind: "progress" }], "the relayed job's grant is stored");
});

t.test("CancelCommand through the link stops a running job", async (t) => {
  const done = commands.runCommand({
    jobId: "01LINKJOBB",
    argv: ["sh", "-c", "echo started; sleep 60"],
    timeoutSeconds: 300,
  });
  await eventually(() => text("01LINKJOBB", "stdout") === "started\n");
  t.equal((await commands.cancelCommand({ jobId: "01LINKJOBB" })).found, true);
  const r = await done;
  t.ok(r.cancelled);
  t.equal(r.exitCode, -1);
  t.equal(Buffer.from(r.stdout).toString(), "started\n");
});
