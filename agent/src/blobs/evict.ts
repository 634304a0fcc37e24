// The blob cache's size cap as pure decisions: what a pass deletes, what the current shipments pin,
// and when one shipment alone can never fit. cache.ts does the I/O (lists, stats, unlinks, utimes).

/** `--blob-cache-max-bytes` when none is given: 4 GiB. 0 means no cap. */
export const DEFAULT_BLOB_CACHE_MAX_BYTES = 4 * 1024 ** 3;

/** A partial blob untouched this long was left by a transfer nobody will resume: a pass drops it. */
export const PARTIAL_STALE_MS = 24 * 60 * 60 * 1000;

/**
 * How long a shipment's blobs stay pinned: until the operation's deadline (BlobsMissing carries the
 * operation's time left as its own), but never less than PIN_MIN_MS (a request without a deadline
 * gets 30 s; the server's clock may run ahead of ours) nor more than PIN_MAX_MS.
 */
export const PIN_MIN_MS = 10 * 60 * 1000;
export const PIN_MAX_MS = 24 * 60 * 60 * 1000;

/** One file under `blobs/`: a complete blob (`sha256/<hex>`) or a partial transfer (`partial/<hex>`). */
export interface CacheEntry {
  hex: string;
  size: number;
  /** Last use, Unix ms: the file's mtime (written, appended to, handed to a provider, or named by BlobsMissing). */
  usedAt: number;
  partial: boolean;
}

export interface EvictionInput {
  entries: readonly CacheEntry[];
  /** The cap in bytes; 0 = no cap (stale partials are still dropped). */
  maxBytes: number;
  now: number;
  /** Hexes never removed: the blob just completed, and the blobs pinned by shipments in progress. */
  keep: ReadonlySet<string>;
  staleAfterMs?: number;
}

export interface EvictionChoice {
  /** What to delete, in order: stale partials first, then least recently used first. */
  remove: CacheEntry[];
  /** How many of `remove` are stale partials (dropped whatever the cap). */
  stale: number;
  totalBefore: number;
  totalAfter: number;
  /** Bytes still over the cap after the pass: what is kept (in use) alone exceeds it. */
  overBy: number;
}

const lru = (a: CacheEntry, b: CacheEntry) =>
  a.usedAt - b.usedAt || Number(b.partial) - Number(a.partial) || (a.hex < b.hex ? -1 : a.hex > b.hex ? 1 : 0);

/**
 * One pass: drops partials untouched for `staleAfterMs`, then, while the total (complete and
 * partial bytes) exceeds the cap, the least recently used entry that is not kept. Kept entries are
 * never removed even when they alone exceed the cap: `overBy` says by how much.
 */
export function chooseEvictions(input: EvictionInput): EvictionChoice {
  const { entries, maxBytes, now, keep } = input;
  const staleBefore = now - (input.staleAfterMs ?? PARTIAL_STALE_MS);
  const totalBefore = sum(entries);
  const stale = entries.filter((e) => e.partial && e.usedAt < staleBefore && !keep.has(e.hex)).sort(lru);
  const dropped = new Set(stale);
  const remove = [...stale];
  let total = totalBefore - sum(stale);
  if (maxBytes > 0 && total > maxBytes) {
    const candidates = entries.filter((e) => !keep.has(e.hex) && !dropped.has(e)).sort(lru);
    for (const e of candidates) {
      if (total <= maxBytes) break;
      remove.push(e);
      total -= e.size;
    }
  }
  return {
    remove,
    stale: stale.length,
    totalBefore,
    totalAfter: total,
    overBy: maxBytes > 0 ? Math.max(0, total - maxBytes) : 0,
  };
}

/**
 * The blobs one BlobsMissing call named: an apply's whole set, shipped before it runs. Its blobs
 * are pinned until `until`; `sizes` holds what is known of each (a cached blob's size at once, a
 * missing one's from its first chunk).
 */
export interface Shipment {
  until: number;
  sizes: Map<string, number | undefined>;
}

/** When a shipment's pins expire, from the BlobsMissing request's deadline. */
export function pinUntil(now: number, deadline: number | undefined): number {
  return Math.min(Math.max(deadline ?? 0, now + PIN_MIN_MS), now + PIN_MAX_MS);
}

/** The shipments still pinning at `now`. */
export function liveShipments(shipments: readonly Shipment[], now: number): Shipment[] {
  return shipments.filter((s) => s.until > now);
}

/** Every hex pinned by a live shipment. */
export function pinnedHexes(shipments: readonly Shipment[], now: number): Set<string> {
  const out = new Set<string>();
  for (const s of liveShipments(shipments, now)) for (const hex of s.sizes.keys()) out.add(hex);
  return out;
}

/**
 * Whether a chunk of `hex` (a blob of `size` bytes) may be taken: the bytes known of each live
 * shipment naming it, this blob included, must fit under the cap, since a shipment's blobs cannot
 * evict each other. Answers the shipment's known total when it cannot fit, else undefined; a blob
 * no shipment names is checked alone. Records `size` in the shipments (the caller's objects).
 */
export function shipmentOverCap(
  shipments: readonly Shipment[],
  now: number,
  hex: string,
  size: number,
  maxBytes: number,
): number | undefined {
  if (maxBytes <= 0) return undefined;
  const naming = liveShipments(shipments, now).filter((s) => s.sizes.has(hex));
  if (naming.length === 0) return size > maxBytes ? size : undefined;
  let worst: number | undefined;
  for (const s of naming) {
    s.sizes.set(hex, size);
    let total = 0;
    for (const n of s.sizes.values()) total += n ?? 0;
    if (total > maxBytes && (worst === undefined || total > worst)) worst = total;
  }
  return worst;
}

function sum(entries: readonly CacheEntry[]): number {
  let n = 0;
  for (const e of entries) n += e.size;
  return n;
}
