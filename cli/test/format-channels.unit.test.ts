import t from "tap";
import type { Channel, ChannelTest, DeliveryPage } from "@orch/client";
import {
  CHANNEL_COLUMNS,
  DELIVERY_COLUMNS,
  channelFields,
  channelRows,
  channelSecretLine,
  channelTarget,
  channelTestFields,
  channelVerbLine,
  deliveryRows,
} from "../src/format/channels.js";
import { namesFrom } from "../src/operator-names.js";
import { formatTable } from "../src/output.js";

const hook = {
  id: "ch-1",
  name: "ops-hook",
  channel_type: "webhook",
  enabled: true,
  disabled_reason: null,
  config: { url: "https://hooks.example.com/orchestrator/events", secret: "whsec_****" },
  created_at: 1_748_779_200,
  created_by: "alice",
} as unknown as Channel;
const ntfy = {
  ...hook,
  id: "ch-2",
  name: "phone",
  channel_type: "ntfy",
  enabled: false,
  disabled_reason: "410 gone",
  config: { server_url: "https://ntfy.sh", topic: "orch", min_severity: "error", event_types: ["agent", "audit"] },
} as unknown as Channel;

t.test("unit: channels table: target from url or ntfy server/topic, min severity defaults to warning", async (t) => {
  t.equal(channelTarget(ntfy), "https://ntfy.sh/orch");
  t.equal(
    formatTable(CHANNEL_COLUMNS, channelRows([hook, ntfy])),
    [
      "NAME      ID    TYPE     ENABLED  MIN SEVERITY  TARGET",
      "ops-hook  ch-1  webhook  yes      warning       https://hooks.example.com/orchestrator/events",
      "phone     ch-2  ntfy     no       error         https://ntfy.sh/orch",
      "",
    ].join("\n"),
  );
  t.equal(formatTable(CHANNEL_COLUMNS, channelRows([])), "NAME  ID  TYPE  ENABLED  MIN SEVERITY  TARGET\n");
});

t.test("unit: channel fields say why a channel is disabled", async (t) => {
  t.same(channelFields(ntfy), [
    ["name", "phone"],
    ["id", "ch-2"],
    ["type", "ntfy"],
    ["enabled", "no (410 gone)"],
    ["target", "https://ntfy.sh/orch"],
    ["min_severity", "error"],
    ["event_types", "agent,audit"],
    ["config", JSON.stringify(ntfy.config)],
    ["created_at", "2025-06-01T12:00:00.000Z"],
    ["created_by", "alice"],
  ]);
  t.equal(channelVerbLine("Added", hook), "Added webhook channel ops-hook, id ch-1");
});

t.test("unit: an unmasked webhook secret is shown once; a masked one is not", async (t) => {
  t.equal(channelSecretLine(hook), null);
  const fresh = { ...hook, config: { ...hook.config, secret: "whsec_abc" } } as Channel;
  t.equal(channelSecretLine(fresh), "webhook secret (shown once, store it now): whsec_abc");
  const config = (c: Channel) => channelFields(c).find(([k]) => k === "config")?.[1];
  t.equal(config(fresh), JSON.stringify({ url: hook.config.url, secret: "***" }), "the config line masks it");
  t.equal(config(hook), JSON.stringify(hook.config), "a masked secret stays as the server masked it");
});

t.test("unit: created_by through the operator names; unknown ids unchanged", async (t) => {
  const names = namesFrom([{ id: "01J0A", name: "alice" }]);
  t.equal(names("01J0A"), "alice");
  t.equal(names("system"), "system");
  t.equal(names("join_token:01J0B"), "join_token:01J0B");
  t.equal(names(null), null);
  t.same(channelFields({ ...hook, created_by: "01J0A" } as Channel, names).at(-1), ["created_by", "alice"]);
});

t.test("unit: test result fields and deliveries table", async (t) => {
  const r = { delivered: false, status_code: 500, response_snippet: "oops", error: "HTTP 500" } as ChannelTest;
  t.same(channelTestFields(r), [
    ["delivered", "no"],
    ["status_code", 500],
    ["response", "oops"],
    ["error", "HTTP 500"],
  ]);
  const deliveries = [
    {
      id: "d-1",
      created_at_ms: 1_748_779_200_000,
      event_type: "agent.offline",
      severity: "warning",
      status: "delivered",
      attempts: 1,
      last_error: null,
      last_status_code: 204,
    },
  ] as DeliveryPage["deliveries"];
  t.equal(
    formatTable(DELIVERY_COLUMNS, deliveryRows(deliveries)),
    "ID   CREATED                   EVENT          SEVERITY  STATUS     ATTEMPTS  LAST\nd-1  2025-06-01T12:00:00.000Z  agent.offline  warning   delivered  1         204\n",
  );
  t.equal(formatTable(DELIVERY_COLUMNS, deliveryRows([])), "ID  CREATED  EVENT  SEVERITY  STATUS  ATTEMPTS  LAST\n");
});
