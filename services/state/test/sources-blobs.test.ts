import t from "tap";
import { createHash } from "node:crypto";
import { ADMIN } from "./harness.js";
import { startSourcesStack } from "./sources-sync-harness.js";

// A module file in a git source whose `source:` names a blob that is not stored is refused as the
// upload API refuses it (unknown_blob at its line), and the sync goes through once the blob is
// uploaded. Real git over smart HTTP, Postgres, NATS and the state service's blob RPCs.
const x = await startSourcesStack(t);
const { s, sync } = x;
const rpc = s.stateRpc;
const repo = await x.repo("bins");
const server = await x.server();
await x.addSource("bins", server.url("bins"));

const bytes = Buffer.from("a small binary\u0000\u0001\u0002");
const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
const module = [
  "name: bin",
  "resources:",
  "  - id: app",
  "    type: file",
  `    path: ${x.marks}/app.bin`,
  `    source: ${digest}`,
  "",
].join("\n");

t.test("a module naming a blob that is not stored fails the sync at the line", async (t) => {
  await repo.write("modules/bin.yaml", module);
  const bad = await repo.commit("bin before its blob");
  await sync.sync("bins", x.manual);
  const row = await x.row("bins");
  t.equal(row.status, "error");
  t.equal(row.attempted_commit, bad);
  t.match(row.errors, [
    {
      file: "modules/bin.yaml",
      line: 6,
      code: "unknown_blob",
      message: /resources\[0\]\.source \(line 6\): blob sha256:[0-9a-f]{64} is not stored/,
    },
  ]);
  const stored = await rpc.getModule({ name: "bin" }, { actor: ADMIN }).catch((e: { reason?: string }) => e.reason);
  t.equal(stored, "module_not_found", "nothing stored");
});

t.test("once the blob is uploaded, the same commit syncs", async (t) => {
  const up = await rpc.beginBlobUpload({ digest, size: BigInt(bytes.length) }, { actor: ADMIN });
  await rpc.putBlobChunk({ uploadId: up.uploadId, seq: 0, data: bytes }, { actor: ADMIN });
  const blob = await rpc.commitBlobUpload({ uploadId: up.uploadId }, { actor: ADMIN });
  t.equal(blob.digest, digest);
  t.equal(Number(blob.size), bytes.length);
  await sync.sync("bins", x.manual);
  const row = await x.row("bins");
  t.same([row.status, row.errors], ["ok", []]);
  t.match((await rpc.getModule({ name: "bin" }, { actor: ADMIN })).content, digest);
});
