// CPU accounting of the peers bench: bash's `times` parsed, snapshots subtracted (a pid first seen
// later counts whole), and a measured command counts the CPU of the processes it waited for.
import t from "tap";
import { cpuBetween, cpuSeconds, parseTimes, runMeasured } from "../../bench/lib/peers-cpu.js";

t.test("times: the second line is the children's user + system time", async (t) => {
  t.equal(parseTimes("0m0.010s 0m0.020s\n1m2.500s 0m0.250s\n"), 62.75);
  t.throws(() => parseTimes("garbage"), /unexpected output of times/);
});

t.test("a pid first seen in the later snapshot counts from zero", async (t) => {
  const before = new Map([[1, 2.0]]);
  const after = new Map([
    [1, 2.5],
    [2, 1.0],
  ]);
  t.equal(cpuBetween(before, after), 1.5);
});

t.test("this process's CPU is readable and a missing pid is undefined", async (t) => {
  t.type(cpuSeconds(process.pid), "number");
  t.equal(cpuSeconds(2 ** 22 + 12345), undefined);
});

t.test("a measured command counts its grandchildren's CPU and keeps its exit code", async (t) => {
  const busy = "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'";
  const m = await runMeasured(`${busy}; echo done; exit 3`, {}, process.cwd());
  t.equal(m.code, 3);
  t.equal(m.stdout, "done\n");
  t.ok(m.cpuS > 0, `cpu ${m.cpuS}`);
});
