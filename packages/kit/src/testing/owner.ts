import type { ChildProcess } from "node:child_process";

/**
 * What a test helper hands its clean-up to: tap's `t` (or anything with `teardown`). A helper
 * given an owner registers its stop BEFORE it starts anything, so when a later start-up throws
 * (a busy port, a readiness timeout) tap stops what had started, last registered first.
 *
 * tap runs teardowns for an error thrown at a file's top level only once it has printed
 * something; before that the process just exits. So the helpers also leave an exit guard
 * (onExit): whatever is still running or existing when the process exits is killed or removed
 * synchronously, whether or not a teardown ran.
 */
export interface TestOwner {
  teardown(fn: () => unknown): void;
}

const atExit = new Set<() => void>();
let guarded = false;

/**
 * Runs `fn` (synchronous) if this process exits before the returned function is called: the last
 * guard for a test process that dies without its teardown.
 */
export function onExit(fn: () => void): () => void {
  if (!guarded) {
    guarded = true;
    // One listener for every guard: one each would trip the MaxListeners warning.
    process.on("exit", () => {
      for (const f of [...atExit].reverse()) {
        try {
          f();
        } catch {
          // best effort: the process is going away
        }
      }
    });
  }
  atExit.add(fn);
  return () => atExit.delete(fn);
}

/** SIGKILLs `child` if this process exits while it still runs, so no server outlives its test. */
export function killOnExit(child: ChildProcess): void {
  const off = onExit(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  child.once("exit", off);
}
