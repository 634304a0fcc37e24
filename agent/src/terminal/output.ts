import type { SessionTuning } from "./tuning.js";

/**
 * Output after a small publish is taken for interactive (a keystroke's echo after the previous
 * one) and need not wait for the batching window, unless it comes faster than a round trip
 * through the orchestrator could (a program writing small pieces in a tight loop).
 */
const INTERACTIVE_BYTES = 1024;
const INTERACTIVE_GAP_MS = 0.5;

/** Messages of flushBytes an output arena holds before it is replaced. */
const ARENA_FLUSHES = 4;

export interface OutputSink {
  publish(data: Uint8Array): void;
  /** Stop reading the PTY (the shell blocks, nothing is lost) ... */
  pause(): void;
  /** ... and read it again. */
  resume(): void;
}

/**
 * A PTY's output on its way to `.out`: held until released (the first attach, or the attach
 * timeout), then published in batches. This is the hot path of a terminal, hence plain fields and
 * no allocation per chunk.
 */
export class OutputBatcher {
  // Output waiting to be published: arena[start, end). Published messages are views of the arena
  // (the link serializes them later), so it is only appended to; a full arena is replaced and what
  // is pending moves over. One allocation per ARENA_FLUSHES messages instead of a concat per message.
  private arena = Buffer.allocUnsafe(0);
  private start = 0;
  private end = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private lastFlushAt = 0;
  private lastFlushBytes = 0;
  private held = true;
  private paused = false;

  constructor(
    private readonly tuning: SessionTuning,
    private readonly sink: OutputSink,
  ) {}

  /** Publishes what is pending; with `whole`, only full flushBytes messages (the rest waits). */
  flush = (whole = false): void => {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const pendingBytes = this.end - this.start;
    if (this.held || pendingBytes === 0) return;
    const { flushBytes } = this.tuning;
    const until = whole ? this.end - (pendingBytes % flushBytes) : this.end;
    this.lastFlushAt = performance.now();
    this.lastFlushBytes = until - this.start;
    // Bounded messages: NATS (1 MiB by default) and the link (16 MiB) allow more than this.
    for (let i = this.start; i < until; i += flushBytes)
      this.sink.publish(this.arena.subarray(i, Math.min(until, i + flushBytes)));
    this.start = until;
  };

  /** Ends the hold: output flows from now on. */
  release(): void {
    if (!this.held) return;
    this.held = false;
    if (this.paused) {
      this.paused = false;
      this.sink.resume();
    }
    this.flush();
  }

  /** Takes `n` bytes of output from `buf`. */
  write(buf: Uint8Array, n: number): void {
    const wasEmpty = this.end === this.start;
    const pendingBytes = this.take(buf, n);
    const { tuning } = this;
    if (this.held) {
      if (pendingBytes > tuning.holdLimitBytes && !this.paused) {
        this.paused = true;
        this.sink.pause();
      }
      return;
    }
    if (pendingBytes >= tuning.flushBytes) this.flush(true);
    if (this.end === this.start || this.flushTimer) return;
    const since = performance.now() - this.lastFlushAt;
    const interactive =
      since >= tuning.flushDelayMs || (this.lastFlushBytes < INTERACTIVE_BYTES && since >= INTERACTIVE_GAP_MS);
    if (wasEmpty && interactive) this.flush();
    else this.flushTimer = setTimeout(this.flush, tuning.flushDelayMs);
  }

  /** Appends output to the arena; returns the bytes pending. */
  private take(buf: Uint8Array, n: number): number {
    if (this.end + n > this.arena.length) {
      const pendingBytes = this.end - this.start;
      const next = Buffer.allocUnsafe(Math.max(ARENA_FLUSHES * this.tuning.flushBytes, 2 * (pendingBytes + n)));
      this.arena.copy(next, 0, this.start, this.end);
      this.arena = next;
      this.start = 0;
      this.end = pendingBytes;
    }
    this.arena.set(n === buf.length ? buf : buf.subarray(0, n), this.end);
    this.end += n;
    return this.end - this.start;
  }
}
