import { createHash } from "node:crypto";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { AgentFrameSchema, ServerFrameSchema, type AgentFrame, type ServerFrame } from "./gen/orch/v1/agent_link_pb.js";

/** node_id = first 16 bytes of SHA-256 of the raw 32-byte Ed25519 public key, hex (32 chars). */
export function nodeIdFromPublicKey(raw: Uint8Array): string {
  if (raw.length !== 32) throw new Error("an Ed25519 public key is 32 bytes");
  return createHash("sha256").update(raw).digest("hex").slice(0, 32);
}

/**
 * grpc-js service definition for AgentLinkService, built from the protobuf-es schemas (structurally
 * a grpc-js `ServiceDefinition`, so this package needs no gRPC dependency).
 */
export const agentLinkGrpcDefinition = {
  connect: {
    path: "/orch.v1.AgentLinkService/Connect",
    requestStream: true,
    responseStream: true,
    requestSerialize: (m: AgentFrame) => Buffer.from(toBinary(AgentFrameSchema, m)),
    requestDeserialize: (b: Buffer) => fromBinary(AgentFrameSchema, b),
    responseSerialize: (m: ServerFrame) => Buffer.from(toBinary(ServerFrameSchema, m)),
    responseDeserialize: (b: Buffer) => fromBinary(ServerFrameSchema, b),
    originalName: "Connect",
  },
} as const;

/** Subjects an agent may publish to / subscribe to through its link (enforced by the agents service). */
export const AGENT_PUBLISH_ALLOWED = [
  /^orch\.term\.[0-9A-Za-z]+\.(out|ctl)$/,
  /^orch\.state\.progress\.[0-9A-Za-z]+$/,
  // Output chunks of a fleet command job (rules/commands.ts).
  /^orch\.state\.output\.[0-9A-Za-z]+$/,
];
export const AGENT_SUBSCRIBE_ALLOWED = [/^orch\.term\.[0-9A-Za-z]+\.(in|ctl)$/];

/**
 * How the agent link's certificates are named to people and pinned by agents
 * (`--server-fingerprint`): `sha256:` and the lowercase hex SHA-256 of the DER certificate.
 */
export function certFingerprint(der: Uint8Array): string {
  return `sha256:${createHash("sha256").update(der).digest("hex")}`;
}

/**
 * Reads a pin as written by the agents service (`sha256:HEX`) or as `openssl x509 -fingerprint
 * -sha256` prints it (`AB:CD:…`, optionally after `sha256:`); undefined when it is neither.
 */
export function parseFingerprint(s: string): string | undefined {
  const hex = s
    .trim()
    .replace(/^sha256[:=]/i, "")
    .replace(/:/g, "")
    .toLowerCase();
  return /^[0-9a-f]{64}$/.test(hex) ? `sha256:${hex}` : undefined;
}
