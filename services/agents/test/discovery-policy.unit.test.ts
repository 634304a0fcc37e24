import t from "tap";
import { discoveryPolicy, discoveryRefusal } from "../src/discovery-policy.js";

// Who may send a discovery datagram where (docs/agents.md#discovery). Pure policy; the handler tests
// (discover.test.ts, discover-netns.test.ts) send real datagrams.
const PORT = 7444;
const fleet = discoveryPolicy({
  discovery_port: PORT,
  discovery_networks: ["10.20.0.0/16", "127.0.0.0/8", "fd00:20::/32"],
});
const none = discoveryPolicy({ discovery_port: PORT, discovery_networks: [] });
type Row = [policy: typeof fleet, address: string, port: number, role: string, want: string | undefined];
const rows: Row[] = [
  // inside a configured network: anyone
  [fleet, "10.20.1.5", PORT, "operator", undefined],
  [fleet, "127.0.0.1", PORT, "operator", undefined],
  [fleet, "::ffff:10.20.1.5", PORT, "operator", undefined],
  [fleet, "fd00:20::5", PORT, "operator", undefined],
  // the port is fixed for everyone, inside or outside
  [fleet, "10.20.1.5", 22, "operator", "discovery_port_not_allowed"],
  [fleet, "10.20.1.5", 7445, "admin", "discovery_port_not_allowed"],
  // ordinary unicast outside the networks: admin only
  [fleet, "10.30.0.1", PORT, "operator", "discovery_target_not_allowed"],
  [fleet, "10.30.0.1", PORT, "admin", undefined],
  [fleet, "192.168.1.20", PORT, "operator", "discovery_target_not_allowed"],
  [fleet, "100.64.3.3", PORT, "admin", undefined],
  [fleet, "8.8.8.8", PORT, "operator", "discovery_target_not_allowed"],
  [fleet, "8.8.8.8", PORT, "admin", undefined],
  [none, "10.20.1.5", PORT, "operator", "discovery_target_not_allowed"],
  [none, "10.20.1.5", PORT, "admin", undefined],
  // special space: refused even for admins unless a network covers it
  [none, "127.0.0.1", PORT, "admin", "discovery_target_refused"],
  [none, "127.0.0.1", PORT, "operator", "discovery_target_refused"],
  [fleet, "::1", PORT, "admin", "discovery_target_refused"],
  [fleet, "::ffff:127.0.0.1", PORT, "operator", undefined], // mapped form of a covered address
  [none, "::7f00:1", PORT, "admin", "discovery_target_refused"],
  [none, "224.0.0.251", PORT, "admin", "discovery_target_refused"],
  [none, "ff02::1", PORT, "admin", "discovery_target_refused"],
  [none, "255.255.255.255", PORT, "admin", "discovery_target_refused"],
  [none, "10.20.255.255", PORT, "operator", "discovery_target_not_allowed"],
  [none, "169.254.169.254", PORT, "admin", "discovery_target_refused"],
  [none, "fe80::1", PORT, "admin", "discovery_target_refused"],
  [none, "0.0.0.0", PORT, "admin", "discovery_target_refused"],
  [none, "192.0.2.1", PORT, "admin", "discovery_target_refused"],
  [none, "2001:db8::1", PORT, "admin", "discovery_target_refused"],
];

t.test("decision table", async (t) => {
  for (const [policy, address, port, role, want] of rows) {
    const e = discoveryRefusal(policy, address, port, role);
    t.equal(
      e?.reason,
      want,
      `${role} → ${address}:${port} (${policy === fleet ? "fleet networks" : "no networks"}): ${want ?? "allowed"}`,
    );
    if (want === "discovery_port_not_allowed") t.equal(e?.code, "INVALID_ARGUMENT");
    else if (want) t.equal(e?.code, "PERMISSION_DENIED");
    if (e) t.equal(e.details.field, "target");
  }
});

t.test("networks must be CIDRs", async (t) => {
  t.throws(() => discoveryPolicy({ discovery_port: PORT, discovery_networks: ["10.0.0.1"] }), /CIDR/);
  const { agentsConfigSchema } = await import("../src/config.js");
  const bad = agentsConfigSchema.shape.agents.safeParse({ insecure: true, discovery_networks: ["10.0.0.0/8", "lan"] });
  t.notOk(bad.success);
  t.match(JSON.stringify(bad.error?.issues), /'lan' is not a network in CIDR notation/);
  const csv = agentsConfigSchema.shape.agents.safeParse({
    insecure: true,
    discovery_networks: "10.0.0.0/8, 127.0.0.0/8",
  });
  t.same(csv.data?.discovery_networks, ["10.0.0.0/8", "127.0.0.0/8"], "comma-separated from the environment");
  t.same(agentsConfigSchema.shape.agents.parse({ insecure: true }).discovery_networks, [], "default: none");
});
