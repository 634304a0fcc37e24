import t from "tap";
import { followPages, PagingError } from "../src/pages.js";

type Page = { items: number[]; next_cursor: string | null };

t.test("followPages hands every page over, in order, and returns the last", async (t) => {
  const pages: Record<string, Page> = {
    b: { items: [3, 4], next_cursor: "c" },
    c: { items: [5], next_cursor: null },
  };
  const asked: string[] = [];
  const items: number[] = [];
  const last = await followPages<Page>(
    { items: [1, 2], next_cursor: "b" },
    async (cursor) => {
      asked.push(cursor);
      return pages[cursor]!;
    },
    (p) => items.push(...p.items),
  );
  t.same(items, [1, 2, 3, 4, 5]);
  t.same(asked, ["b", "c"]);
  t.equal(last, pages.c);
});

t.test("a single page is not followed", async (t) => {
  let calls = 0;
  const items: number[] = [];
  await followPages<Page>(
    { items: [1], next_cursor: null },
    async () => {
      calls++;
      return { items: [], next_cursor: null };
    },
    (p) => items.push(...p.items),
  );
  t.equal(calls, 0);
  t.same(items, [1]);
});

t.test("a cursor that repeats throws instead of looping", async (t) => {
  let calls = 0;
  await t.rejects(
    followPages<Page>(
      { items: [0], next_cursor: "same" },
      async () => {
        calls++;
        return { items: [calls], next_cursor: "same" };
      },
      () => {},
    ),
    PagingError,
  );
  t.equal(calls, 1);
});
