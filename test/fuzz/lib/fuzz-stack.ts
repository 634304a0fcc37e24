// Every service as a real process, three real orch-agents, an admin, an operator, and one of each
// kind of object the API names in its paths, so that generated requests with real ids reach handlers.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createTestDatabase,
  createTestRepo,
  ed25519,
  eventually,
  freePort,
  startNats,
  startSystem,
  type KeyPair,
} from "@orch/kit/testing";
import { agentPool } from "../../../services/agents/test/harness.js";
import { releaseFixture } from "../../../services/gateway/test/install-fixture.js";
import type { IdPools } from "./requests.js";

export const ALL_SERVICES = ["auth", "audit", "agents", "secrets", "state", "terminal", "notify", "gateway"];

export async function startFuzzStack(name: string) {
  const nats = await startNats();
  const db = await createTestDatabase();
  const linkPort = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `orch-fuzz-${name}-`));
  // Signed releases for /install. The gateway's only: an agents service that saw them would let
  // the fuzzer upgrade the real agents of this machine.
  const releases = releaseFixture();
  const manifest = releases.addRelease("0.1.0");
  const freeScaffold = async () => {
    await db.drop();
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
    releases.cleanup();
  };
  // startSystem stops its own processes when it fails; NATS and the database are ours to end, or
  // they keep the test process alive until the file's timeout.
  const system = await startSystem({
    nats,
    db,
    services: ALL_SERVICES,
    env: {
      ORCH_LOG_LEVEL: "warn",
      ORCH_AGENTS_LINK_HOST: "127.0.0.1",
      ORCH_AGENTS_LINK_PORT: String(linkPort),
      ORCH_SECRETS_KEYS: `k1:${Buffer.alloc(32, 0x46).toString("base64")}`,
      ORCH_TERMINAL_TRANSCRIPT_DIR: join(dir, "transcripts"),
      ORCH_STATE_DRIFT_INTERVAL_SECONDS: "0",
      // Sources read a repository on this disk: a forge out of reach answers 503 source_unreachable
      // (documented), which says nothing about the API.
      ORCH_STATE_SOURCES_ALLOW_FILE_URLS: "true",
      ORCH_STATE_OPERATION_TIMEOUT_SECONDS: "15",
      // The fuzzer signs in again whenever it logs itself out, and fuzzes the sign-in routes:
      // the per-address login budget (default 60/min) would turn most of those into 429s.
      ORCH_GATEWAY_AUTH_RATE_LIMIT_PER_MINUTE: "100000000",
    },
    serviceEnv: (svc): Record<string, string> =>
      svc === "gateway" ? { ORCH_RELEASES_DIR: releases.dir, ORCH_RELEASES_PUBLIC_KEY_FILE: releases.pubFile } : {},
    readyTimeoutMs: 90_000,
  }).catch(async (err: unknown) => {
    await freeScaffold();
    throw err;
  });
  const agents = agentPool();
  const stop = async () => {
    await agents.stop();
    await system.stop();
    await freeScaffold();
  };
  try {
    return {
      nats,
      db,
      system,
      agents,
      dir,
      stop,
      ...(await seed(
        system,
        agents,
        linkPort,
        dir,
        manifest.packages.map((p) => p.file),
      )),
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

type System = Awaited<ReturnType<typeof startSystem>>;

async function seed(
  system: System,
  agents: ReturnType<typeof agentPool>,
  linkPort: number,
  dir: string,
  releaseFiles: string[],
) {
  let admin = await system.login(system.admin);
  const api = async (method: string, path: string, body?: unknown, want?: number | number[]) => {
    const r = await system.api(method, `/api/v1${path}`, { token: admin, ...(body !== undefined ? { body } : {}) });
    if (want !== undefined && ![want].flat().includes(r.status))
      throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
    return r.body;
  };
  // The ids are what the pools need: 202 (still running when the wait ended, on a busy machine) names them too.
  const DONE_OR_RUNNING = [200, 202];
  const spawn = () => agents.spawn(["--server", `127.0.0.1:${linkPort}`]);
  const procs = { a: spawn(), b: spawn(), victim: spawn() };
  const ids = { a: await procs.a.nodeId(), b: await procs.b.nodeId(), victim: await procs.victim.nodeId() };
  for (const id of Object.values(ids))
    await eventually(async () => (await api("GET", `/agents/${id}`))?.connected === true, 30_000);
  for (const [k, role] of [
    ["a", "web"],
    ["b", "db"],
  ] as const) {
    await api("POST", `/agents/${ids[k]}`, { status: "approved", name: `fz-${k}` }, 200);
    await api("PUT", `/agents/${ids[k]}/tags`, { tags: { role } }, 200);
  }
  const content = [
    "name: fuzzmod",
    "resources:",
    "  - id: marker",
    "    type: file",
    `    path: ${dir}/{{ tags.role }}.txt`,
    '    content: "fuzz\\n"',
    "",
  ];
  await api("POST", "/modules", { name: "fuzzmod", content: content.join("\n") }, 201);
  await api("POST", "/assignments", { name: "fuzzasg", selector: "role=web", modules: ["fuzzmod"] }, 201);
  const op = await api("POST", `/agents/${ids.a}/apply?wait=20`, { modules: ["fuzzmod"] }, DONE_OR_RUNNING);
  // The drift check plans the apply's snapshot: it needs the apply to have ended.
  await eventually(async () => {
    const { status } = await api("GET", `/state/operations/${op.id}`, undefined, 200);
    return status !== "pending" && status !== "running";
  }, 60_000);
  const assignmentRun = await api("POST", "/assignments/fuzzasg/apply?wait=20", {}, DONE_OR_RUNNING);
  const drift = await api("POST", `/agents/${ids.a}/drift?wait=20`, undefined, DONE_OR_RUNNING);
  await api("POST", "/secrets", { name: "fuzzsecret", value: "s3cret" }, 201);
  const channel = await api(
    "POST",
    "/channels",
    { name: "fuzzchan", channel_type: "webhook", config: { url: "https://hooks.example.invalid/x" } },
    201,
  );
  const now = Math.floor(Date.now() / 1000);
  const window = await api(
    "POST",
    "/maintenance-windows",
    { starts_at: now + 3600, ends_at: now + 7200, reason: "fuzz" },
    201,
  );
  const joinToken = await api("POST", "/join-tokens", { ttl_s: 3600 }, 201);
  const fleetRun = await api("POST", "/runs", { selector: "role=web", command: ["true"] });
  const term = await api("POST", "/terminal/fz-a", undefined, 201);
  const repo = await createTestRepo(join(dir, "repo"));
  await repo.write("README.md", "fuzz\n");
  await repo.commit("initial");
  const repoUrl = `file://${repo.dir}`;
  await api("POST", "/sources", { name: "fuzzsrc", url: repoUrl }, 201);

  // Two operators: one the fuzzer signs in as, one it may delete, demote and re-scope at will.
  const opKey = ed25519();
  const victimKey = ed25519();
  const operator = await api(
    "POST",
    "/operators",
    { name: "fuzzop", public_key: opKey.publicKeyHex, role: "operator" },
    201,
  );
  const victimOp = await api(
    "POST",
    "/operators",
    { name: "victimop", public_key: victimKey.publicKeyHex, role: "operator" },
    201,
  );
  const whoami = await api("GET", "/auth/whoami", undefined, 200);

  const pools: IdPools = new Map<string, string[]>([
    ["agents.node_id", [ids.a, ids.b, ids.victim, "fz-a", "fz-b"]],
    ["terminal.node_id", [ids.a, "fz-b"]],
    ["tags.key", ["role", "nope"]],
    ["operations.operation_id", [op.id]],
    ["drift.drift_id", [drift.id ?? drift.drift?.id].filter(Boolean)],
    ["assignments.name", ["fuzzasg"]],
    ["runs.run_id", [assignmentRun.run_id]],
    ["modules.name", ["fuzzmod"]],
    ["secrets.name", ["fuzzsecret"]],
    ["channels.id", [channel.id]],
    ["maintenance-windows.id", [window.id]],
    ["join-tokens.id", [joinToken.id ?? joinToken.join_token?.id].filter(Boolean)],
    ["runs.id", [fleetRun?.id].filter(Boolean)],
    ["session.session_id", [term.session_id]],
    // The fuzzer's own identities too: reads and refusals on them are fine, destructive routes get
    // a stand-in (runner.ts DESTRUCTIVE).
    ["operators.operator_id", ["victimop", victimOp.id, "fuzzop", operator.id, whoami.name]],
    ["releases.version", ["0.1.0"]],
    ["sources.name", ["fuzzsrc"]],
    // Not a path parameter: the repository example bodies point sources at (examples.ts).
    ["example.repo_url", [repoUrl]],
    ["{version}.file", releaseFiles],
    // Deletes draw from "new:" pools (requests.ts): what the fuzzer may destroy.
    ["new:agents.node_id", [ids.victim]],
    ["new:operators.operator_id", ["victimop", victimOp.id]],
    ["new:tags.key", ["nope", "role"]],
  ]);
  /** The fuzzer's own identities: deleting or demoting them would end the run, not test the API. */
  const protectedIds = new Set(
    [operator.id, "fuzzop", whoami.id, whoami.name, ids.a, ids.b, "fz-a", "fz-b"].filter(Boolean),
  );
  const operatorKey: KeyPair = opKey;
  return {
    ids,
    pools,
    protectedIds,
    tokens: { admin, operator: await system.login(operatorKey) },
    relogin: async (who: "admin" | "operator") => {
      const t = await system.login(who === "admin" ? system.admin : operatorKey);
      if (who === "admin") admin = t;
      return t;
    },
  };
}
