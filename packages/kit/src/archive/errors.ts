export type ArchiveErrorCode =
  | "unknown_format"
  | "corrupt"
  | "unsafe_path"
  | "unsafe_link"
  | "unsupported_entry"
  | "too_many_entries"
  | "too_large"
  | "ratio";

/**
 * Why an archive was refused, and at which entry (its name as stored, undefined when the archive
 * as a whole is refused). Whatever a consumer made of earlier entries must be thrown away: a
 * refusal may come after them (a link found unsafe only once a later link is known, a corrupt end).
 */
export class ArchiveError extends Error {
  override name = "ArchiveError";
  constructor(
    readonly code: ArchiveErrorCode,
    message: string,
    readonly entry: string | undefined = undefined,
  ) {
    super(entry === undefined ? message : `${JSON.stringify(entry)}: ${message}`);
  }
}

/** Anything a decoder (zlib, node-tar, yauzl) throws while reading is a damaged archive. */
export function asArchiveError(e: unknown, entry: string | undefined): ArchiveError {
  if (e instanceof ArchiveError) return e;
  return new ArchiveError("corrupt", (e as Error)?.message ?? String(e), entry);
}
