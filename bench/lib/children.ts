/** Every process a bench started: killed if the bench itself dies half-way, stopped at its end. */
import type { ChildProcess } from "node:child_process";

export const children = new Set<ChildProcess>();

const running = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

process.on("exit", () => {
  for (const c of children) if (running(c)) c.kill("SIGKILL");
});

/** SIGTERM to every child still running. */
export function stopChildren(): void {
  for (const c of children) if (running(c)) c.kill("SIGTERM");
}
