import t from "tap";
import type { ServerResponse } from "node:http";
import { cli } from "./helpers/cli.js";
import { loggedIn, type World } from "./helpers/setup.js";

// orchctl channels against the in-test API: a test send that did not deliver fails the command
// (the server's refusal of a private target is reported there, never guessed at when adding).

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

/** POST /channels echoes the channel; `secret` is what the server generates for a webhook. */
function serveChannels(w: World, o: { createdBy?: string; secret?: string } = {}) {
  w.server.overrides.set("POST /api/v1/channels", (_req, res) => {
    const b = w.server.requests.at(-1)!.body as { name: string; channel_type: string; config: object };
    json(res, 201, {
      id: "ch-1",
      name: b.name,
      channel_type: b.channel_type,
      enabled: true,
      disabled_reason: null,
      config: o.secret ? { ...b.config, secret: o.secret } : b.config,
      created_at: 1_748_779_200,
      created_by: o.createdBy ?? "op-1",
    });
  });
}

const operatorListings = (w: World) =>
  w.server.requests.filter((q) => q.method === "GET" && q.path === "/api/v1/operators").length;

const refused = {
  delivered: false,
  status_code: null,
  response_snippet: null,
  error:
    "target 127.0.0.1 resolves to 127.0.0.1 (loopback); refused because notify.allow_private_targets (ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS) is off",
};

t.test("channels test: a refused send exits 1 with the reason on stderr", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("POST /api/v1/channels/hook/test", (_req, res) => json(res, 200, refused));
  const r = await cli(["channels", "test", "hook"], w.env);
  t.equal(r.code, 1);
  t.match(r.stdout, /delivered:\s+no/);
  t.match(
    r.stderr,
    /^error: test notification through hook was not delivered: target 127\.0\.0\.1 .*refused because .* is off \(channel_test_failed\)$/m,
  );
});

t.test("channels test --json: the result object, exit 1, no problem document after it", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("POST /api/v1/channels/hook/test", (_req, res) => json(res, 200, refused));
  const r = await cli(["channels", "test", "hook", "--json"], w.env);
  t.equal(r.code, 1);
  t.same(JSON.parse(r.stdout), refused);
});

t.test("channels test: a receiver's error status exits 1 naming it; a delivery exits 0", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("POST /api/v1/channels/bad/test", (_req, res) =>
    json(res, 200, { delivered: false, status_code: 500, response_snippet: "boom", error: null }),
  );
  w.server.overrides.set("POST /api/v1/channels/good/test", (_req, res) =>
    json(res, 200, { delivered: true, status_code: 200, response_snippet: "ok", error: null }),
  );
  const bad = await cli(["channels", "test", "bad"], w.env);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /not delivered: the receiver answered HTTP 500/);
  const good = await cli(["channels", "test", "good"], w.env);
  t.equal(good.code, 0, good.stderr);
  t.equal(good.stderr, "");
});

t.test(
  "channels add | update: no client-side guess about private targets (the server's setting decides)",
  async (t) => {
    const w = await loggedIn(t);
    serveChannels(w);
    // A loopback URL is fine when the server allows private targets; only `channels test` can tell.
    const r = await cli(
      ["channels", "add", "local", "--type", "webhook", "--url", "http://127.0.0.1:9000/hook"],
      w.env,
    );
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /^Added webhook channel local/m);
    t.equal(r.stderr, "", "no warning that the server might refuse it");
    const j = await cli(
      ["channels", "add", "loc", "--type", "webhook", "--url", "http://127.0.0.1/h", "--json"],
      w.env,
    );
    t.equal(j.code, 0, j.stderr);
    t.match(JSON.parse(j.stdout), { name: "loc", config: { url: "http://127.0.0.1/h" } });
    t.equal(j.stderr, "");
    w.server.overrides.set("GET /api/v1/channels/local", (_req, res) =>
      json(res, 200, {
        id: "ch-1",
        name: "local",
        channel_type: "ntfy",
        enabled: true,
        disabled_reason: null,
        config: { topic: "t" },
        created_at: 1_748_779_200,
        created_by: w.op.id,
      }),
    );
    w.server.overrides.set("PUT /api/v1/channels/local", (_req, res) => {
      const b = w.server.requests.at(-1)!.body as { config: object };
      json(res, 200, {
        id: "ch-1",
        name: "local",
        channel_type: "ntfy",
        enabled: true,
        disabled_reason: null,
        config: b.config,
        created_at: 1_748_779_200,
        created_by: w.op.id,
      });
    });
    const u = await cli(["channels", "update", "local", "--server-url", "http://localhost:8080"], w.env);
    t.equal(u.code, 0, u.stderr);
    t.equal(u.stderr, "");
  },
);

t.test("channels add: the new webhook secret is printed once; created_by names the admin", async (t) => {
  const w = await loggedIn(t);
  const secret = "whsec_3f9a2b7c1d0e4f5a6b7c8d9e0f1a2b3c";
  serveChannels(w, { createdBy: w.op.id, secret });
  const r = await cli(["channels", "add", "hook", "--type", "webhook", "--url", "https://8.8.8.8/hook"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout.split(secret).length - 1, 1, "the secret appears exactly once");
  t.match(r.stdout, /^webhook secret \(shown once, store it now\): whsec_3f9a/m);
  t.match(r.stdout, /^config:\s+\{"url":"https:\/\/8\.8\.8\.8\/hook","secret":"\*\*\*"\}$/m);
  t.match(r.stdout, /^created_by:\s+alice$/m);
  t.notMatch(r.stdout, w.op.id);
  t.equal(operatorListings(w), 1, "one operators listing for the invocation");

  const j = await cli(["channels", "add", "hook2", "--type", "webhook", "--url", "https://8.8.8.8/h", "--json"], w.env);
  t.equal(j.code, 0, j.stderr);
  t.match(JSON.parse(j.stdout), { config: { secret }, created_by: w.op.id });
  t.equal(operatorListings(w), 1, "--json looks up no names");
});

t.test("channels show as an operator who may not list operators: created_by stays the id", async (t) => {
  const w = await loggedIn(t, "operator");
  w.server.overrides.set("GET /api/v1/channels/hook", (_req, res) =>
    json(res, 200, {
      id: "ch-1",
      name: "hook",
      channel_type: "webhook",
      enabled: true,
      disabled_reason: null,
      config: { url: "https://8.8.8.8/hook", secret: "whsec_****" },
      created_at: 1_748_779_200,
      created_by: w.op.id,
    }),
  );
  const r = await cli(["channels", "show", "hook"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, new RegExp(`^created_by:\\s+${w.op.id}$`, "m"));
  t.match(r.stdout, /"secret":"whsec_\*\*\*\*"/, "a masked secret is shown as the server masked it");
  t.equal(operatorListings(w), 1, "the listing was asked for and refused");
});
