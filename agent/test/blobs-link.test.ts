import t from "tap";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { AgentBlobService, BLOB_CHUNK_BYTES } from "@orch/contracts";
import { OrchError, rpcClient } from "@orch/kit";
import { createTestDatabase, eventually, freePort, startNats } from "@orch/kit/testing";
import { agentPool, agentsClient, startAgentsService } from "../../services/agents/test/harness.js";

// AgentBlobService of a real orch-agent process (agent/dist, with every feature it ships) over
// real NATS, the real agents service and the real link: blobs land verified in its data dir.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const port = await freePort();
const svc = await startAgentsService(nats, db, { link_port: port });
const nc = await nats.connect("state-service");
const { c, as } = agentsClient(nc);
const agents = agentPool();
t.teardown(async () => {
  await agents.stop();
  await svc.stop();
  await nc.close();
});

const agent = agents.spawn(["--server", `127.0.0.1:${port}`, "--no-terminal", "--metrics-interval", "3600"]);
const nodeId = await agent.nodeId();
await eventually(async () => (await c.getAgent({ id: nodeId }, as).catch(() => undefined))?.connected);
await c.setApproval({ nodeId, status: "approved", name: "blob-agent" }, as);
const blobs = rpcClient(nc, "", AgentBlobService, { timeoutMs: 30_000, subjectBase: `orch.agent.${nodeId}` });
// A short timeout per probe, so one sent before the approval reached the link leaves room for more.
const probe = rpcClient(nc, "", AgentBlobService, { timeoutMs: 3000, subjectBase: `orch.agent.${nodeId}` });
await eventually(() => probe.blobsMissing({ digests: [] }).catch(() => undefined), 20_000);

const digestOf = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const cachedFile = (digest: string) => join(agent.dataDir, "blobs", "sha256", digest.slice("sha256:".length));

/** Sends `blob` as `digest` in BLOB_CHUNK_BYTES pieces, the way the state service does; returns the answers. */
async function ship(digest: string, blob: Buffer) {
  const answers: Array<{ have: bigint; complete: boolean }> = [];
  for (let off = 0; off < blob.length; off += BLOB_CHUNK_BYTES) {
    const data = blob.subarray(off, off + BLOB_CHUNK_BYTES);
    const r = await blobs.writeBlobChunk({ digest, size: BigInt(blob.length), offset: BigInt(off), data });
    answers.push({ have: r.have, complete: r.complete });
  }
  return answers;
}

async function failure(p: Promise<unknown>): Promise<OrchError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof OrchError)) throw new Error(`expected an OrchError, got ${String(e)}`);
  return e;
}

t.test("a 2 MiB blob in chunks lands verified in the agent's cache; BlobsMissing before and after", async (t) => {
  const blob = randomBytes(2 * 1024 * 1024 + 123);
  const digest = digestOf(blob);
  const before = await blobs.blobsMissing({ digests: [digest] });
  t.same(
    before.missing.map((m) => [m.digest, m.have]),
    [[digest, 0n]],
  );

  const answers = await ship(digest, blob);
  t.equal(answers.length, 9);
  t.same(
    answers.map((a) => a.have),
    answers.map((_, i) => BigInt(Math.min((i + 1) * BLOB_CHUNK_BYTES, blob.length))),
    "each answer is the next offset",
  );
  t.same(
    answers.map((a) => a.complete),
    [...Array(8).fill(false), true],
    "complete on the last chunk only",
  );

  t.same((await blobs.blobsMissing({ digests: [digest] })).missing, [], "nothing missing after");
  t.ok(readFileSync(cachedFile(digest)).equals(blob), "the file under <dataDir>/blobs/sha256 is the blob");
  t.equal(statSync(cachedFile(digest)).mode & 0o777, 0o600);
});

t.test("a blob whose bytes do not match its digest is refused with blob_digest_mismatch", async (t) => {
  const blob = randomBytes(BLOB_CHUNK_BYTES + 10);
  const digest = digestOf(randomBytes(blob.length));
  const write = (offset: number, data: Uint8Array) =>
    blobs.writeBlobChunk({ digest, size: BigInt(blob.length), offset: BigInt(offset), data });
  const first = await write(0, blob.subarray(0, BLOB_CHUNK_BYTES));
  t.same([first.have, first.complete], [BigInt(BLOB_CHUNK_BYTES), false]);
  const e = await failure(write(BLOB_CHUNK_BYTES, blob.subarray(BLOB_CHUNK_BYTES)));
  t.equal(e.code, "INVALID_ARGUMENT");
  t.equal(e.reason, "blob_digest_mismatch");
  t.match(e.message, digestOf(blob), "the message names what the bytes hash to");
  t.same(
    (await blobs.blobsMissing({ digests: [digest] })).missing.map((m) => m.have),
    [0n],
    "still missing, from the start",
  );
  t.throws(() => statSync(cachedFile(digest)), { code: "ENOENT" }, "not in the cache");
});

t.test("a bad digest is refused with invalid_digest through the link", async (t) => {
  const e = await failure(blobs.blobsMissing({ digests: ["sha256:nope"] }));
  t.same([e.code, e.reason], ["INVALID_ARGUMENT", "invalid_digest"]);
});
