import t from "tap";
import { groupCommit } from "../src/group-commit.js";
import { silentLogger } from "../src/testing/index.js";

/** A writer whose batches and single writes are recorded; `hold` keeps a write open until released. */
function recorder(opts: { failBatch?: (items: string[]) => boolean; failOne?: (item: string) => boolean } = {}) {
  const batches: string[][] = [];
  const singles: string[] = [];
  let release: () => void = () => {};
  let hold: Promise<void> | undefined;
  const write = groupCommit<string, string>({
    max: 3,
    key: (item) => item.split(":")[0]!,
    batch: async (items) => {
      batches.push(items);
      if (hold) await hold;
      if (opts.failBatch?.(items)) throw new Error("batch refused");
      return items.map((i) => `stored ${i}`);
    },
    one: async (item) => {
      singles.push(item);
      if (hold) await hold;
      if (opts.failOne?.(item)) throw new Error(`refused ${item}`);
      return `stored ${item}`;
    },
    log: silentLogger(),
    what: "test items",
  });
  return {
    write,
    batches,
    singles,
    holdWrites() {
      hold = new Promise((r) => (release = r));
    },
    release() {
      hold = undefined;
      release();
    },
  };
}

t.test("a lone item is written alone, at once", async (t) => {
  const r = recorder();
  t.equal(await r.write("a:1"), "stored a:1");
  t.same(r.batches, []);
  t.same(r.singles, ["a:1"]);
});

t.test("items that arrive together share a batch, and each gets its own answer", async (t) => {
  const r = recorder();
  const answers = await Promise.all([r.write("a:1"), r.write("b:1"), r.write("c:1")]);
  t.same(answers, ["stored a:1", "stored b:1", "stored c:1"]);
  t.same(r.batches, [["a:1", "b:1", "c:1"]]);
  t.same(r.singles, []);
});

t.test("what arrives while a batch is written goes in the next one, at most `max` per batch", async (t) => {
  const r = recorder();
  r.holdWrites();
  const first = [r.write("a:1"), r.write("b:1")];
  await new Promise((resolve) => setImmediate(resolve));
  t.same(r.batches, [["a:1", "b:1"]], "the first batch is under way");
  const later = ["c:1", "d:1", "e:1", "f:1", "g:1"].map((i) => r.write(i));
  r.release();
  await Promise.all([...first, ...later]);
  t.same(r.batches, [
    ["a:1", "b:1"],
    ["c:1", "d:1", "e:1"],
    ["f:1", "g:1"],
  ]);
  t.same(r.singles, []);
});

t.test("two items with the same key never share a batch", async (t) => {
  const r = recorder();
  await Promise.all([r.write("a:1"), r.write("a:2"), r.write("b:1")]);
  t.same(r.batches, [["a:1", "b:1"]]);
  t.same(r.singles, ["a:2"], "the second item of key a waits for the next write");
});

t.test("a failed batch is written again item by item, so one bad item fails alone", async (t) => {
  const r = recorder({ failBatch: () => true, failOne: (i) => i === "b:1" });
  const settled = await Promise.allSettled([r.write("a:1"), r.write("b:1"), r.write("c:1")]);
  t.same(
    settled.map((s) => (s.status === "fulfilled" ? s.value : (s.reason as Error).message)),
    ["stored a:1", "refused b:1", "stored c:1"],
  );
  t.same(r.singles, ["a:1", "b:1", "c:1"]);
});
