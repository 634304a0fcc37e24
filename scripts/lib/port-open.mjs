import { connect, createServer } from "node:net";

/** Whether something accepts TCP connections on host:port (within timeoutMs). */
export function portOpen(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const done = (ok) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once("connect", () => done(true));
    s.once("error", () => done(false));
  });
}

/** A TCP port on 127.0.0.1 nothing listens on right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
