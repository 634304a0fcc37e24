/** A refused download: the caller turns it into `download_failed`. */
export class DownloadError extends Error {
  constructor(
    message: string,
    /** The body was bigger than allowed (for a package: not the size its manifest announced). */
    readonly tooLarge = false,
  ) {
    super(message);
  }
}

/**
 * GETs `url` into memory with a deadline for the whole transfer and a size cap (a manifest or a
 * package the manifest already announced the size of: anything bigger is not what we asked for).
 */
export async function download(url: string, opts: { timeoutMs: number; maxBytes: number }): Promise<Buffer> {
  let res: Response;
  const signal = AbortSignal.timeout(opts.timeoutMs);
  try {
    res = await fetch(url, { signal, redirect: "error" });
  } catch (err) {
    throw new DownloadError(`${url}: ${(err as Error).name === "TimeoutError" ? "timed out" : (err as Error).message}`);
  }
  if (!res.ok || !res.body) {
    await res.body?.cancel().catch(() => undefined);
    throw new DownloadError(`${url}: HTTP ${res.status}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (size > opts.maxBytes) throw new DownloadError(`${url}: larger than ${opts.maxBytes} bytes`, true);
      chunks.push(Buffer.from(chunk));
    }
  } catch (err) {
    if (err instanceof DownloadError) throw err;
    throw new DownloadError(`${url}: ${(err as Error).name === "TimeoutError" ? "timed out" : (err as Error).message}`);
  }
  return Buffer.concat(chunks);
}
