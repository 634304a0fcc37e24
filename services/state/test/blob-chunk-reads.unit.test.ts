import t from "tap";
import type { Queryable } from "@orch/kit";
import { createChunkReads } from "../src/blobs/chunk-reads.js";

// Operations shipping the same blob at once share its chunk reads: one in flight is joined, the
// last few are kept, and the number kept is bounded whatever the blob's size.
function countingDb() {
  const reads: number[] = [];
  const db = {
    query: async (_text: string, values: [string, number]) => {
      reads.push(values[1]);
      await new Promise((r) => setTimeout(r, 5));
      return { rows: [{ start: values[1], data: Buffer.from(`chunk@${values[1]}`) }] };
    },
  } as unknown as Queryable;
  return { db, reads };
}

t.test("twenty senders of the same chunk cause one read", async (t) => {
  const { db, reads } = countingDb();
  const chunks = createChunkReads(4);
  const got = await Promise.all(Array.from({ length: 20 }, () => chunks.at(db, "c1", 0)));
  t.equal(reads.length, 1);
  t.ok(got.every((c) => c?.data.toString() === "chunk@0"));
  await chunks.at(db, "c1", 0);
  t.equal(reads.length, 1, "kept after it completed");
  await chunks.at(db, "c2", 0);
  t.equal(reads.length, 2, "another blob's chunk is another read");
});

t.test("at most `max` chunks are kept, least recently used dropped first", async (t) => {
  const { db, reads } = countingDb();
  const chunks = createChunkReads(2);
  await chunks.at(db, "c", 0);
  await chunks.at(db, "c", 1);
  await chunks.at(db, "c", 0); // used again: now the newest
  await chunks.at(db, "c", 2); // drops offset 1
  t.same(reads, [0, 1, 2]);
  await chunks.at(db, "c", 0);
  t.same(reads, [0, 1, 2], "offset 0 was kept");
  await chunks.at(db, "c", 1);
  t.same(reads, [0, 1, 2, 1], "offset 1 was dropped and read again");
});

t.test("a failed read is not kept", async (t) => {
  let fail = true;
  const db = {
    query: async () => {
      if (fail) throw new Error("connection reset");
      return { rows: [{ start: 0, data: Buffer.from("ok") }] };
    },
  } as unknown as Queryable;
  const chunks = createChunkReads(4);
  await t.rejects(chunks.at(db, "c", 0), /connection reset/);
  fail = false;
  t.equal((await chunks.at(db, "c", 0))?.data.toString(), "ok");
});
