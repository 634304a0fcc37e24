import t from "tap";
import { create } from "@bufbuild/protobuf";
import { CommandOutputSchema, CommandRunSchema, CommandTargetSchema } from "@orch/contracts";
import { agentJson, bytesJson, outputJson, runJson } from "../src/routes/runs-json.js";
import { StartRunBody, startRunRequest } from "../src/routes/runs-schemas.js";

// The proto ↔ JSON mapping of command runs: bytes stay bytes (UTF-8 as text, else base64), empty
// proto fields become null, and the request mapping applies the shared rules naming the field.

const enc = (s: string | number[]) => (typeof s === "string" ? new TextEncoder().encode(s) : new Uint8Array(s));

t.test("unit: bytes are utf8 text when valid, base64 otherwise", async (t) => {
  t.same(bytesJson(enc("héllo\n")), { data: "héllo\n", encoding: "utf8" });
  t.same(bytesJson(enc([])), { data: "", encoding: "utf8" });
  t.same(bytesJson(enc([0xff])), { data: "/w==", encoding: "base64" });
  // A cut multi-byte sequence is not UTF-8: kept as bytes, not replaced with U+FFFD.
  t.same(bytesJson(enc([0x61, 0xc3])), { data: Buffer.from([0x61, 0xc3]).toString("base64"), encoding: "base64" });
  // A view into a larger buffer maps only its own bytes.
  const big = enc("xxabcxx");
  t.same(bytesJson(big.subarray(2, 5)), { data: "abc", encoding: "utf8" });
});

const target = create(CommandTargetSchema, {
  nodeId: "n1",
  name: "web-1",
  batch: 1,
  status: "failed",
  exitCode: 3,
  startedAt: Date.parse("2026-01-01T00:00:00Z"),
  finishedAt: Date.parse("2026-01-01T00:00:02Z"),
  durationMs: 2000,
  stdout: enc("web-1\n"),
  stderr: enc([0xff, 0xfe]),
  stderrTruncated: true,
  jobId: "J",
});

t.test("unit: an agent with its output, and without", async (t) => {
  t.same(agentJson(target, true), {
    node_id: "n1",
    name: "web-1",
    batch: 1,
    status: "failed",
    exit_code: 3,
    signal: null,
    started_at: "2026-01-01T00:00:00.000Z",
    finished_at: "2026-01-01T00:00:02.000Z",
    duration_ms: 2000,
    stdout: "web-1\n",
    stdout_encoding: "utf8",
    stdout_truncated: false,
    stderr: "//4=",
    stderr_encoding: "base64",
    stderr_truncated: true,
    error: null,
  });
  const bare = agentJson(create(CommandTargetSchema, { nodeId: "n2", name: "x", status: "not_found" }), false);
  t.same(bare, {
    node_id: "n2",
    name: "x",
    batch: 0,
    status: "not_found",
    exit_code: null,
    signal: null,
    started_at: null,
    finished_at: null,
    duration_ms: 0,
    stdout_truncated: false,
    stderr_truncated: false,
    error: null,
  });
  t.notOk("stdout" in bare);
  // exit code 0 is a value, not "absent".
  t.equal(agentJson(create(CommandTargetSchema, { status: "succeeded", exitCode: 0 }), false).exit_code, 0);
});

t.test("unit: a run: null fields, every status counted, agents by mode", async (t) => {
  const run = create(CommandRunSchema, {
    id: "R",
    status: "running",
    selector: "role=web",
    argv: ["sh", "-c", "hostname"],
    envKeys: ["A"],
    timeoutSeconds: 300,
    batchSize: 2,
    batches: 1,
    total: 1,
    counts: { running: 1 },
    actorId: "op1",
    actorName: "alice",
    createdAt: Date.parse("2026-01-01T00:00:00Z"),
    targets: [target],
  });
  const j = runJson(run, "status");
  t.match(j, {
    id: "R",
    selector: "role=web",
    node_ids: null,
    command: ["sh", "-c", "hostname"],
    script: null,
    env_keys: ["A"],
    batch: null,
    max_failures: null,
    maintenance_window: null,
    started_by: { id: "op1", name: "alice" },
    cancelled_by: null,
    finished_at: null,
    targets: 1,
  });
  t.equal(Object.keys(j.counts).length, 11);
  t.equal(j.counts.running, 1);
  t.equal(j.counts.succeeded, 0);
  t.notOk("stdout" in j.agents![0]!);
  t.equal(runJson(run, "output").agents![0]!.stdout, "web-1\n");
  t.notOk("agents" in runJson(run, "none"));

  const byNodes = runJson(
    create(CommandRunSchema, { nodeIds: ["a", "b"], script: "#!/bin/sh\n", maxFailures: 0, maintenanceWindow: "w" }),
    "none",
  );
  t.match(byNodes, { selector: null, node_ids: ["a", "b"], command: null, script: "#!/bin/sh\n" });
  t.equal(byNodes.max_failures, 0);
  t.equal(byNodes.maintenance_window, "w");
});

t.test("unit: an output chunk", async (t) => {
  t.same(
    outputJson(create(CommandOutputSchema, { nodeId: "n", name: "w", stream: "stderr", data: enc([0xff]), seq: 4 })),
    {
      node_id: "n",
      name: "w",
      stream: "stderr",
      data: "/w==",
      encoding: "base64",
      seq: 4,
    },
  );
});

t.test("unit: the request mapping applies the shared rules and names the field", async (t) => {
  const req = (body: unknown) => startRunRequest(StartRunBody.parse(body));
  t.match(req({ selector: "role=web", command: ["uptime"] }), {
    selector: "role=web",
    nodeIds: [],
    argv: ["uptime"],
    script: "",
    timeoutSeconds: 300,
    batch: "",
  });
  t.notOk("maxFailures" in req({ selector: "*", command: ["true"] }));
  t.match(req({ node_ids: ["a"], script: "x", batch: 5, max_failures: 0, timeout_s: 86400, env: { A: "1" } }), {
    nodeIds: ["a"],
    script: "x",
    batch: "5",
    maxFailures: 0,
    timeoutSeconds: 86400,
    env: { A: "1" },
  });
  const fails = (body: unknown, code: string, field: string) => {
    let err: unknown;
    try {
      req(body);
    } catch (e) {
      err = e;
    }
    t.match(err, { reason: code, details: { field } }, `${JSON.stringify(body).slice(0, 80)} → ${code} ${field}`);
  };
  fails({ command: ["x"] }, "invalid_request", "selector");
  fails({ selector: "*", node_ids: ["a"], command: ["x"] }, "invalid_request", "node_ids");
  fails({ selector: "*" }, "invalid_command", "command");
  fails({ selector: "*", command: ["x"], script: "y" }, "invalid_command", "script");
  fails({ selector: "*", command: "uptime" }, "invalid_command", "command");
  fails({ selector: "*", command: ["ls", 3] }, "invalid_command", "command.1");
  fails({ selector: "*", script: 7 }, "invalid_command", "script");
  fails({ selector: "*", command: ["x"], env: { "1A": "v" } }, "invalid_command", "env.1A");
  fails({ selector: "*", command: ["x"], env: ["A"] }, "invalid_command", "env");
  fails({ selector: "*", command: ["x"], timeout_s: 0 }, "invalid_timeout", "timeout_s");
  fails({ selector: "*", command: ["x"], timeout_s: 86401 }, "invalid_timeout", "timeout_s");
  fails({ selector: "*", command: ["x"], timeout_s: "5" }, "invalid_timeout", "timeout_s");
  fails({ selector: "*", command: ["x".repeat(64 * 1024)] }, "invalid_command", "command");
});
