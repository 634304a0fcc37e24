import { type FileHandle, open } from "node:fs/promises";
import type { TerminalService } from "@orch/contracts";
import { invalid, notFound, type Handlers } from "@orch/kit";
import { sessionsDb } from "../db/sessions.js";
import type { TerminalDeps } from "../deps.js";
import type { Recordings } from "../recordings.js";
import { visible } from "./visibility.js";

type TranscriptHandlers = Pick<Handlers<typeof TerminalService>, "readTranscript">;

/** Below NATS's default 1 MiB payload limit with room for the envelope. */
export const MAX_CHUNK = 512 * 1024;

export function transcriptHandlers(deps: TerminalDeps, recordings: Recordings): TranscriptHandlers {
  return {
    async readTranscript(req, ctx) {
      const row = visible(await sessionsDb.get(deps.pool, req.sessionId), ctx.actor, req.sessionId);
      if (!Number.isInteger(req.offset) || req.offset < 0)
        throw invalid("invalid_request", "offset must be a non-negative integer", { field: "offset" });
      const limit = req.limit > 0 ? Math.min(req.limit, MAX_CHUNK) : MAX_CHUNK;
      let fh: FileHandle;
      try {
        fh = await open(recordings.transcriptPath(row.transcript_file), "r");
      } catch {
        throw notFound(
          "transcript_not_found",
          `the transcript of session '${row.id}' is not on this service's storage`,
        );
      }
      try {
        const { size } = await fh.stat();
        const want = Math.max(0, Math.min(limit, size - req.offset));
        const buf = Buffer.alloc(want);
        const { bytesRead } = want > 0 ? await fh.read(buf, 0, want, req.offset) : { bytesRead: 0 };
        return {
          data: buf.subarray(0, bytesRead),
          size,
          eof: req.offset + bytesRead >= size,
          sha256: row.sha256 ?? "",
        };
      } finally {
        await fh.close();
      }
    },
  };
}
