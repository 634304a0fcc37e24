import t from "tap";
import { buildConfig, configRows, emptyFields, fieldsFrom, testSummary } from "../src/pages/channels/channel-config.js";

const MASK = "********";

t.test("an edit that leaves credentials blank sends no credential keys (the API keeps them)", async (t) => {
  const stored = {
    url: "https://hooks.example.com/in",
    secret: `whsec_${MASK}`,
    headers: { "x-token": MASK },
    min_severity: "info",
    event_types: ["agent", "state.drift"],
  };
  const f = fieldsFrom(stored);
  t.equal(f.secret, "", "the masked secret is not copied into the form");
  t.equal(f.headers, "", "nor the masked headers");
  const built = buildConfig("webhook", f, true);
  t.same(built, {
    ok: true,
    config: { url: "https://hooks.example.com/in", min_severity: "info", event_types: ["agent", "state.drift"] },
  });
  t.notMatch(JSON.stringify(built), /\*\*\*/, "no mask is ever sent back");

  const slack = buildConfig("slack", fieldsFrom({ webhook_url: `https://hooks.slack.com/${MASK}` }), true);
  t.same(slack, { ok: true, config: {} });
  const ntfy = buildConfig("ntfy", fieldsFrom({ server_url: "https://ntfy.sh", topic: "ops", token: MASK }), true);
  t.same(ntfy, { ok: true, config: { server_url: "https://ntfy.sh", topic: "ops" } });
});

t.test("typed credentials are sent; rotating a webhook secret sends secret: null", async (t) => {
  const f = { ...emptyFields(), url: "https://x.example/h", secret: " whsec_abc ", headers: "X-Key: v1\n\nX-Other:v2" };
  t.same(buildConfig("webhook", f, false), {
    ok: true,
    config: { url: "https://x.example/h", secret: "whsec_abc", headers: { "X-Key": "v1", "X-Other": "v2" } },
  });
  t.same(buildConfig("webhook", { ...f, secret: "", headers: "", rotateSecret: true }, true), {
    ok: true,
    config: { url: "https://x.example/h", secret: null },
  });
  const badHeader = buildConfig("webhook", { ...f, headers: "no colon" }, false);
  t.same(badHeader.ok, false);
  t.same(buildConfig("discord", emptyFields(), false), {
    ok: false,
    field: "webhook_url",
    message: "Webhook URL is required",
  });
  t.same(buildConfig("ntfy", { ...emptyFields(), topic: "t", priority: "9" }, false).ok, false);
});

t.test("config rows show what the API returned, masked values included", async (t) => {
  t.same(configRows({ url: "https://a", secret: `whsec_${MASK}`, headers: { A: MASK }, event_types: ["a", "b"] }), [
    { key: "event_types", value: "a, b" },
    { key: "headers", value: `A: ${MASK}` },
    { key: "secret", value: `whsec_${MASK}` },
    { key: "url", value: "https://a" },
  ]);
});

t.test("test summary: the receiver's status code, or the reason nothing was delivered", async (t) => {
  t.equal(
    testSummary({ delivered: true, status_code: 204, error: null, response_snippet: "" }),
    "Delivered: the receiver answered 204.",
  );
  t.equal(
    testSummary({ delivered: false, status_code: 500, error: "HTTP 500", response_snippet: "boom" }),
    "Not delivered: the receiver answered 500 — HTTP 500.",
  );
  t.equal(
    testSummary({ delivered: false, status_code: null, error: "connect ECONNREFUSED", response_snippet: null }),
    "Not delivered: no answer — connect ECONNREFUSED.",
  );
});
