import { create, toBinary } from "@bufbuild/protobuf";
import {
  AgentCommandService,
  AgentStateService,
  ExecuteRequestSchema,
  RunCommandRequestSchema,
  commandOutputSubject,
} from "@orch/contracts";
import { silentLogger } from "@orch/kit/testing";
import t from "tap";
import { type Grant, type LinkGrants, PROGRESS_GRANT_MS, grantFor, grantOnRelay } from "../src/link/grants.js";

// Fleet command output (orch.state.output.<job_id>) needs the grant a relayed RunCommand gives, as
// progress needs an Execute's. The end-to-end refusal through a real link: agent/test/commands-link.test.ts.

const NOW = 1_700_000_000_000;

function fakeGrants() {
  const granted: Array<{ g: Grant; ttlMs: number }> = [];
  const grants: LinkGrants = {
    async load() {},
    allows: () => false,
    hold: () => () => {},
    async grant(g, ttlMs) {
      granted.push({ g, ttlMs });
    },
    has: () => false,
  };
  return { grants, granted };
}

const observer = (grants: LinkGrants) =>
  grantOnRelay(grants, { terminalMs: 1000, clock: { now: () => NOW }, log: silentLogger(), withdrawn() {} });

const runCommand = (jobId: string) =>
  toBinary(RunCommandRequestSchema, create(RunCommandRequestSchema, { jobId, argv: ["true"], timeoutSeconds: 5 }));

t.test("grantFor: a job's output subject needs that job's progress grant, to publish only", async (t) => {
  t.same(grantFor(commandOutputSubject("01JOBA"), "publish"), { kind: "progress", ref: "01JOBA" });
  t.same(grantFor("orch.state.progress.01OP", "publish"), { kind: "progress", ref: "01OP" }, "progress unchanged");
  t.equal(grantFor(commandOutputSubject("01JOBA"), "subscribe"), undefined, "an agent never reads output");
  t.equal(grantFor("orch.state.output.01JOBA.x", "publish"), undefined);
  t.equal(grantFor("orch.state.output.*", "publish"), undefined);
  t.equal(grantFor("orch.state.output.", "publish"), undefined);
  t.equal(grantFor("orch.state.commands.01RUN", "publish"), undefined, "run events are the state service's");
});

t.test("a relayed RunCommand grants its job's output until the deadline plus the progress grace", async (t) => {
  const { grants, granted } = fakeGrants();
  const done = observer(grants)(AgentCommandService.method.runCommand.name, runCommand("01JOBB"), NOW + 15_000);
  t.ok(done, "the answer waits for the grant to be stored");
  await done!(true);
  t.same(granted, [{ g: { kind: "progress", ref: "01JOBB" }, ttlMs: 15_000 + PROGRESS_GRANT_MS }]);
  t.same(grantFor(commandOutputSubject("01JOBB"), "publish"), granted[0]!.g, "the grant the subject needs");
});

t.test("Execute still grants its operation; other methods and bad payloads grant nothing", async (t) => {
  const { grants, granted } = fakeGrants();
  const relay = observer(grants);
  const exec = toBinary(ExecuteRequestSchema, create(ExecuteRequestSchema, { operationId: "01OP", mode: "plan" }));
  await relay(AgentStateService.method.execute.name, exec, NOW)?.(true);
  t.equal(relay(AgentCommandService.method.cancelCommand.name, runCommand("01JOBC"), NOW), undefined);
  t.equal(relay(AgentCommandService.method.runCommand.name, runCommand(""), NOW), undefined, "no job id");
  t.equal(relay(AgentCommandService.method.runCommand.name, runCommand("a.b"), NOW), undefined, "not a token");
  t.equal(relay(AgentCommandService.method.runCommand.name, Uint8Array.of(0xff, 0xff), NOW), undefined, "undecodable");
  t.same(
    granted.map((x) => x.g),
    [{ kind: "progress", ref: "01OP" }],
  );
});
