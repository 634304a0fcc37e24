import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { Problem } from "../problem.js";

/** Refuses an upgrade with a plain HTTP response carrying a problem+json body, then drops the socket. */
export function rejectUpgrade(socket: Duplex, p: Problem): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(p);
  const head = [
    `HTTP/1.1 ${p.status} ${STATUS_CODES[p.status] ?? "Error"}`,
    "Content-Type: application/problem+json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "Connection: close",
    ...(p.status === 503 ? ["Retry-After: 1"] : []),
  ].join("\r\n");
  socket.end(`${head}\r\n\r\n${body}`, () => socket.destroy());
}
