import { NODE_ID_RE } from "@orch/contracts";
import { MAX_PAGE_LIMIT } from "@orch/kit";

/** A list keyed by node id, read one page at a time after a cursor (keyset order). */
export type PageAfter<T> = (cursor: string) => Promise<{ items: T[]; nextCursor: string }>;

/** The registry's largest page (what callers ask for), and the most pages read at once when the rest is split. */
const PAGE = MAX_PAGE_LIMIT;
const MAX_PARALLEL = 32;
const SPACE = 2 ** 32;

/** The part of the node id space after `id`, as a fraction (node ids are uniform: a sha256 prefix). */
const fractionAfter = (id: string) => 1 - Number.parseInt(id.slice(0, 8), 16) / SPACE;

/** The 32-hex node id ending the key range of 8-hex prefix `p` (everything that starts with p, inclusive). */
const rangeEnd = (p: number) =>
  `${Math.min(SPACE - 1, p)
    .toString(16)
    .padStart(8, "0")}${"f".repeat(24)}`;

/** Pages of one key range (after `from`, up to and including `upTo`; unbounded when absent), in order. */
async function readRange<T>(
  page: PageAfter<T>,
  key: (item: T) => string,
  from: string,
  upTo: string | undefined,
): Promise<T[]> {
  const out: T[] = [];
  let cursor = from;
  for (let n = 0; n < 10_000; n++) {
    const r = await page(cursor);
    for (const item of r.items) {
      if (upTo !== undefined && key(item) > upTo) return out;
      out.push(item);
    }
    if (!r.nextCursor || r.nextCursor === cursor || (upTo !== undefined && r.nextCursor >= upTo)) break;
    cursor = r.nextCursor;
  }
  return out;
}

/**
 * Every item of a node-id keyed list, in key order. A large registry took 20 round trips one after
 * the other before a fan-out could start; the first page tells how dense the keys are, and the
 * rest of the key space is then split into ranges read at once (the registry's work overlaps this
 * service's). A small registry still costs one page. Keys that are not node ids (never handed
 * out by the link) fall back to reading page after page.
 */
export async function readAllByNodeId<T>(page: PageAfter<T>, key: (item: T) => string): Promise<T[]> {
  const first = await page("");
  const last = first.nextCursor;
  if (!last || !NODE_ID_RE.test(last)) {
    return last ? [...first.items, ...(await readRange(page, key, last, undefined))] : first.items;
  }
  const seen = first.items.length;
  const rest = fractionAfter(last);
  const covered = Math.max(1e-9, 1 - rest);
  // Expected items after `last`, spread over ranges of about one page each.
  const expected = (seen / covered) * rest;
  const parts = Math.max(1, Math.min(MAX_PARALLEL, Math.ceil(expected / (PAGE * 0.8))));
  const start = Number.parseInt(last.slice(0, 8), 16);
  // Boundaries strictly increasing and after `last`, so the ranges neither overlap nor leave gaps.
  const bounds: string[] = [];
  for (let i = 1; i < parts; i++) {
    const b = rangeEnd(start + Math.floor(((SPACE - start) * i) / parts) - 1);
    if (b > (bounds.at(-1) ?? last)) bounds.push(b);
  }
  const froms = [last, ...bounds];
  const ranges = await Promise.all(froms.map((from, i) => readRange(page, key, from, bounds[i])));
  return [...first.items, ...ranges.flat()];
}
