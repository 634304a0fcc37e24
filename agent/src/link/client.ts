import * as grpc from "@grpc/grpc-js";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  AgentFrameSchema,
  BusMessageSchema,
  agentLinkGrpcDefinition,
  type BusMessage,
  type Request,
  type ServerFrame,
  type Welcome,
} from "@orch/contracts";
import type { Identity } from "../identity.js";
import type { AgentLogger } from "../runtime.js";

export type AgentFrameInit = MessageInitShape<typeof AgentFrameSchema>;
export type Send = (frame: AgentFrameInit) => void;

export interface LinkHandlers {
  /** First Welcome of this connection (the link is up) and every later one (status changes). */
  onWelcome(w: Welcome, send: Send, first: boolean): void;
  onRequest(r: Request, send: Send): void;
  onMessage(m: BusMessage): void;
}

export type LinkOutcome =
  | { kind: "refused"; reason: string; message: string; wasUp: boolean }
  | { kind: "closed"; wasUp: boolean; detail: string };

export interface LinkAttempt {
  done: Promise<LinkOutcome>;
  /** Half-closes the stream (the server records a clean disconnect), then cancels it. */
  close(): void;
}

const PUBLISH_TAG = (AgentFrameSchema.field.publish.number << 3) | 2;
const SUBJECT_TAG = (BusMessageSchema.field.subject.number << 3) | 2;
const DATA_TAG = (BusMessageSchema.field.data.number << 3) | 2;

const varintSize = (v: number) => (v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5);
function putVarint(buf: Buffer, o: number, v: number): number {
  while (v > 0x7f) {
    buf[o++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[o++] = v;
  return o;
}

type PublishFrame = { frame: { case: "publish"; value: { subject: string; data: Uint8Array } } };
/** A publish frame of plain values (no unknown fields) that `encodeFrame` writes itself. */
function isPlainPublish(f: unknown): f is PublishFrame {
  const inner = (f as { frame?: { case?: unknown; value?: Record<string, unknown> } }).frame;
  const v = inner?.case === "publish" ? inner.value : undefined;
  return (
    !!v &&
    typeof v.subject === "string" &&
    v.data instanceof Uint8Array &&
    (v.$unknown === undefined || (v.$unknown as unknown[]).length === 0)
  );
}

/**
 * Serializes a frame for the link. Publish frames carry terminal output, nearly every byte an
 * agent sends: they are written directly (the same bytes as protobuf-es) instead of through
 * create + toBinary + Buffer.from, which zero-fill and copy each payload twice more.
 */
export function encodeFrame(frame: AgentFrameInit): Buffer {
  if (!isPlainPublish(frame)) return agentLinkGrpcDefinition.connect.requestSerialize(create(AgentFrameSchema, frame));
  const { subject, data } = frame.frame.value;
  const subjectBytes = Buffer.byteLength(subject, "utf8");
  const inner =
    (subjectBytes ? varintSize(SUBJECT_TAG) + varintSize(subjectBytes) + subjectBytes : 0) +
    (data.length ? varintSize(DATA_TAG) + varintSize(data.length) + data.length : 0);
  const buf = Buffer.allocUnsafe(varintSize(PUBLISH_TAG) + varintSize(inner) + inner);
  let o = putVarint(buf, 0, PUBLISH_TAG);
  o = putVarint(buf, o, inner);
  if (subjectBytes) {
    o = putVarint(buf, o, SUBJECT_TAG);
    o = putVarint(buf, o, subjectBytes);
    o += buf.write(subject, o, "utf8");
  }
  if (data.length) {
    o = putVarint(buf, o, DATA_TAG);
    o = putVarint(buf, o, data.length);
    buf.set(data, o);
  }
  return buf;
}

/**
 * One connection attempt: Hello → Challenge → signed nonce → Welcome or Refusal, then frames
 * until either side ends it. A fresh channel per attempt keeps the reconnect pace in our hands
 * (grpc-js would otherwise add its own hidden backoff on a failed channel).
 */
export function openLink(opts: {
  server: string;
  credentials: grpc.ChannelCredentials;
  identity: Identity;
  /** `joinToken` (a secret) goes into the Hello only, never into a log line. */
  hello: { version: string; attributes: Record<string, string>; joinToken?: string };
  handlers: LinkHandlers;
  log: AgentLogger;
  handshakeTimeoutMs?: number;
  /** `linkChannelOptions(server)`: only with credentials from `linkCredentials` (they check the host). */
  channelOptions?: grpc.ChannelOptions;
}): LinkAttempt {
  const client = new grpc.Client(opts.server, opts.credentials, {
    // Notices a dead server (machine gone, no TCP reset) within keepalive + timeout.
    "grpc.keepalive_time_ms": 20_000,
    "grpc.keepalive_timeout_ms": 10_000,
    "grpc.keepalive_permit_without_calls": 1,
    "grpc.max_receive_message_length": 16 * 1024 * 1024,
    ...opts.channelOptions,
  });
  const def = agentLinkGrpcDefinition.connect;
  const call = client.makeBidiStreamRequest<AgentFrameInit, ServerFrame>(
    def.path,
    encodeFrame,
    def.responseDeserialize,
  );
  let up = false;
  let ended = false;
  let resolveDone!: (o: LinkOutcome) => void;
  const done = new Promise<LinkOutcome>((r) => (resolveDone = r));

  const send: Send = (frame) => {
    if (ended) return;
    try {
      // Built here, not in the serializer, so a bad frame is this write's error, not the stream's.
      call.write(isPlainPublish(frame) ? frame : create(AgentFrameSchema, frame));
    } catch (err) {
      opts.log.debug({ err: (err as Error).message }, "write on a closing link failed");
    }
  };

  const end = (o: LinkOutcome) => {
    if (ended) return;
    ended = true;
    clearTimeout(handshakeTimer);
    try {
      call.cancel();
    } catch {
      /* already gone */
    }
    client.close();
    resolveDone(o);
  };

  const handshakeTimer = setTimeout(
    () => end({ kind: "closed", wasUp: false, detail: "handshake timed out" }),
    opts.handshakeTimeoutMs ?? 15_000,
  );

  call.on("data", (f: ServerFrame) => {
    switch (f.frame.case) {
      case "challenge": {
        if (f.frame.value.nodeId && f.frame.value.nodeId !== opts.identity.nodeId) {
          opts.log.error(
            { server_node_id: f.frame.value.nodeId, node_id: opts.identity.nodeId },
            "server derived a different node id; not signing",
          );
          return end({ kind: "closed", wasUp: false, detail: "node id mismatch" });
        }
        send({ frame: { case: "signature", value: { signature: opts.identity.sign(f.frame.value.nonce) } } });
        return;
      }
      case "welcome": {
        const first = !up;
        up = true;
        clearTimeout(handshakeTimer);
        opts.handlers.onWelcome(f.frame.value, send, first);
        return;
      }
      case "request":
        if (up) opts.handlers.onRequest(f.frame.value, send);
        return;
      case "message":
        if (up) opts.handlers.onMessage(f.frame.value);
        return;
      case "refusal":
        return end({ kind: "refused", reason: f.frame.value.reason, message: f.frame.value.message, wasUp: up });
      default:
        return;
    }
  });
  call.on("end", () => end({ kind: "closed", wasUp: up, detail: "server ended the link" }));
  call.on("error", (err: grpc.ServiceError) => end({ kind: "closed", wasUp: up, detail: err.details || err.message }));

  send({
    frame: {
      case: "hello",
      value: {
        publicKey: opts.identity.publicKeyHex,
        version: opts.hello.version,
        attributes: opts.hello.attributes,
        joinToken: opts.hello.joinToken ?? "",
      },
    },
  });

  return {
    done,
    close() {
      if (ended) return;
      try {
        call.end();
      } catch {
        /* already gone */
      }
      // Give the half-close a moment to reach the server, then drop the stream regardless.
      setTimeout(() => end({ kind: "closed", wasUp: up, detail: "closed by agent" }), 300).unref();
    },
  };
}
