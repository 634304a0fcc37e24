import t from "tap";
import { createChunker, type OutputChunk } from "../src/commands/chunker.js";
import { cutPoint, incompleteTail } from "../src/commands/utf8.js";

// Pure logic: the batching and UTF-8 rules of published output, with a hand-driven timer.

function harness(opts: { flushBytes?: number } = {}) {
  const chunks: OutputChunk[] = [];
  const timers: Array<{ fn: () => void; ms: number; cancelled: boolean }> = [];
  const c = createChunker({
    emit: (ch) => void chunks.push({ ...ch, data: Uint8Array.from(ch.data) }),
    ...opts,
    schedule: (fn, ms) => {
      const timer = { fn, ms, cancelled: false };
      timers.push(timer);
      return () => {
        timer.cancelled = true;
      };
    },
  });
  const fire = () => {
    for (const tm of timers.splice(0)) if (!tm.cancelled) tm.fn();
  };
  const text = (stream?: string) =>
    Buffer.concat(chunks.filter((ch) => !stream || ch.stream === stream).map((ch) => ch.data)).toString("utf8");
  return { c, chunks, timers, fire, text };
}

const strict = new TextDecoder("utf-8", { fatal: true });
const valid = (b: Uint8Array) => {
  try {
    strict.decode(b);
    return true;
  } catch {
    return false;
  }
};

t.test("incompleteTail and cutPoint", async (t) => {
  const euro = Buffer.from("€"); // e2 82 ac
  const face = Buffer.from("😀"); // f0 9f 98 80
  t.equal(incompleteTail(Buffer.from("abc")), 0);
  t.equal(incompleteTail(euro), 0);
  t.equal(incompleteTail(euro.subarray(0, 1)), 1);
  t.equal(incompleteTail(euro.subarray(0, 2)), 2);
  t.equal(incompleteTail(Buffer.concat([Buffer.from("a"), face.subarray(0, 3)])), 3);
  t.equal(incompleteTail(Buffer.from([0xff])), 0, "an invalid byte is not held");
  t.equal(incompleteTail(Buffer.from([0x80, 0x80, 0x80])), 0, "stray continuation bytes are not held");
  t.equal(incompleteTail(new Uint8Array()), 0);
  const b = Buffer.from("ab€");
  t.equal(cutPoint(b, 3), 2, "backs off to the lead byte");
  t.equal(cutPoint(b, 2), 2);
  t.equal(cutPoint(b, 10), 5);
  t.equal(cutPoint(Buffer.alloc(10, 0x80), 5), 5, "non-UTF-8 is cut anywhere");
  t.equal(cutPoint(Buffer.from("😀😀"), 2), 4, "a limit below one character cuts after it");
});

t.test("a sequence split across reads is never split across chunks", async (t) => {
  const h = harness();
  const euro = Buffer.from("€");
  h.c.push("stdout", Buffer.concat([Buffer.from("price "), euro.subarray(0, 1)]));
  h.fire();
  h.c.push("stdout", euro.subarray(1));
  h.fire();
  t.same(
    h.chunks.map((ch) => Buffer.from(ch.data).toString("utf8")),
    ["price ", "€"],
  );
  t.same(
    h.chunks.map((ch) => ch.seq),
    [1, 2],
  );
});

t.test("byte-at-a-time multibyte output at a tiny flush size: every chunk valid, nothing lost", async (t) => {
  const input = Buffer.from("aé€😀 ünïcödé — 日本語 🎉🎉 end");
  const h = harness({ flushBytes: 4 });
  for (const byte of input) h.c.push("stdout", Uint8Array.of(byte));
  h.c.end();
  t.ok(
    h.chunks.every((ch) => valid(ch.data)),
    "each chunk decodes on its own",
  );
  t.ok(
    h.chunks.every((ch) => ch.data.length <= 4),
    "no chunk above the flush size",
  );
  t.equal(h.text(), input.toString("utf8"));
  t.same(
    h.chunks.map((ch) => ch.seq),
    h.chunks.map((_, i) => i + 1),
  );
});

t.test("random splits of random text (seeded): chunks valid and complete", async (t) => {
  let seed = 42;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const alphabet = ["a", "é", "€", "😀", "\n", "ß", "中"];
  for (let round = 0; round < 50; round++) {
    const s = Array.from({ length: 200 }, () => alphabet[rnd(alphabet.length)]).join("");
    const bytes = Buffer.from(s);
    const h = harness({ flushBytes: 1 + rnd(40) });
    for (let i = 0; i < bytes.length; ) {
      const n = 1 + rnd(9);
      h.c.push("stdout", bytes.subarray(i, i + n));
      if (rnd(3) === 0) h.fire();
      i += n;
    }
    h.c.end();
    if (!h.chunks.every((ch) => valid(ch.data)) || h.text() !== s) {
      t.fail(`round ${round} produced a split sequence or lost bytes`);
      return;
    }
  }
  t.pass("50 rounds");
});

t.test("batches until the size or the timer; the timer starts with the first unflushed byte", async (t) => {
  const h = harness({ flushBytes: 10 });
  h.c.push("stdout", Buffer.from("abc"));
  h.c.push("stdout", Buffer.from("def"));
  t.same(h.chunks, [], "nothing yet");
  t.equal(h.timers.length, 1, "one timer for the batch");
  t.equal(h.timers[0]!.ms, 50);
  h.fire();
  t.same(
    h.chunks.map((ch) => Buffer.from(ch.data).toString()),
    ["abcdef"],
  );
  h.c.push("stdout", Buffer.from("0123456789ABCDE"));
  t.same(
    h.chunks.map((ch) => Buffer.from(ch.data).toString()),
    ["abcdef", "0123456789"],
    "a full batch goes at once",
  );
  h.fire();
  t.same(
    h.chunks.map((ch) => Buffer.from(ch.data).toString()),
    ["abcdef", "0123456789", "ABCDE"],
  );
});

t.test("a switch of stream flushes the other first: order kept, seq across both streams", async (t) => {
  const h = harness();
  h.c.push("stdout", Buffer.from("o1 "));
  h.c.push("stderr", Buffer.from("e1 "));
  h.c.push("stderr", Buffer.from("e2 "));
  h.c.push("stdout", Buffer.from("o2"));
  h.c.end();
  t.same(
    h.chunks.map((ch) => [ch.seq, ch.stream, Buffer.from(ch.data).toString()]),
    [
      [1, "stdout", "o1 "],
      [2, "stderr", "e1 e2 "],
      [3, "stdout", "o2"],
    ],
  );
});

t.test("end flushes the batch and an incomplete trailing sequence as it is; nothing after end", async (t) => {
  const h = harness();
  h.c.push("stdout", Buffer.from("ok"));
  h.c.push("stderr", Buffer.from([0x41, 0xe2, 0x82]));
  h.c.push("stdout", Buffer.from([0xff, 0xfe]));
  h.c.end();
  h.c.push("stdout", Buffer.from("late"));
  h.c.end();
  t.same(
    h.chunks.map((ch) => [ch.seq, ch.stream, [...ch.data]]),
    [
      [1, "stdout", [0x6f, 0x6b]],
      [2, "stderr", [0x41]],
      [3, "stdout", [0xff, 0xfe]],
      [4, "stderr", [0xe2, 0x82]],
    ],
    "invalid bytes pass unchanged; the held tail comes last",
  );
  t.ok(
    h.timers.every((tm) => tm.cancelled || h.chunks.length > 0),
    "timers cancelled by the final flush",
  );
});
