import os from "node:os";
import t from "tap";
import { collectAttributes, parseOsRelease } from "../src/attributes.js";
import { createSampler, parseNetDev } from "../src/metrics.js";
import { AGENT_VERSION } from "../src/version.js";

t.test("unit: /etc/os-release parsing", async (t) => {
  t.same(parseOsRelease('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n# comment\n'), {
    PRETTY_NAME: "Debian GNU/Linux 12 (bookworm)",
    ID: "debian",
    VERSION_ID: "12",
  });
});

t.test("unit: /proc/net/dev sums every interface but loopback", async (t) => {
  const text = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 5000      10    0    0    0     0          0         0     5000      10    0    0    0     0       0          0
  eth0: 1200      10    0    0    0     0          0         0      300      10    0    0    0     0       0          0
  eth1:   34       1    0    0    0     0          0         0       66       1    0    0    0     0       0          0`;
  t.same(parseNetDev(text), { rx: 1234, tx: 366 });
});

t.test("attributes describe this machine", async (t) => {
  const a = collectAttributes({ terminalEnabled: false });
  t.match(a, {
    hostname: os.hostname(),
    os: os.platform(),
    kernel: os.release(),
    arch: os.machine(),
    cpus: String(os.availableParallelism()),
    memory_bytes: String(os.totalmem()),
    agent_version: AGENT_VERSION,
    terminal_enabled: "false",
  });
  t.match(AGENT_VERSION, /^\d+\.\d+\.\d+/);
  t.ok(
    Object.values(a).every((v) => typeof v === "string"),
    "flat strings",
  );
});

t.test("metrics samples are plausible", async (t) => {
  const sample = createSampler();
  let spin = 0;
  for (let i = 0; i < 2e6; i++) spin += i;
  const s = sample();
  t.ok(spin > 0);
  t.ok(s.cpuPercent! >= 0 && s.cpuPercent! <= 100, "cpu in 0..100");
  t.equal(s.memoryTotal, os.totalmem());
  t.ok(s.memoryUsed! > 0 && s.memoryUsed! <= s.memoryTotal!);
  t.ok(s.diskTotal! > 0 && s.diskUsed! <= s.diskTotal!, "root filesystem");
  t.ok(s.uptimeSeconds! > 0);
  t.ok(s.netRxBytes! >= 0 && s.netTxBytes! >= 0);
  t.ok(Math.abs(s.takenAt! - Date.now()) < 5000);
});
