import { ULID_48BIT_RE } from "@orch/contracts";

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const MAX_TIME = 2 ** 48 - 1;

/** The smallest ULID of millisecond `ms`: every id created at or after `ms` sorts at or above it. */
export function ulidFloor(ms: number): string {
  let t = Math.min(Math.max(Math.floor(ms), 0), MAX_TIME);
  let out = "";
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return `${out}${"0".repeat(16)}`;
}

/** Milliseconds encoded in a ULID's first ten characters. */
export function ulidTime(id: string): number {
  let t = 0;
  for (const c of id.slice(0, 10)) t = t * 32 + ALPHABET.indexOf(c);
  return t;
}

/** Normalises a ULID (case-insensitive per the spec); undefined when it is not one. */
export function parseUlid(s: string): string | undefined {
  const up = s.toUpperCase();
  return ULID_48BIT_RE.test(up) ? up : undefined;
}

/**
 * How far an event's ULID time may lie from its `timestamp`. Time bounds become id bounds widened
 * by this much (so the primary key drives the scan), then `ts` decides exactly. The kit mints the
 * id and the timestamp from the same clock within a millisecond; ingest logs events beyond it.
 */
export const ID_TIME_SKEW_MS = 5 * 60_000;
