import t from "tap";
import type { Agent } from "@orch/client";
import { parseTagArg, parseTime } from "../src/args.js";
import { AGENT_COLUMNS, agentRows, metricRows, tagList } from "../src/format/agents.js";
import { ago } from "../src/format/time.js";
import { agree, bytes, count, duration } from "../src/format/units.js";
import { formatTable } from "../src/output.js";

const NOW = Date.parse("2025-06-01T12:00:00Z");

const agent = (o: Partial<Agent>): Agent => ({
  node_id: "0123456789abcdef0123456789abcdef",
  public_key: "ab".repeat(32),
  pending_reason: null,
  name: null,
  status: "pending",
  tags: {},
  attributes: {},
  connected: false,
  first_seen: "2025-06-01T11:00:00.000Z",
  last_seen: "2025-06-01T11:59:50.000Z",
  address: null,
  version: null,
  outdated: false,
  ...o,
});

t.test(
  "unit: list rows show name, short id, status, online, version (* outdated), sorted tags, relative last seen",
  async (t) => {
    const rows = agentRows(
      [
        agent({
          name: "web-1",
          status: "approved",
          connected: true,
          tags: { role: "web", env: "prod" },
          last_seen: "2025-06-01T11:59:59.500Z",
          version: "0.1.0",
          outdated: true,
        }),
        agent({ node_id: "fedcba9876543210fedcba9876543210", last_seen: "2025-05-29T12:00:00Z" }),
        agent({ node_id: "aaaabbbbccccddddaaaabbbbccccdddd", pending_reason: "join_token_revoked", last_seen: null }),
      ],
      NOW,
    );
    t.same(rows, [
      ["web-1", "0123456789ab", "approved", "yes", "0.1.0*", "env=prod,role=web", "just now"],
      ["-", "fedcba987654", "pending", "no", "-", "-", "3d ago"],
      ["-", "aaaabbbbcccc", "pending (join_token_revoked)", "no", "-", "-", "-"],
    ]);
    t.equal(
      formatTable(AGENT_COLUMNS, rows),
      "NAME   ID            STATUS                        ONLINE  VERSION  TAGS               LAST SEEN\n" +
        "web-1  0123456789ab  approved                      yes     0.1.0*   env=prod,role=web  just now\n" +
        "-      fedcba987654  pending                       no      -        -                  3d ago\n" +
        "-      aaaabbbbcccc  pending (join_token_revoked)  no      -        -                  -\n",
    );
  },
);

t.test("unit: relative times, sizes and durations", async (t) => {
  t.equal(ago(null, NOW), "-");
  t.equal(ago("2025-06-01T11:59:18Z", NOW), "42s ago");
  t.equal(ago("2025-06-01T11:55:00Z", NOW), "5m ago");
  t.equal(ago("2025-06-01T09:00:00Z", NOW), "3h ago");
  t.equal(ago("2025-06-01T12:00:05Z", NOW), "just now", "clock skew never shows a negative age");
  t.equal(bytes(512), "512 B");
  t.equal(bytes(1536), "1.5 KiB");
  t.equal(bytes(4 * 2 ** 30), "4.0 GiB");
  t.equal(duration(59), "59s");
  t.equal(duration(61), "1m1s");
  t.equal(duration(93_784), "1d2h3m");
  t.equal(tagList({}), "-");
});

t.test("unit: metric rows", async (t) => {
  const [row] = metricRows([
    {
      taken_at: "2025-06-01T12:00:00.000Z",
      cpu_percent: 12.345,
      load1: 0.5,
      load5: 0.25,
      load15: 0.125,
      memory_total: 2 ** 32,
      memory_used: 2 ** 30,
      disk_total: 2 ** 36,
      disk_used: 2 ** 34,
      net_rx_bytes: 2048,
      net_tx_bytes: 100,
      uptime_seconds: 3700,
    },
  ]);
  t.same(row, [
    "2025-06-01T12:00:00.000Z",
    "12.3",
    "0.50",
    "0.25",
    "0.13",
    "1.0 GiB/4.0 GiB",
    "16.0 GiB/64.0 GiB",
    "2.0 KiB",
    "100 B",
    "1h1m",
  ]);
});

t.test("unit: tag arguments and time flags", async (t) => {
  t.same(parseTagArg("env=prod"), ["env", "prod"]);
  t.same(parseTagArg("url=a=b"), ["url", "a=b"], "split at the first '='");
  t.same(parseTagArg("empty="), ["empty", ""]);
  t.throws(() => parseTagArg("env"), { code: "invalid_argument" });
  t.throws(() => parseTagArg("=prod"), { code: "invalid_argument" });
  t.equal(parseTime("--since", "15m", NOW), "2025-06-01T11:45:00.000Z");
  t.equal(parseTime("--since", "2d", NOW), "2025-05-30T12:00:00.000Z");
  t.equal(parseTime("--since", "2025-01-01T00:00:00Z", NOW), "2025-01-01T00:00:00Z");
  t.equal(parseTime("--since", undefined, NOW), undefined);
  t.throws(() => parseTime("--until", "yesterday", NOW), { code: "invalid_argument", message: /--until must be/ });
});

t.test("count: singular for one, plural otherwise", async (t) => {
  t.equal(count(1, "module"), "1 module");
  t.equal(count(0, "module"), "0 modules");
  t.equal(count(2, "assignment"), "2 assignments");
  t.equal(count(3, "Ed25519 key"), "3 Ed25519 keys");
  t.equal(`${count(1, "resource")} ${agree(1, "differs", "differ")}`, "1 resource differs");
  t.equal(`${count(2, "resource")} ${agree(2, "differs", "differ")}`, "2 resources differ");
});
