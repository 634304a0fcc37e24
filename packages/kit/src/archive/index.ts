/**
 * The one safe archive reader (tar, tar.gz, zip), shared by the state service (bundle uploads) and
 * the agent (`archive` resources): every rule about what an archive may contain lives here.
 * Imported as `@orch/kit/archive` only, never from kit's root, so that a service that reads no
 * archive does not load tar or yauzl.
 */
export type { ArchiveEntry, ArchiveFormat, ArchiveLimits } from "./types.js";
export { ArchiveError, type ArchiveErrorCode } from "./errors.js";
export { detectArchiveFormat } from "./format.js";
export { ARCHIVE_LIMITS } from "./limits.js";
export { readArchive } from "./read.js";
