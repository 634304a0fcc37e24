import { isAscii } from "node:buffer";
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { open, stat, truncate, type FileHandle } from "node:fs/promises";

/** asciicast v2 (https://docs.asciinema.org/manual/asciicast/v2/): a JSON header line, then one JSON array per event. */
export function headerLine(h: {
  cols: number;
  rows: number;
  openedAtMs: number;
  shell: string;
  title: string;
}): string {
  return `${JSON.stringify({ version: 2, width: h.cols, height: h.rows, timestamp: Math.floor(h.openedAtMs / 1000), env: { ...(h.shell ? { SHELL: h.shell } : {}), TERM: "xterm-256color" }, title: h.title })}\n`;
}

const secs = (elapsedMs: number) => Math.max(0, Math.round(elapsedMs * 1000) / 1e6);
export const outputLine = (elapsedMs: number, text: string) => `${JSON.stringify([secs(elapsedMs), "o", text])}\n`;

// JSON.stringify's own escapes for the ASCII bytes it escapes (controls, '"', '\'); others pass.
const ESCAPES = Array.from({ length: 128 }, (_, c) => {
  const e = JSON.stringify(String.fromCharCode(c)).slice(1, -1);
  return e.length > 1 ? Buffer.from(e, "latin1") : undefined;
});
/** 1 for the ASCII bytes that JSON leaves as they are. */
const PLAIN = Uint8Array.from(ESCAPES, (e) => (e === undefined ? 1 : 0));
/** Runs longer than this are copied with Buffer#copy. */
const NATIVE_COPY_MIN = 16;
/** Bytes of a line besides the escaped output: `[<secs>,"o","` (a double is at most 24 characters) and `"]\n`. */
const LINE_FRAME_MAX = 40;

/** Escape growth allowed per line: \r\n and colour codes cost a few bytes each; past this the string path is as good. */
const spareFor = (n: number) => (n >> 2) + 16;
/** The most bytes `writeOutputLine` may write for `n` bytes of output. */
export const outputLineMax = (n: number) => LINE_FRAME_MAX + n + spareFor(n);

/** Aligned copy of unaligned input, so four bytes are tested at once (reused: one per process). */
let words = new Int32Array(16 * 1024);

/**
 * Writes the asciicast "o" line of plain ASCII `data` into `out` at `o` (room for
 * `outputLineMax(data.length)` bytes) and returns where it ends, or -1 when the data is not ASCII,
 * is empty or needs unusually many escapes (the string path writes those). The same bytes as
 * `outputLine` of the decoded text, without decoding to a string, JSON-escaping it and encoding it
 * back.
 */
export function writeOutputLine(out: Buffer, o: number, elapsedMs: number, data: Uint8Array): number {
  const n = data.length;
  if (n === 0 || !isAscii(data)) return -1;
  let spare = spareFor(n);
  o += out.write(`[${JSON.stringify(secs(elapsedMs))},"o","`, o, "latin1");
  // Four bytes at a time (bytes are < 0x80 here): a word without a control byte, '"' or '\\' is
  // skipped with a few integer operations; only words holding one are looked at byte by byte.
  // Runs between escapes (a terminal line is tens of bytes between its \r\n) are copied natively
  // when long, byte by byte when short (cheaper than the native call).
  const count = n >> 2;
  let view: Int32Array;
  if ((data.byteOffset & 3) === 0) view = new Int32Array(data.buffer, data.byteOffset, count);
  else {
    if (words.length < count) words = new Int32Array(count + 1024);
    new Uint8Array(words.buffer, 0, count << 2).set(data.subarray(0, count << 2));
    view = words;
  }
  const src = Buffer.from(data.buffer, data.byteOffset, n);
  let run = 0;
  let w = 0;
  for (;;) {
    let from: number;
    let to: number;
    if (w < count) {
      const x = view[w]!;
      const q = x ^ 0x22222222;
      const b = x ^ 0x5c5c5c5c;
      // High bit of a byte set where that byte is < 0x20, '"' or '\\' (exact for "any", which is all we ask).
      if (((((x - 0x20202020) & ~x) | ((q - 0x01010101) & ~q) | ((b - 0x01010101) & ~b)) & 0x80808080) === 0) {
        w++;
        continue;
      }
      from = w << 2;
      to = from + 4;
      w++;
    } else {
      from = count << 2;
      to = n;
    }
    for (let i = from; i < to; i++) {
      const c = data[i]!;
      if (PLAIN[c] === 1) continue;
      if (i - run > NATIVE_COPY_MIN) o += src.copy(out, o, run, i);
      else for (let k = run; k < i; k++) out[o++] = data[k]!;
      const e = ESCAPES[c]!;
      spare -= e.length - 1;
      if (spare < 0) return -1;
      for (let k = 0; k < e.length; k++) out[o++] = e[k]!;
      run = i + 1;
    }
    if (to === n) break;
  }
  if (n - run > NATIVE_COPY_MIN) o += src.copy(out, o, run, n);
  else for (let k = run; k < n; k++) out[o++] = data[k]!;
  out[o++] = 0x22; // "
  out[o++] = 0x5d; // ]
  out[o++] = 0x0a; // \n
  return o;
}

/**
 * `outputLine` for output that is plain ASCII (most of what a terminal prints), in a buffer of
 * its own. Undefined when `writeOutputLine` declines: use `outputLine` then.
 */
export function outputLineBytes(elapsedMs: number, data: Uint8Array): Buffer | undefined {
  const out = Buffer.allocUnsafe(outputLineMax(data.length));
  const end = writeOutputLine(out, 0, elapsedMs, data);
  return end < 0 ? undefined : out.subarray(0, end);
}
export const resizeLine = (elapsedMs: number, cols: number, rows: number) =>
  `${JSON.stringify([secs(elapsedMs), "r", `${cols}x${rows}`])}\n`;
export const markerLine = (elapsedMs: number, label: string) => `${JSON.stringify([secs(elapsedMs), "m", label])}\n`;

/** Cuts a half-written last line (a crash mid-write) so appended events stay parseable. */
export async function repairTail(path: string): Promise<void> {
  let fh: FileHandle;
  try {
    fh = await open(path, "r");
  } catch {
    return;
  }
  let keep: number | undefined;
  try {
    const { size } = await fh.stat();
    if (size === 0) return;
    const window = Math.min(size, 1024 * 1024);
    const buf = Buffer.alloc(window);
    await fh.read(buf, 0, window, size - window);
    if (buf[window - 1] !== 0x0a) keep = size - window + buf.lastIndexOf(0x0a) + 1;
  } finally {
    await fh.close().catch(() => {});
  }
  if (keep !== undefined) await truncate(path, Math.max(0, keep));
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  try {
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  return hash.digest("hex");
}

export async function fileSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

export interface TranscriptWriter {
  /** Queues a line (text or its UTF-8 bytes); it reaches the file within the flush interval. */
  append(line: string | Uint8Array): void;
  /**
   * Queues the "o" line of plain ASCII output, escaped straight into the writer's own buffers;
   * false (nothing queued) when `writeOutputLine` declines the data: append `outputLine` then.
   */
  output(elapsedMs: number, data: Uint8Array): boolean;
  /** Writes everything queued now. */
  flush(): Promise<void>;
  /** Flushes, syncs to disk and closes. */
  close(): Promise<void>;
}

/**
 * Output lines are escaped into arenas sized for a few lines like the current one, within these
 * bounds: an interactive session's stay small, sustained output cycles between two of the largest.
 */
const ARENA_MAX = 1024 * 1024;
const ARENA_MIN = 16 * 1024;
const ARENA_LINES = 4;

/**
 * Appends lines to the file in batches: at least every `flushIntervalMs` (so a crash loses at
 * most that much), at once beyond 256 KiB pending. Data is fdatasync'ed at most once a second.
 */
export async function openTranscript(path: string, flushIntervalMs: number): Promise<TranscriptWriter> {
  const fh = await open(path, "a", 0o600);
  let pending: Array<string | Uint8Array> = [];
  let pendingBytes = 0;
  // Output lines are views of an arena, filled front to back. A full arena is retired; it is
  // reused (not reallocated: sustained output would otherwise allocate every byte again) once the
  // write holding its last lines has completed. Writes run in order, so that is the first write
  // started after the retirement.
  let arena: Buffer = Buffer.allocUnsafe(0);
  let arenaAt = 0;
  let retired: Buffer[] = [];
  let spare: Buffer | undefined;
  /** Output arrived since the last timer tick; a writer idle for a tick lets go of its arenas. */
  let busy = false;
  let chain: Promise<void> = Promise.resolve();
  let lastSync = Date.now();
  let dirty = false;
  let closed = false;
  let failed: Error | undefined;

  const write = () => {
    if (pending.length === 0) return chain;
    // Output arrives as bytes: one writev, no joining into a string and encoding it again.
    const data = pending.map((l) => (typeof l === "string" ? Buffer.from(l, "utf8") : l));
    const done = retired;
    pending = [];
    pendingBytes = 0;
    retired = [];
    chain = chain.then(async () => {
      try {
        await fh.writev(data);
        // One arena kept for the next retirement; a busy session then cycles between two.
        for (const a of done) spare = a;
        dirty = true;
        if (Date.now() - lastSync >= 1000) {
          lastSync = Date.now();
          dirty = false;
          await fh.datasync();
        }
      } catch (err) {
        failed ??= err as Error;
      }
    });
    return chain;
  };
  const timer = setInterval(() => {
    if (!busy) {
      // Lines still queued or being written keep their arena alive; only our hold on it ends.
      spare = undefined;
      arena = Buffer.allocUnsafe(0);
      arenaAt = 0;
    }
    busy = false;
    void write();
  }, flushIntervalMs);
  timer.unref();

  const queue = (line: string | Uint8Array) => {
    pending.push(line);
    pendingBytes += line.length;
    if (pendingBytes >= 256 * 1024) void write();
  };

  return {
    append(line) {
      if (!closed) queue(line);
    },
    output(elapsedMs, data) {
      if (closed) return true;
      busy = true;
      const max = outputLineMax(data.length);
      if (arena.length - arenaAt < max) {
        if (arenaAt > 0) retired.push(arena);
        const size = Math.max(max, Math.min(ARENA_MAX, ARENA_LINES * max), ARENA_MIN);
        arena = spare && spare.length >= size ? spare : Buffer.allocUnsafe(size);
        if (arena === spare) spare = undefined;
        arenaAt = 0;
      }
      const end = writeOutputLine(arena, arenaAt, elapsedMs, data);
      if (end < 0) return false;
      const line = arena.subarray(arenaAt, end);
      arenaAt = end;
      queue(line);
      return true;
    },
    async flush() {
      await write();
      if (failed) throw failed;
    },
    async close() {
      if (closed) return chain;
      closed = true;
      clearInterval(timer);
      await write();
      if (dirty) await fh.datasync().catch(() => {});
      await fh.close().catch(() => {});
      if (failed) throw failed;
    },
  };
}
