import type { Logger } from "./logger.js";

export interface GroupCommitOptions<I, O> {
  /** Items per batch at most. */
  max: number;
  /** Items with the same key never share a batch (a later one waits for the next). */
  key?: (item: I) => string;
  /** Writes a batch; resolves with one answer per item, in order. */
  batch(items: I[]): Promise<O[]>;
  /** Writes one item alone: a lone item, and each item of a batch that failed. */
  one(item: I): Promise<O>;
  log: Logger;
  /** What is written, for the log. */
  what: string;
}

interface Waiting<I, O> {
  item: I;
  resolve(o: O): void;
  reject(err: unknown): void;
}

/**
 * Group commit: one batch is written at a time, and whatever arrives while it is written goes in
 * the next one, so the number of round trips follows the database's pace rather than the callers'
 * and a quiet system still writes each item at once. A failed batch is retried item by item, so
 * one bad item fails alone.
 */
export function groupCommit<I, O>(opts: GroupCommitOptions<I, O>): (item: I) => Promise<O> {
  let queue: Array<Waiting<I, O>> = [];
  let writing = false;

  const take = (): Array<Waiting<I, O>> => {
    if (!opts.key) return queue.splice(0, opts.max);
    const keys = new Set<string>();
    const taken: Array<Waiting<I, O>> = [];
    const rest: Array<Waiting<I, O>> = [];
    for (const w of queue) {
      const k = opts.key(w.item);
      if (taken.length < opts.max && !keys.has(k)) {
        keys.add(k);
        taken.push(w);
      } else rest.push(w);
    }
    queue = rest;
    return taken;
  };

  const alone = (w: Waiting<I, O>) => opts.one(w.item).then(w.resolve, w.reject);

  async function write(ws: Array<Waiting<I, O>>): Promise<void> {
    if (ws.length === 1) return alone(ws[0]!);
    let out: O[];
    try {
      out = await opts.batch(ws.map((w) => w.item));
    } catch (err) {
      opts.log.warn(
        { err: (err as Error).message, items: ws.length, what: opts.what },
        "batch failed; writing one by one",
      );
      await Promise.all(ws.map(alone));
      return;
    }
    for (const [i, w] of ws.entries()) w.resolve(out[i]!);
  }

  async function drain(): Promise<void> {
    writing = true;
    try {
      while (queue.length) await write(take());
    } finally {
      writing = false;
    }
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      // Deferred to the end of this turn of the event loop: callers woken together share the first batch.
      if (!writing) {
        writing = true;
        setImmediate(() => void drain());
      }
    });
}
