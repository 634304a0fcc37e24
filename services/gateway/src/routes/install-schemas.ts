import { z } from "zod";
import { AGENT_VERSION_RE, AGENT_VERSION_RULE } from "@orch/contracts";
import { invalid } from "@orch/kit";

export const VersionParams = z.object({ version: z.string().describe(AGENT_VERSION_RULE) });
export const FileParams = VersionParams.extend({ file: z.string().describe("a package file the manifest lists") });

/** A path segment is used in a filesystem path only after it matched these (no traversal). */
export function checkVersion(v: string): string {
  if (!AGENT_VERSION_RE.test(v)) throw invalid("invalid_version", `version must be ${AGENT_VERSION_RULE}`);
  return v;
}
