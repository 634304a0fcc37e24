import t from "tap";
import { chunked } from "@orch/kit";

async function cut(pieces: Array<Buffer | string>, size: number): Promise<number[]> {
  const out: number[] = [];
  for await (const c of chunked(
    (async function* () {
      yield* pieces;
    })(),
    size,
  ))
    out.push(c.length);
  return out;
}

t.test("a stream is re-cut into pieces of exactly the chunk size, the last one shorter", async (t) => {
  t.same(await cut([Buffer.alloc(10)], 4), [4, 4, 2]);
  t.same(await cut([Buffer.alloc(3), Buffer.alloc(3), Buffer.alloc(3)], 4), [4, 4, 1]);
  t.same(await cut([Buffer.alloc(8)], 4), [4, 4], "no empty piece at an exact end");
  t.same(await cut([], 4), [], "nothing in, nothing out");
  t.same(await cut(["ab", Buffer.alloc(0), "cdef"], 4), [4, 2], "strings and empty pieces");
});

t.test("the bytes come out in order, unchanged", async (t) => {
  const input = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
  const parts = [input.subarray(0, 7), input.subarray(7, 500), input.subarray(500)];
  const out: Buffer[] = [];
  for await (const c of chunked(
    (async function* () {
      yield* parts;
    })(),
    64,
  ))
    out.push(c);
  t.ok(Buffer.concat(out).equals(input));
});
