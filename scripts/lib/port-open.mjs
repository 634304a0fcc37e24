import { connect } from "node:net";

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
