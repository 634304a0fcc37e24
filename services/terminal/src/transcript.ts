import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { open, stat, truncate, type FileHandle } from "node:fs/promises";

/** asciicast v2 (https://docs.asciinema.org/manual/asciicast/v2/): a JSON header line, then one JSON array per event. */
export function headerLine(h: { cols: number; rows: number; openedAtMs: number; shell: string; title: string }): string {
  return `${JSON.stringify({ version: 2, width: h.cols, height: h.rows, timestamp: Math.floor(h.openedAtMs / 1000), env: { ...(h.shell ? { SHELL: h.shell } : {}), TERM: "xterm-256color" }, title: h.title })}\n`;
}

const secs = (elapsedMs: number) => Math.max(0, Math.round(elapsedMs * 1000) / 1e6);
export const outputLine = (elapsedMs: number, text: string) => `${JSON.stringify([secs(elapsedMs), "o", text])}\n`;
export const resizeLine = (elapsedMs: number, cols: number, rows: number) => `${JSON.stringify([secs(elapsedMs), "r", `${cols}x${rows}`])}\n`;
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
  /** Queues a line; it reaches the file within the flush interval. */
  append(line: string): void;
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
  let pending: string[] = [];
  let pendingBytes = 0;
  let chain: Promise<void> = Promise.resolve();
  let lastSync = Date.now();
  let dirty = false;
  let closed = false;
  let failed: Error | undefined;

  const write = () => {
    if (pending.length === 0) return chain;
    const data = pending.join("");
    pending = [];
    pendingBytes = 0;
    chain = chain.then(async () => {
      try {
        await fh.write(data);
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
