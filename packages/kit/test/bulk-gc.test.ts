import t from "tap";
import { PerformanceObserver, constants, type PerformanceEntry } from "node:perf_hooks";
import { countBuffersInHeapLimit } from "../src/bulk-gc.js";

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
