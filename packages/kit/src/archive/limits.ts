import { ArchiveError } from "./errors.js";
import type { ArchiveLimits } from "./types.js";

/**
 * 100,000 entries, 1 GiB inflated, and at most 100 inflated bytes per archive byte (Apache POI's
 * ZipSecureFile default, 1:100), the ratio only once RATIO_FLOOR bytes are inflated.
 */
export const ARCHIVE_LIMITS: ArchiveLimits = Object.freeze({
  maxEntries: 100_000,
  maxBytes: 1024 ** 3,
  maxRatio: 100,
});

/** Below this many inflated bytes the ratio is not checked: a small bundle of text compresses far better than 1:100. */
export const RATIO_FLOOR = 16 * 1024 ** 2;

export function resolveLimits(limits: Partial<ArchiveLimits> = {}): ArchiveLimits {
  const out = { ...ARCHIVE_LIMITS };
  for (const k of ["maxEntries", "maxBytes", "maxRatio"] as const) {
    const v = limits[k];
    if (v === undefined) continue;
    if (typeof v !== "number" || !(v > 0))
      throw new RangeError(`archive limit ${k} must be a positive number (got ${v})`);
    out[k] = v;
  }
  return out;
}

/**
 * Counts inflated bytes as they come out of a decoder, against maxBytes and the ratio to the
 * archive file's size: a bomb is stopped after inflating little more than the limit, whatever its
 * headers declare.
 */
export class InflateBudget {
  private inflated = 0;
  private entries = 0;

  constructor(
    private readonly limits: ArchiveLimits,
    private readonly archiveBytes: number,
  ) {}

  /** Counts `n` inflated bytes of `entry` (the entry they belong to, for the error). */
  take(n: number, entry: string | undefined): void {
    this.inflated += n;
    if (this.inflated > this.limits.maxBytes)
      throw new ArchiveError(
        "too_large",
        `the archive inflates to more than ${this.limits.maxBytes} bytes (the limit)`,
        entry,
      );
    if (this.inflated > RATIO_FLOOR && this.inflated > this.limits.maxRatio * Math.max(this.archiveBytes, 1))
      throw new ArchiveError(
        "ratio",
        `the archive inflates to more than ${this.limits.maxRatio} times its ${this.archiveBytes} bytes (a compression bomb?)`,
        entry,
      );
  }

  /** Counts one more entry. */
  entry(name: string): void {
    if (++this.entries > this.limits.maxEntries)
      throw new ArchiveError(
        "too_many_entries",
        `the archive has more than ${this.limits.maxEntries} entries (the limit)`,
        name,
      );
  }
}
