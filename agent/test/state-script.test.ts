import t from "tap";
import { runScript, scriptInvocation } from "../src/state/script.js";

t.test("the #! line is read as the kernel reads it: interpreter and at most one argument", async (t) => {
  t.same(scriptInvocation("echo hi\n", "/f"), { cmd: "/bin/sh", args: ["/f"] });
  t.same(scriptInvocation("#!/bin/bash\necho\n", "/f"), { cmd: "/bin/bash", args: ["/f"] });
  t.same(scriptInvocation("#! /usr/bin/env python3 \nprint(1)\n", "/f"), {
    cmd: "/usr/bin/env",
    args: ["python3", "/f"],
  });
  t.same(scriptInvocation("#!/bin/sh -e -u\n", "/f"), { cmd: "/bin/sh", args: ["-e -u", "/f"] });
  t.same(scriptInvocation("#!\nexit 0\n", "/f"), { cmd: "/bin/sh", args: ["/f"] });
});

// Many scripts written and started at once in one process: exec'ing a just-written file races
// another job's fork (ETXTBSY) and failed about one run in a few hundred; the interpreter reads it.
t.test("concurrent #! scripts all run with their own interpreter and exit code", async (t) => {
  const runs = await Promise.all(
    Array.from({ length: 48 }, (_, i) =>
      runScript(`#!/bin/sh -e\necho "run ${i} $0"\nexit ${i % 4}\n`, "orch-test-", { timeoutMs: 20_000 }),
    ),
  );
  runs.forEach((r, i) => {
    t.equal(r.spawnError, undefined, `run ${i} started`);
    t.equal(r.code, i % 4, `run ${i} exit code`);
    t.match(r.stdout, new RegExp(`^run ${i} /tmp/orch-test-`), `run ${i} ran its file`);
  });
});

t.test("a script's temp dir is removed afterwards, and a missing interpreter is a spawn error", async (t) => {
  const r = await runScript("#!/no/such/interp\n", "orch-test-", { timeoutMs: 5_000 });
  t.ok(r.spawnError, "the missing interpreter is reported");
  const seen = await runScript("#!/bin/sh\necho $0\n", "orch-test-", { timeoutMs: 5_000 });
  const { access } = await import("node:fs/promises");
  await t.rejects(access(seen.stdout.trim()), "the file is gone");
});
