import { execFile } from "node:child_process";
import { readlinkSync } from "node:fs";
import { fileURLToPath } from "node:url";
import t from "tap";

// An admin may unicast discovery outside agents.discovery_networks, an operator may not
// (docs/agents.md#discovery). Sending to a non-loopback address must not touch the machine's network, so the
// real handler runs inside a private network namespace (`unshare -n`) whose loopback device
// carries 10.77.0.1 (fixtures/discover-in-netns.ts).
const FIXTURE = fileURLToPath(new URL("./fixtures/discover-in-netns.ts", import.meta.url));

t.test("admin reaches 10.77.0.1 outside the networks; an operator gets discovery_target_not_allowed", async (t) => {
  const parentNs = readlinkSync("/proc/self/ns/net");
  const out = await new Promise<string>((resolve, reject) => {
    execFile(
      "unshare",
      ["-n", process.execPath, "--conditions=orch-source", "--import=tsx", FIXTURE],
      { env: { ...process.env, PARENT_NETNS: parentNs }, timeout: 60_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
    );
  });
  const r = JSON.parse(out.trim().split("\n").at(-1)!);
  t.same(r.operator, { ok: false, code: "PERMISSION_DENIED", reason: "discovery_target_not_allowed" });
  t.same(r.admin, { ok: true, sentTo: ["10.77.0.1:7444"] });
  t.equal(r.got.length, 1, "exactly one datagram arrived: the admin's");
  t.match(JSON.parse(r.got[0]), { type: "orch.discover", link: "10.77.0.1:7443" });
  t.equal(r.events, 1, "one discovery.sent event");
});
