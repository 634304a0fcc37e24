import t from "tap";
import { PerformanceObserver, constants, type PerformanceEntry } from "node:perf_hooks";
import { execFileSync } from "node:child_process";
import { countBuffersInHeapLimit, nodeFlagsFor, STREAMING_NODE_FLAGS, STREAMING_PROCESSES } from "../src/bulk-gc.js";

/** Full (mark-compact) collections while `MiB` of short-lived 256 KiB buffers are allocated and dropped. */
async function majorGcsWhileStreaming(MiB: number): Promise<{ majors: number; sink: number }> {
  let majors = 0;
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      if ((e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)
        majors++;
  });
  obs.observe({ entryTypes: ["gc"] });
  let sink = 0;
  for (let i = 0; i < MiB * 4; i++) {
    const b = Buffer.allocUnsafe(256 * 1024);
    b[i % b.length] = i;
    sink += b[0]!;
    // Let the collector's tasks run now and then, as between a stream's messages.
    if (i % 64 === 0) await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setTimeout(r, 50));
  obs.disconnect();
  return { majors, sink };
}

t.test("streamed buffers die in scavenges instead of forcing full collections", async (t) => {
  const { majors: before } = await majorGcsWhileStreaming(512);
  t.ok(before >= 3, `V8's default: ${before} full collections for 512 MiB of buffers`);
  countBuffersInHeapLimit();
  countBuffersInHeapLimit(); // again: nothing more
  const { majors: after } = await majorGcsWhileStreaming(512);
  t.ok(after <= 2 && after < before, `counted in the heap limit: ${after} full collections`);
});

t.test("the processes terminal output crosses get the heap floor on node's command line; others none", async (t) => {
  for (const name of STREAMING_PROCESSES) t.same(nodeFlagsFor(name), STREAMING_NODE_FLAGS, name);
  for (const name of ["auth", "state", "audit", "orchctl", ""]) t.same(nodeFlagsFor(name), [], name);
  // This node takes them: it refuses a V8 flag it does not know ("bad option") and exits.
  const out = execFileSync(
    process.execPath,
    [...STREAMING_NODE_FLAGS, "-e", "console.log(JSON.stringify(process.execArgv))"],
    { encoding: "utf8" },
  );
  t.same((JSON.parse(out) as string[]).slice(0, STREAMING_NODE_FLAGS.length), STREAMING_NODE_FLAGS);
});
