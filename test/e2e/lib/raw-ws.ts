import { randomBytes } from "node:crypto";
import { connect } from "node:net";

/**
 * A WebSocket client that ignores the server's close frame and keeps typing, the way a hostile or
 * broken client would: proves that the gateway itself stops forwarding input, rather than relying
 * on a well-behaved client to stop sending. Plain frames over node:net (RFC 6455), no extensions.
 */
export interface RawWs {
  /** Sends a masked binary frame whatever the server said; false once the TCP connection is gone. */
  sendBinary(data: string): boolean;
  /** The server's close frame. */
  closeFrame: Promise<{ code: number; reason: string; at: number }>;
  /** The TCP connection ended (either side). */
  ended: Promise<number>;
  /** Binary payloads received, as UTF-8. */
  output(): string;
  destroy(): void;
}

export function rawAttach(wsUrl: string, token?: string): Promise<RawWs> {
  const url = new URL(wsUrl);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    let buf = Buffer.alloc(0);
    let upgraded = false;
    let gone = false;
    let resolveClose!: (v: { code: number; reason: string; at: number }) => void;
    const closeFrame = new Promise<{ code: number; reason: string; at: number }>((r) => (resolveClose = r));
    const ended = new Promise<number>((r) =>
      sock.on("close", () => {
        gone = true;
        r(Date.now());
      }),
    );
    sock.on("error", (err) => {
      if (!upgraded) reject(err);
    });
    sock.on("connect", () => {
      const lines = [
        `GET ${url.pathname}${url.search} HTTP/1.1`,
        `Host: ${url.host}`,
        "Upgrade: websocket",
        "Connection: Upgrade",
        `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`,
        "Sec-WebSocket-Version: 13",
        ...(token ? [`Authorization: Bearer ${token}`] : []),
      ];
      sock.write(`${lines.join("\r\n")}\r\n\r\n`);
    });

    const frames = () => {
      for (;;) {
        if (buf.length < 2) return;
        const opcode = buf[0]! & 0x0f;
        let len = buf[1]! & 0x7f;
        let off = 2;
        if (len === 126) {
          if (buf.length < 4) return;
          len = buf.readUInt16BE(2);
          off = 4;
        } else if (len === 127) {
          if (buf.length < 10) return;
          len = Number(buf.readBigUInt64BE(2));
          off = 10;
        }
        if (buf.length < off + len) return;
        const payload = buf.subarray(off, off + len);
        buf = buf.subarray(off + len);
        if (opcode === 0 || opcode === 2) chunks.push(Buffer.from(payload));
        if (opcode === 8) {
          const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
          resolveClose({ code, reason: payload.subarray(2).toString("utf8"), at: Date.now() });
        }
      }
    };

    sock.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (!upgraded) {
        const i = buf.indexOf("\r\n\r\n");
        if (i < 0) return;
        const head = buf.subarray(0, i).toString("latin1");
        buf = buf.subarray(i + 4);
        if (!/^HTTP\/1\.1 101 /.test(head)) {
          sock.destroy();
          return reject(new Error(`upgrade refused: ${head.split("\r\n")[0]} ${buf.toString("utf8")}`));
        }
        upgraded = true;
        resolve({
          sendBinary(data) {
            if (gone || sock.destroyed) return false;
            const payload = Buffer.from(data);
            const mask = randomBytes(4);
            const n = payload.length;
            const header = n < 126 ? Buffer.from([0x82, 0x80 | n]) : Buffer.from([0x82, 0x80 | 126, n >> 8, n & 0xff]);
            const masked = Buffer.from(payload.map((b, j) => b ^ mask[j % 4]!));
            sock.write(Buffer.concat([header, mask, masked]), () => {});
            return true;
          },
          closeFrame,
          ended,
          output: () => Buffer.concat(chunks).toString("utf8"),
          destroy: () => sock.destroy(),
        });
      }
      frames();
    });
  });
}
