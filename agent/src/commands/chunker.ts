import type { OutputStream } from "../state/proc.js";
import { cutPoint, incompleteTail } from "./utf8.js";

/** Published output is batched: a message per flush, not per read. */
export const CHUNK_FLUSH_BYTES = 16 * 1024;
export const CHUNK_FLUSH_MS = 50;

export interface OutputChunk {
  stream: OutputStream;
  data: Uint8Array;
  seq: number;
}

export interface ChunkerOptions {
  /** Receives each chunk in order; seq is 1, 2, 3, ... across both streams. */
  emit(chunk: OutputChunk): void;
  flushBytes?: number;
  flushMs?: number;
  /** Runs `fn` after `ms`; returns a cancel. Injected by tests. */
  schedule?: (fn: () => void, ms: number) => () => void;
}

export interface Chunker {
  push(stream: OutputStream, data: Uint8Array): void;
  /** Flushes everything, including an incomplete trailing sequence (the output ended there). */
  end(): void;
}

const timeout = (fn: () => void, ms: number) => {
  const t = setTimeout(fn, ms);
  return () => clearTimeout(t);
};

/**
 * Batches one job's output for publishing: flushes at `flushBytes` or `flushMs` after the first
 * unflushed byte, whichever comes first. A chunk never splits a UTF-8 sequence: an incomplete one
 * at the end of a read waits for the rest of its stream. A switch of stream flushes the other
 * stream's batch first, so chunks keep the order the output was read in.
 */
export function createChunker(opts: ChunkerOptions): Chunker {
  const flushBytes = opts.flushBytes ?? CHUNK_FLUSH_BYTES;
  const flushMs = opts.flushMs ?? CHUNK_FLUSH_MS;
  const schedule = opts.schedule ?? timeout;
  const carry = new Map<OutputStream, Uint8Array>();
  let pending: { stream: OutputStream; parts: Uint8Array[]; size: number } | undefined;
  let cancelTimer: (() => void) | undefined;
  let seq = 0;
  let ended = false;

  const emit = (stream: OutputStream, data: Uint8Array) => opts.emit({ stream, data, seq: ++seq });

  /** Emits whole `flushBytes` pieces of the batch; with `all`, the rest too. */
  const drain = (all: boolean) => {
    if (!pending) return;
    let data = Buffer.concat(pending.parts);
    while (data.length >= flushBytes || (all && data.length > 0)) {
      const n = cutPoint(data, flushBytes);
      emit(pending.stream, data.subarray(0, n));
      data = data.subarray(n);
    }
    pending = data.length > 0 ? { stream: pending.stream, parts: [data], size: data.length } : undefined;
  };

  const flush = () => {
    cancelTimer?.();
    cancelTimer = undefined;
    drain(true);
  };

  return {
    push(stream, data) {
      if (ended) return;
      const held = carry.get(stream);
      let b = held ? Buffer.concat([held, data]) : data;
      carry.delete(stream);
      const tail = incompleteTail(b);
      if (tail > 0) {
        carry.set(stream, Uint8Array.from(b.subarray(b.length - tail)));
        b = b.subarray(0, b.length - tail);
      }
      if (b.length === 0) return;
      if (pending && pending.stream !== stream) flush();
      pending ??= { stream, parts: [], size: 0 };
      pending.parts.push(b);
      pending.size += b.length;
      if (pending.size >= flushBytes) drain(false);
      if (!pending) {
        cancelTimer?.();
        cancelTimer = undefined;
      } else cancelTimer ??= schedule(flush, flushMs);
    },
    end() {
      if (ended) return;
      ended = true;
      flush();
      for (const s of ["stdout", "stderr"] as const) {
        const held = carry.get(s);
        if (held) emit(s, held);
      }
      carry.clear();
    },
  };
}
