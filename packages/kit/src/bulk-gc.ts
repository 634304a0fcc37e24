import { setFlagsFromString } from "node:v8";

let applied = false;

/**
 * For a process that streams terminal output: by default V8 starts a full mark-compact of the
 * whole heap every 64 MiB of ArrayBuffer memory allocated (socket reads, message buffers), even
 * though nearly all of it is short-lived and a scavenge would free it. In a service whose heap
 * holds 100+ MB that costs several CPU-ms per MiB streamed (measured: a NATS subscriber with a
 * 145 MB heap, 7.8 → 1.9 CPU-ms per MiB). With buffers counted in the heap's own limit they die
 * young; the limit still bounds them. Process-wide; calling it again does nothing.
 */
export function countBuffersInHeapLimit(): void {
  if (applied) return;
  applied = true;
  setFlagsFromString("--external-memory-accounted-in-global-limit");
}

/**
 * The processes terminal output crosses: the agent (`agent`) and the agents, gateway and terminal
 * services. They stream bursts (a `cat`, a build log) after long quiet spells.
 */
export const STREAMING_PROCESSES: readonly string[] = ["agent", "agents", "gateway", "terminal"];

/**
 * A floor under the old generation's limit. Once a process has sat idle, V8's memory reducer
 * shrinks its heap and recomputes the limit from what is live (~25 MB here), and the buffers now
 * counted against it (countBuffersInHeapLimit) trip full collections again: the first burst after
 * an idle spell cost the agents service 8–10 CPU-ms per MiB in the collector instead of ~1, and
 * the terminal bench fell to 0.43 of a local PTY. V8 skips full collections below an
 * embedder-set initial size, so 64 MiB holds the limit where a warm process has it; peak memory
 * during a 50 MiB `cat` stayed ~240 MB either way (`npm run bench -- terminal`, docs/performance.md).
 * V8 sizes its heap before any JavaScript runs, and NODE_OPTIONS refuses this flag, so it goes on
 * node's command line: every launcher (the image's entrypoint, `npm run up`, `npm run agent`, the
 * agent package's launcher, the test harness) puts nodeFlagsFor(process) before the entry file.
 */
export const STREAMING_NODE_FLAGS: readonly string[] = ["--initial-old-space-size=64"];

/** Node command-line flags for `name` (an entry in STREAMING_PROCESSES or any other process). */
export function nodeFlagsFor(name: string): readonly string[] {
  return STREAMING_PROCESSES.includes(name) ? STREAMING_NODE_FLAGS : [];
}
