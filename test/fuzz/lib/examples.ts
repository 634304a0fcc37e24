import fc from "fast-check";

// Bodies the schema alone does not make valid (a selector grammar, module YAML, an existing module,
// a key of the right length): without them these routes would only ever see their 400s.

const name = fc.stringMatching(/^fz[a-z0-9]{1,8}$/);
const hex64 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString("hex"));
const selector = fc.constantFrom("*", "role=web", "role in (web,db)", "!role", "name=fz-*", "role=nope");
const modules = fc.constantFrom(["fuzzmod"], ["fuzzmod", "missing-mod"]);
const moduleYaml = (n: string) =>
  [
    `name: ${n}`,
    "resources:",
    "  - id: note",
    "    type: file",
    "    path: /tmp/orch-fuzz-never/{{ tags.role }}",
    '    content: "x"',
    "",
  ].join("\n");
const now = () => Math.floor(Date.now() / 1000);

/** Example bodies by route; `repoUrl` is a git repository the state service can read. */
export const exampleBodies = (repoUrl: string): Record<string, fc.Arbitrary<unknown>> => ({
  "POST /api/v1/channels": fc.record({
    name,
    channel_type: fc.constantFrom("webhook", "slack", "email", "nope"),
    config: fc.record({ url: fc.constantFrom("https://hooks.example.invalid/a", "http://127.0.0.1:1/x", "not a url") }),
  }),
  "PUT /api/v1/channels/{id}": fc.record({
    name,
    channel_type: fc.constant("webhook"),
    config: fc.record({ url: fc.constant("https://hooks.example.invalid/b") }),
  }),
  "POST /api/v1/auth/challenge": fc.record({ public_key: hex64 }),
  "POST /api/v1/operators": fc.record(
    { name, public_key: hex64, role: fc.constantFrom("operator", "admin"), agent_selector: fc.option(selector) },
    { requiredKeys: ["name", "public_key"] },
  ),
  "PATCH /api/v1/operators/{operator_id}": fc.record({ agent_selector: fc.option(selector) }),
  "POST /api/v1/agent-upgrades": fc.record({ selector, version: fc.constantFrom("0.1.0", "9.9.9", null) }),
  "POST /api/v1/join-tokens": fc.record(
    {
      ttl_s: fc.integer({ min: 60, max: 86_400 }),
      max_uses: fc.integer({ min: 1, max: 5 }),
      name_prefix: name,
      tags: fc.constant({ role: "web" }),
    },
    { requiredKeys: ["ttl_s"] },
  ),
  "POST /api/v1/secrets": fc.record({ name, value: fc.string({ maxLength: 40 }) }),
  "PUT /api/v1/secrets/{name}": fc.record(
    { value: fc.string({ maxLength: 40 }), restriction: fc.option(fc.record({ tags: fc.constant({ role: "web" }) })) },
    { requiredKeys: [] },
  ),
  "POST /api/v1/modules": name.map((n) => ({ name: n, content: moduleYaml(n) })),
  "POST /api/v1/assignments": fc.record(
    { name, selector, modules, enforce: fc.boolean() },
    { requiredKeys: ["name", "selector", "modules"] },
  ),
  "PUT /api/v1/assignments/{name}": fc.record({ selector, modules }),
  "POST /api/v1/agents/{node_id}/apply": fc.record({ modules }),
  "POST /api/v1/agents/{node_id}/plan": fc.record({ modules }),
  "POST /api/v1/runs": fc.record(
    {
      selector,
      command: fc.constantFrom(["true"], ["echo", "fuzz"], ["/nonexistent/binary"]),
      timeout_s: fc.integer({ min: 1, max: 5 }),
    },
    { requiredKeys: ["command"] },
  ),
  "POST /api/v1/sources": fc.record(
    {
      name,
      url: fc.constantFrom(repoUrl, "ftp://x/y.git", "not a url"),
      interval_s: fc.integer({ min: 60, max: 3600 }),
    },
    { requiredKeys: ["name", "url"] },
  ),
  "POST /api/v1/sources/{name}/plan": fc.record({
    ref: fc.constantFrom("main", "HEAD"),
    wait_seconds: fc.integer({ min: 0, max: 1 }),
  }),
  "PUT /api/v1/audit/retention": fc.record({ retention_days: fc.option(fc.integer({ min: 1, max: 3650 })) }),
  "POST /api/v1/maintenance-windows": fc
    .tuple(
      fc.integer({ min: -3600, max: 86_400 }),
      fc.integer({ min: 60, max: 7200 }),
      fc.string({ minLength: 1, maxLength: 30 }),
    )
    .map(([start, len, reason]) => ({ starts_at: now() + start, ends_at: now() + start + len, reason })),
  "PUT /api/v1/maintenance-windows/{id}": fc
    .tuple(fc.integer({ min: 0, max: 86_400 }), fc.integer({ min: 60, max: 7200 }))
    .map(([start, len]) => ({ starts_at: now() + start, ends_at: now() + start + len, reason: "moved" })),
});

/** Query strings the same way (an audit purge needs a timestamp). */
export const EXAMPLE_QUERIES: Record<string, fc.Arbitrary<string>> = {
  "DELETE /api/v1/audit": fc
    .integer({ min: 1, max: 3650 })
    .map((d) => `?before=${new Date(Date.now() - d * 86_400_000).toISOString()}`),
};
