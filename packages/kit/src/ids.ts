import { ULID_RE } from "@orch/contracts";
import { monotonicFactory } from "ulid";

/** Injected so tests can pin time. Milliseconds since the epoch. */
export interface Clock {
  now(): number;
}
export const systemClock: Clock = { now: () => Date.now() };

/** Injected so tests can make ids deterministic. */
export interface IdGenerator {
  /** A ULID: sortable by creation time. */
  next(): string;
}

export function ulidGenerator(clock: Clock = systemClock): IdGenerator {
  const gen = monotonicFactory();
  return { next: () => gen(clock.now()) };
}

export function isUlid(s: string): boolean {
  return ULID_RE.test(s);
}
