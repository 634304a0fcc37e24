import t from "tap";
import { create } from "@bufbuild/protobuf";
import { AgentFrameSchema, agentLinkGrpcDefinition } from "@orch/contracts";
import { encodeFrame, type AgentFrameInit } from "../src/link/client.js";

// Publish frames are serialized by hand on the hot path; the bytes must be protobuf-es' own.
const reference = (f: AgentFrameInit) => agentLinkGrpcDefinition.connect.requestSerialize(create(AgentFrameSchema, f));

t.test("publish frames encode exactly as protobuf-es encodes them", async (t) => {
  const sizes = [0, 1, 127, 128, 16_383, 16_384, 70_000, 256 * 1024, 2_097_152];
  for (const subject of ["", "orch.term.ABC.out", `orch.state.progress.${"x".repeat(200)}`, "orch.term.é.out"]) {
    for (const n of sizes) {
      const data = Buffer.alloc(n, n % 251);
      const frame: AgentFrameInit = { frame: { case: "publish", value: { subject, data } } };
      t.ok(encodeFrame(frame).equals(reference(frame)), `subject ${subject.length} chars, ${n} bytes`);
    }
  }
});

t.test("other frames and unusual publish values go through protobuf-es", async (t) => {
  const frames: AgentFrameInit[] = [
    { frame: { case: "subscribe", value: { subject: "orch.term.A.in" } } },
    { frame: { case: "response", value: { id: 7n, payload: new Uint8Array([1, 2]) } } },
    { frame: { case: "publish", value: { subject: "orch.term.A.out" } } },
    create(AgentFrameSchema, {
      frame: { case: "publish", value: { subject: "orch.term.A.out", data: new Uint8Array([9]) } },
    }),
  ];
  for (const f of frames) t.ok(encodeFrame(f).equals(reference(f)), String(f.frame?.case));
});
