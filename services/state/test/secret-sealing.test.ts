// A secret never leaves through an operation that did not resolve it (so has nothing to mask it
// with): a file written from one is sealed (docs/secrets.md). With the real secrets, state and
// gateway services, real NATS and Postgres, and the real agent providers. Generated from the resource types: every field of every type either refuses a
// {{ secrets.* }} at upload, or is listed here as content (then another operator's plan, apply and
// drift check of that file shows nothing of it) or as never written; a new type or field without
// a case fails the test.
import t from "tap";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, statSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { secretVariants } from "@orch/contracts";
import { ed25519 } from "@orch/kit/testing";
import { call, login } from "../../gateway/test/harness.js";
import { RESOURCE_TYPES, type ResourceType } from "../src/module/types.js";
import { startStack } from "./harness.js";

const s = await startStack(t);
const dir = s.tempDir();
// It says it has the archive type (and a blob cache, which this harness does not serve: an apply
// that ships a blob fails, a plan does not ship).
const web1 = await s.addAgent({
  name: "web-1",
  tags: { env: "test" },
  attributes: { state_features: "triggers,blobs,archive" },
});
const CANARY = "canary-Zq7 value/with&symbols";
await s.createSecret("canary", CANARY, { nodeIds: [web1] });
const T = "{{ secrets.canary }}";

type Api = (method: string, path: string, body?: unknown) => ReturnType<typeof call>;
async function operator(name: string): Promise<Api> {
  const key = ed25519();
  const r = await s.api("POST", "/operators", { name, public_key: key.publicKeyHex, role: "operator" });
  if (r.status !== 201) throw new Error(r.text);
  const token = await login(s.gw.url, key);
  return (method, path, body) => call(s.gw.url, method, `/api/v1${path}`, { token, ...(body ? { body } : {}) });
}
// alice may use the secret; bob (who never names it) plans the same paths; carol only reads.
const alice = await operator("alice");
const bob = await operator("bob");
const carol = await operator("carol");

const mod = (name: string, resources: unknown[]) => ({ name, content: JSON.stringify({ name, resources }) });
const upload = async (as: Api, name: string, resources: unknown[]) => {
  const r = await as("POST", "/modules", mod(name, resources));
  if (r.status !== 201) throw new Error(`upload ${name}: ${r.text}`);
};
const run = async (as: Api, kind: "plan" | "apply", modules: string[]) => {
  const r = await as("POST", `/agents/${web1}/${kind}?wait=30`, { modules });
  if (r.status !== 200) throw new Error(`${kind}: ${r.text}`);
  return r;
};

/** The canary in any form the masker knows (plain, base64, hex, URL-encoded, reversed). */
const FORMS = secretVariants(CANARY);
const leaked = (text: string) => FORMS.filter((f) => text.includes(f));
const json = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? String(x) : x));
/** Every file below the scratch directory that holds the canary in clear. */
const onDisk = () =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && readFileSync(join(e.parentPath, e.name), "utf8").includes(CANARY))
    .map((e) => join(e.parentPath, e.name));

interface Case {
  /** A resource valid as it is, into which each field's secret is put in turn. */
  base: (p: string) => Record<string, unknown>;
  /** Fields whose secret ends up in the file (the carrier round below must then show it sealed). */
  content: string[];
  /** Fields whose secret is accepted but never written anywhere (a mode, a state, a pattern). */
  inert: string[];
  /** What alice applies to leave the canary in `p` through this type (absent: it cannot carry one; a file does). */
  carrier?: (p: string) => Record<string, unknown>;
  /** What bob runs on alice's file `p`: resources of this type (and what reaches the file through them). */
  probe: (p: string) => Record<string, unknown>[];
  /** Whether bob's probe is applied too (types that change the machine outside the scratch directory are planned only). */
  apply: boolean;
}

const absentName = (type: string) => `orch-sealing-test-${type}`;
/** An archive's source must be a stored blob: an empty zip (its end record alone). */
const EMPTY_ZIP = await (async () => {
  const bytes = Buffer.concat([Buffer.from("PK\x05\x06", "latin1"), Buffer.alloc(18)]);
  const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
  const r = await fetch(new URL(`/api/v1/blobs/${digest}`, s.gw.url), {
    method: "PUT",
    headers: { authorization: `Bearer ${s.token}`, "content-type": "application/octet-stream" },
    body: bytes,
  });
  if (r.status !== 201) throw new Error(`blob upload: ${r.status} ${await r.text()}`);
  return digest;
})();
const CASES: Record<ResourceType, Case> = {
  file: {
    base: (p) => ({ type: "file", path: p, content: "x" }),
    content: ["content"],
    inert: ["mode", "state"],
    carrier: (p) => ({ type: "file", path: p, content: `user=app\npassword=${T}\n` }),
    probe: (p) => [{ type: "file", path: p, content: "user=app\n" }],
    apply: true,
  },
  line: {
    base: (p) => ({ type: "line", path: p, line: "x", create: true }),
    content: ["line"],
    inert: ["match", "insert_after", "insert_before", "state", "create"],
    carrier: (p) => ({ type: "line", path: p, line: `password=${T}`, create: true }),
    probe: (p) => [{ type: "line", path: p, line: "other=1" }],
    apply: true,
  },
  block: {
    base: (p) => ({ type: "block", path: p, content: "x", create: true }),
    content: ["content", "marker"],
    inert: ["insert_after", "insert_before", "state", "create"],
    carrier: (p) => ({ type: "block", path: p, content: `password=${T}`, create: true }),
    probe: (p) => [{ type: "block", path: p, marker: "# {mark} BOB", content: "bob=1" }],
    apply: true,
  },
  exec: {
    base: () => ({ type: "exec", command: "true" }),
    content: ["script", "env"],
    inert: ["timeout_seconds"],
    carrier: (p) => ({
      type: "exec",
      script: `umask 077; printf 'password=%s\\n' "$TOKEN" > ${p}`,
      env: { TOKEN: T },
      creates: p,
    }),
    // The file the exec left: sealed by its `creates`.
    probe: (p) => [
      { type: "exec", command: "true", creates: p },
      { type: "file", path: p, content: "x\n" },
    ],
    apply: true,
  },
  archive: {
    base: (p) => ({ type: "archive", path: `${p}.d`, source: EMPTY_ZIP }),
    content: [],
    inert: ["clean"],
    probe: (p) => [{ type: "archive", path: p, source: EMPTY_ZIP }],
    apply: false,
  },
  directory: {
    base: (p) => ({ type: "directory", path: `${p}.d` }),
    content: [],
    inert: ["state", "recurse", "force", "mode"],
    probe: (p) => [{ type: "directory", path: p }],
    apply: false,
  },
  symlink: {
    base: (p) => ({ type: "symlink", path: `${p}.link`, target: "/nonexistent" }),
    content: [],
    inert: ["state"],
    // A directory reached through a symlink: the agent seals by the file the path resolves to.
    probe: (p) => [
      { id: "link", type: "symlink", path: `${p}.dir-link`, target: dir },
      { type: "file", path: `${p}.dir-link/${p.slice(dir.length + 1)}`, content: "x\n", requires: "link" },
    ],
    apply: true,
  },
  package: {
    base: () => ({ type: "package", name: absentName("package"), state: "absent" }),
    content: [],
    inert: ["state"],
    probe: () => [{ type: "package", name: absentName("package"), state: "absent" }],
    apply: false,
  },
  service: {
    base: () => ({ type: "service", name: absentName("service"), state: "stopped" }),
    content: [],
    inert: ["state", "enabled"],
    probe: () => [{ type: "service", name: absentName("service"), state: "stopped" }],
    apply: false,
  },
  user: {
    base: () => ({ type: "user", name: absentName("user"), state: "absent" }),
    content: [],
    inert: ["state", "system"],
    probe: (p) => [{ type: "user", name: absentName("user"), home: p, state: "absent" }],
    apply: false,
  },
  group: {
    base: () => ({ type: "group", name: absentName("group"), state: "absent" }),
    content: [],
    inert: ["state", "system"],
    probe: () => [{ type: "group", name: absentName("group"), state: "absent" }],
    apply: false,
  },
  cron: {
    base: () => ({ type: "cron", name: absentName("cron"), state: "absent" }),
    content: [],
    inert: ["state"],
    probe: () => [{ type: "cron", name: absentName("cron"), state: "absent" }],
    apply: false,
  },
  // The system types write only world-readable files: a secret is refused in every field.
  sysctl: {
    base: () => ({ type: "sysctl", name: "net.orch.sealing_test", state: "absent" }),
    content: [],
    inert: [],
    probe: () => [{ type: "sysctl", name: "net.orch.sealing_test", state: "absent" }],
    apply: false,
  },
  apt_repository: {
    base: () => ({ type: "apt_repository", name: absentName("apt"), state: "absent" }),
    content: [],
    inert: [],
    probe: () => [{ type: "apt_repository", name: absentName("apt"), state: "absent" }],
    apply: false,
  },
  yum_repository: {
    base: () => ({ type: "yum_repository", name: absentName("yum"), state: "absent" }),
    content: [],
    inert: [],
    probe: () => [{ type: "yum_repository", name: absentName("yum"), state: "absent" }],
    apply: false,
  },
  systemd_unit: {
    base: () => ({ type: "systemd_unit", name: `${absentName("unit")}.service`, state: "absent" }),
    content: [],
    inert: [],
    probe: () => [{ type: "systemd_unit", name: `${absentName("unit")}.service`, state: "absent" }],
    apply: false,
  },
};

/** The value put into a field: the shape the field takes, holding the secret. */
function withSecret(field: string): unknown {
  if (field === "env") return { TOKEN: T };
  if (field === "groups") return [T];
  if (field === "marker") return `# {mark} ${T}`;
  return T;
}

const types = Object.keys(RESOURCE_TYPES).sort() as ResourceType[];
t.same(Object.keys(CASES).sort(), types, "a case for every resource type");
const pathOf = (type: string) => join(dir, `${type}.conf`);

t.test("every field of every type refuses a secret at upload, or is content or never written", async (t) => {
  for (const type of types) {
    const fields = Object.keys(RESOURCE_TYPES[type].shape).sort();
    const c = CASES[type];
    const accepted: string[] = [];
    for (const field of fields) {
      const resource: Record<string, unknown> = { id: "r", ...c.base(pathOf(`scan-${type}`)) };
      if (field === "script") delete resource.command; // exactly one of the two
      resource[field] = withSecret(field);
      const r = await alice("POST", "/modules", mod(`scan-${type}-${field.replace(/_/g, "-")}`, [resource]));
      if (r.status === 201) accepted.push(field);
      else {
        t.equal(r.status, 400, `${type}.${field}: ${r.text}`);
        t.ok(
          ["secret_in_argument", "secret_in_path", "invalid_module"].includes(r.body.code),
          `${type}.${field} refused as ${r.body.code}`,
        );
        t.equal(r.body.path, `resources[0].${field}`, `${type}.${field}: the refusal names the field`);
      }
    }
    t.same(accepted, [...c.content, ...c.inert].sort(), `${type}: the fields a secret is accepted in`);
  }
});

t.test("a secret in a field that becomes a file name is 400 secret_in_path", async (t) => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ["file path", { type: "file", path: `/etc/${T}.conf`, content: "x" }, "path"],
    ["directory path", { type: "directory", path: `/srv/${T}` }, "path"],
    ["symlink target", { type: "symlink", path: "/srv/l", target: `/srv/${T}` }, "target"],
    ["exec creates", { type: "exec", command: "true", creates: `/var/${T}` }, "creates"],
    ["line path", { type: "line", path: `/etc/${T}`, line: "x" }, "path"],
    ["cron name", { type: "cron", name: `job-${T}`, schedule: "@daily", command: "true" }, "name"],
  ];
  for (const [what, resource, field] of cases) {
    const r = await alice("POST", "/modules", mod("named", [{ id: "r", ...resource }]));
    t.equal(r.status, 400, what);
    t.match(r.type, /problem\+json/);
    t.equal(r.body.code, "secret_in_path", what);
    t.equal(r.body.path, `resources[0].${field}`, `${what}: names the field`);
    t.notOk(leaked(r.text).length, "the answer carries no secret");
  }
  t.equal((await s.api("GET", "/modules/named")).status, 404, "nothing stored");
});

t.test("fields a secret is accepted in but never written leave it nowhere on the machine", async (t) => {
  for (const type of types) {
    const c = CASES[type];
    if (!c.inert.length) continue;
    const resources = c.inert.map((field) => ({
      id: `inert-${field.replace(/_/g, "-")}`,
      ...c.base(pathOf(`inert-${type}-${field}`)),
      [field]: withSecret(field),
    }));
    await upload(alice, `inert-${type}`, resources);
    const op = await run(alice, "apply", [`inert-${type}`]);
    t.same(leaked(op.text), [], `${type}: nothing in the answer`);
  }
  t.same(onDisk(), [], "no file below the scratch directory holds the canary");
});

t.test("another operator's plan, apply and drift check of a file written from a secret show none of it", async (t) => {
  const carriers = types.map((type) => ({
    id: `carry-${type}`,
    ...(CASES[type].carrier ?? CASES.file.carrier!)(pathOf(type)),
  }));
  await upload(alice, "alice-secrets", carriers);
  const applied = await run(alice, "apply", ["alice-secrets"]);
  t.equal(applied.body.status, "succeeded", applied.text);
  // The test could fail: every file holds the canary.
  for (const type of types) t.ok(readFileSync(pathOf(type), "utf8").includes(CANARY), `${type}: the canary is on disk`);

  const probes = (only: boolean) =>
    types
      .filter((type) => !only || CASES[type].apply)
      .flatMap((type) =>
        CASES[type].probe(pathOf(type)).map((r, i) => {
          const id = `${type}-${(r.id as string | undefined) ?? i}`;
          const requires = r.requires ? `${type}-${r.requires}` : undefined;
          return { ...r, id, ...(requires ? { requires } : {}) };
        }),
      );
  await upload(bob, "bob-plan", probes(false));
  await upload(bob, "bob-apply", probes(true));
  const plan = await run(bob, "plan", ["bob-plan"]);
  const byId = Object.fromEntries(plan.body.results.map((r: { id: string }) => [r.id, r]));
  // Sealed, not only masked: the file's other lines are not shown either.
  t.match(byId["file-0"].diff, /not shown: the file holds content rendered from a secret/);
  t.notMatch(byId["file-0"].diff, /user=app/, "no line of the sealed file");
  t.notMatch(byId["file-0"].diff, /\*\*\*/, "not a masked diff: no content at all");
  const apply = await run(bob, "apply", ["bob-apply"]);
  const drift = await s.api("POST", `/agents/${web1}/drift?wait=30`);
  t.equal(drift.status, 200, drift.text);

  const responses = [plan, apply, drift];
  for (const op of [plan, apply, drift])
    for (const path of [`/state/operations/${op.body.id}`, `/agents/${web1}/state/operations/${op.body.id}/output`])
      responses.push(await carol("GET", path));
  responses.push(await carol("GET", `/agents/${web1}/drift/latest`));
  responses.push(await carol("GET", `/agents/${web1}/state`));
  responses.push(await carol("GET", `/agents/${web1}/state/operations`));
  for (const r of responses) t.same(leaked(r.text), [], `${r.status} ${r.text.slice(0, 60)}: no form of the canary`);
  t.same(leaked(await s.dumpStateSchema()), [], "nothing stored in the state schema");
  t.same(leaked(json(await s.events(">"))), [], "no event");
});

t.test(
  "a file rendered with a secret is created 0600, owned by the agent's user (root), unless the module says",
  async (t) => {
    const own = join(dir, "own.conf");
    const given = join(dir, "given.conf");
    const plain = join(dir, "plain.conf");
    await upload(alice, "modes", [
      { id: "own", type: "file", path: own, content: `k=${T}` },
      { id: "given", type: "file", path: given, content: `k=${T}`, mode: "0640" },
      { id: "plain", type: "file", path: plain, content: "k=v" },
    ]);
    const plan = await run(alice, "plan", ["modes"]);
    const planned = Object.fromEntries(plan.body.results.map((r: { id: string; diff: string }) => [r.id, r.diff]));
    t.match(planned.own, /create file \(mode 0600\)/, "the plan says 0600");
    t.equal((await run(alice, "apply", ["modes"])).body.status, "succeeded");
    t.equal(statSync(own).mode & 0o777, 0o600);
    t.equal(statSync(own).uid, process.getuid!(), "owned by the agent's user");
    t.equal(statSync(given).mode & 0o777, 0o640, "a mode the module gives is kept");
    t.equal(statSync(plain).mode & 0o777, 0o644, "a file without a secret stays 0644");
  },
);

t.test("a world-readable file that comes to hold a secret is made 0600", async (t) => {
  const p = join(dir, "existing.conf");
  await upload(alice, "existing-plain", [{ id: "f", type: "file", path: p, content: "k=v\n" }]);
  await run(alice, "apply", ["existing-plain"]);
  t.equal(statSync(p).mode & 0o777, 0o644);
  await upload(alice, "existing-secret", [{ id: "f", type: "file", path: p, content: `k=${T}\n` }]);
  const op = await run(alice, "apply", ["existing-secret"]);
  t.match(op.body.results[0].diff, /# mode 0644 -> 0600/);
  t.equal(statSync(p).mode & 0o777, 0o600);
});

t.test("a symlinked directory does not unseal a file", async (t) => {
  // Set up here rather than by a module: a link made outside the orchestrator.
  const sub = join(dir, "real");
  mkdirSync(sub);
  const p = join(sub, "app.conf");
  await upload(alice, "linked", [{ id: "f", type: "file", path: p, content: `k=${T}\n` }]);
  await run(alice, "apply", ["linked"]);
  symlinkSync(sub, join(dir, "alias"));
  await upload(bob, "via-alias", [{ id: "f", type: "file", path: join(dir, "alias", "app.conf"), content: "k\n" }]);
  const plan = await run(bob, "plan", ["via-alias"]);
  t.match(plan.body.results[0].diff, /not shown/);
  t.same(leaked(plan.text), []);
});
