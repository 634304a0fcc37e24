import { createServer } from "node:net";
import { waitMs } from "./wait.js";

/**
 * Ports for test servers come from below Linux's ephemeral range (32768-60999 by default): a port
 * the kernel handed out for `listen(0)` sits in that range, where any process's outgoing
 * connection may take it before the test's server binds it (seen as EADDRINUSE on the agent link).
 */
const TEST_PORTS = { min: 20_000, max: 32_000 } as const;

function listensOn(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

function kernelPort(): Promise<number> {
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

/** A TCP port free right now on 127.0.0.1, for a server a test starts. */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = TEST_PORTS.min + Math.floor(Math.random() * (TEST_PORTS.max - TEST_PORTS.min));
    if (await listensOn(port)) return port;
  }
  return kernelPort();
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
