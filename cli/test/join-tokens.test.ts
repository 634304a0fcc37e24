import t from "tap";
import type { ServerResponse } from "node:http";
import { cli } from "./helpers/cli.js";
import { loggedIn, type World } from "./helpers/setup.js";

// orchctl join-tokens against the in-test API: the body sent (ttl durations, repeated tags), the
// token printed once with the install line, --json, the list table and revoke.

const ID = "01jq0000000000000000000000";
const TOKEN = `ojt_${ID}.${"s".repeat(43)}`;
const record = (o: Record<string, unknown> = {}) => ({
  id: ID,
  description: "",
  tags: { env: "prod", role: "web" },
  name_prefix: "web",
  max_uses: 5,
  uses: 1,
  created_at: "2026-01-01T00:00:00.000Z",
  expires_at: "2026-01-01T01:00:00.000Z",
  revoked_at: null,
  created_by: "01J0000000000000000000000A",
  created_by_name: "alice",
  state: "active",
  ...o,
});

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};
const sent = (w: World, method: string, path: string) =>
  w.server.requests.filter((r) => r.method === method && r.path === path).map((r) => r.body);

t.test("create: sends ttl in seconds and the tags, prints the token once and the install line", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("POST /api/v1/join-tokens", (_req, res) =>
    json(res, 201, { join_token: record(), token: TOKEN }),
  );
  const r = await cli(
    [
      "join-tokens",
      "create",
      "--ttl",
      "1h",
      "--tag",
      "env=prod",
      "--tag",
      "role=web",
      "--max-uses",
      "5",
      "--name-prefix",
      "web",
    ],
    w.env,
  );
  t.equal(r.code, 0, r.stderr);
  t.same(sent(w, "POST", "/api/v1/join-tokens"), [
    { ttl_s: 3600, max_uses: 5, tags: { env: "prod", role: "web" }, name_prefix: "web" },
  ]);
  t.match(r.stdout, `token (shown once, store it now): ${TOKEN}`);
  t.match(r.stdout, `curl -fsSL ${w.server.url}/install/agent.sh | sudo sh -s -- --token ${TOKEN}`);
  t.equal(r.stdout.split(TOKEN).length - 1, 2, "the token appears in the token line and the install line only");

  const j = await cli(["--json", "join-tokens", "create", "--ttl", "90"], w.env);
  t.equal(j.code, 0, j.stderr);
  t.same(sent(w, "POST", "/api/v1/join-tokens")[1], { ttl_s: 90 });
  t.match(JSON.parse(j.stdout), {
    token: TOKEN,
    join_token: { id: ID, state: "active" },
    install: `curl -fsSL ${w.server.url}/install/agent.sh | sudo sh -s -- --token ${TOKEN}`,
  });
});

const DETAIL = "no orch-agent package is published on this server yet. Publish one with `npm run build:agent-package`.";

t.test("create: says when the install line cannot install anything yet, and how to publish a package", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("POST /api/v1/join-tokens", (_req, res) =>
    json(res, 201, { join_token: record(), token: TOKEN }),
  );
  const none = {
    latest: null,
    versions: [],
    unavailable: { code: "agent_packages_unavailable", detail: DETAIL },
  };
  w.server.overrides.set("GET /api/v1/agent-packages", (_req, res) => json(res, 200, none));
  const r = await cli(["join-tokens", "create", "--ttl", "1h"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, `curl -fsSL ${w.server.url}/install/agent.sh | sudo sh -s -- --token ${TOKEN}`, "line still given");
  t.match(r.stderr, "cannot install an agent yet (agent_packages_unavailable)");
  t.match(r.stderr, DETAIL, "the server's reason and how to publish, as it gave them");
  t.notMatch(r.stderr, TOKEN, "the token only on stdout");

  const j = await cli(["--json", "join-tokens", "create", "--ttl", "1h"], w.env);
  t.equal(j.code, 0, j.stderr);
  t.same(JSON.parse(j.stdout).agent_packages, none, "--json carries the server's answer");

  w.server.overrides.set("GET /api/v1/agent-packages", (_req, res) =>
    json(res, 200, { latest: "0.2.0", versions: ["0.2.0", "0.1.0"], unavailable: null }),
  );
  const ok = await cli(["join-tokens", "create", "--ttl", "1h"], w.env);
  t.equal(ok.code, 0, ok.stderr);
  t.equal(ok.stderr, "", "a package is published: no note");
  const okJ = await cli(["--json", "join-tokens", "create", "--ttl", "1h"], w.env);
  t.match(JSON.parse(okJ.stdout).agent_packages, { latest: "0.2.0", unavailable: null });

  // A server without the listing (or one that fails it) still gives the token, with a note.
  w.server.overrides.delete("GET /api/v1/agent-packages");
  const old = await cli(["join-tokens", "create", "--ttl", "1h"], w.env);
  t.equal(old.code, 0, old.stderr);
  t.match(old.stdout, `token (shown once, store it now): ${TOKEN}`);
  t.match(old.stderr, "could not check whether this server publishes orch-agent packages");
  const oldJ = await cli(["--json", "join-tokens", "create", "--ttl", "1h"], w.env);
  t.equal(JSON.parse(oldJ.stdout).agent_packages, null);
});

t.test("create: a bad --ttl, --tag or --max-uses is refused before any request", async (t) => {
  const w = await loggedIn(t);
  for (const args of [
    ["--ttl", "soon"],
    ["--ttl", "1h", "--tag", "novalue"],
    ["--ttl", "1h", "--max-uses", "-1"],
  ]) {
    const r = await cli(["join-tokens", "create", ...args], w.env);
    t.not(r.code, 0, args.join(" "));
  }
  t.same(sent(w, "POST", "/api/v1/join-tokens"), [], "nothing sent");
});

t.test("list shows a table without tokens; revoke", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("GET /api/v1/join-tokens", (_req, res) =>
    json(res, 200, {
      join_tokens: [record(), record({ id: "01jq0000000000000000000001", state: "revoked", max_uses: 0, tags: {} })],
      has_more: false,
      next_cursor: null,
    }),
  );
  const r = await cli(["join-tokens", "list"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /ID\s+STATE\s+USES\s+EXPIRES\s+TAGS\s+BY/);
  t.match(r.stdout, new RegExp(`${ID}\\s+active\\s+1/5\\s+2026-01-01T01:00:00.000Z\\s+env=prod,role=web\\s+alice`));
  t.match(r.stdout, /01jq0000000000000000000001\s+revoked\s+1\s/);

  w.server.overrides.set(`DELETE /api/v1/join-tokens/${ID}`, (_req, res) =>
    json(res, 200, record({ state: "revoked", revoked_at: "2026-01-01T00:30:00.000Z" })),
  );
  const rv = await cli(["join-tokens", "revoke", ID], w.env);
  t.equal(rv.code, 0, rv.stderr);
  t.match(rv.stdout, `Revoked join token ${ID}`);
  t.match(rv.stdout, /state:\s+revoked/);
});
