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
