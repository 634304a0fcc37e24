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

/**
 * `outputLine` for output that is plain ASCII (most of what a terminal prints), built from the
 * bytes: the same line without decoding to a string, JSON-escaping it and encoding it back.
 * Undefined for empty or non-ASCII data, or unusually many escapes: use `outputLine` then.
 */
export function outputLineBytes(elapsedMs: number, data: Uint8Array): Buffer | undefined {
  const n = data.length;
  if (n === 0 || !isAscii(data)) return undefined;
  const head = `[${JSON.stringify(secs(elapsedMs))},"o","`;
  // \r\n and colour codes cost a few bytes each; past this budget the string path is as good.
  let spare = (n >> 2) + 16;
  const out = Buffer.allocUnsafe(head.length + n + spare + 3);
  let o = out.write(head, 0, "latin1");
  // Runs between escapes (a terminal line is tens of bytes between its \r\n) are copied natively,
  // through a Buffer view so a run costs no new object; short ones byte by byte, cheaper than the
  // native call. The inner loop is the hot one: one table load per byte.
  const src = Buffer.from(data.buffer, data.byteOffset, n);
  let i = 0;
  for (;;) {
    const run = i;
    while (i < n && PLAIN[data[i]!] === 1) i++;
    if (i - run > NATIVE_COPY_MIN) o += src.copy(out, o, run, i);
    else for (let k = run; k < i; k++) out[o++] = data[k]!;
    if (i === n) break;
    const e = ESCAPES[data[i]!]!;
    spare -= e.length - 1;
    if (spare < 0) return undefined;
    for (let k = 0; k < e.length; k++) out[o++] = e[k]!;
    i++;
  }
  out[o++] = 0x22; // "
  out[o++] = 0x5d; // ]
  out[o++] = 0x0a; // \n
  return out.subarray(0, o);
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
  /** Writes everything queued now. */
  flush(): Promise<void>;
  /** Flushes, syncs to disk and closes. */
  close(): Promise<void>;
}

/**
 * Appends lines to the file in batches: at least every `flushIntervalMs` (so a crash loses at
 * most that much), at once beyond 256 KiB pending. Data is fdatasync'ed at most once a second.
 */
export async function openTranscript(path: string, flushIntervalMs: number): Promise<TranscriptWriter> {
  const fh = await open(path, "a", 0o600);
  let pending: Array<string | Uint8Array> = [];
  let pendingBytes = 0;
  let chain: Promise<void> = Promise.resolve();
  let lastSync = Date.now();
  let dirty = false;
  let closed = false;
  let failed: Error | undefined;

  const write = () => {
    if (pending.length === 0) return chain;
    // Output arrives as bytes: one writev, no joining into a string and encoding it again.
    const data = pending.map((l) => (typeof l === "string" ? Buffer.from(l, "utf8") : l));
    pending = [];
    pendingBytes = 0;
    chain = chain.then(async () => {
      try {
        await fh.writev(data);
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
  const timer = setInterval(() => void write(), flushIntervalMs);
  timer.unref();

  return {
    append(line) {
      if (closed) return;
      pending.push(line);
      pendingBytes += line.length;
      if (pendingBytes >= 256 * 1024) void write();
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
