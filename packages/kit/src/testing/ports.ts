import { createServer } from "node:net";
import { waitMs } from "./wait.js";

/** A TCP port free right now on 127.0.0.1, for a server a test starts. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      const port = typeof a === "object" && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Waits until `port` accepts connections; `timeoutMs` is a base scaled by waitMs (./wait.ts). */
export async function waitForPort(port: number, timeoutMs: number, host = "127.0.0.1"): Promise<void> {
  const { connect } = await import("node:net");
  const budget = waitMs(timeoutMs);
  const until = Date.now() + budget;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, host);
      s.once("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`port ${port} did not open within ${budget} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
