import { z } from "zod";
import { compareVersions } from "@orch/contracts";
import type { OrchError, ReleaseCatalog } from "@orch/kit";

/** The reasons the install line cannot work that the release listing reports rather than fails with. */
export const InstallUnavailableCode = z.enum(["agent_packages_unavailable", "release_signing_unavailable"]);

export const ReleasesOut = z.object({
  latest: z.string().nullable().describe("the version the install script installs by default; null when none"),
  versions: z.array(z.string()).describe("every published version whose signature verifies, newest first"),
  unavailable: z
    .object({ code: InstallUnavailableCode, detail: z.string().describe("why, and how to publish a package") })
    .nullable()
    .describe("why /install/agent.sh cannot install an agent now; null when it can (as far as the releases go)"),
});
export type ReleasesOut = z.infer<typeof ReleasesOut>;

export function releasesJson(c: ReleaseCatalog & { latest: string }): ReleasesOut {
  return {
    latest: c.latest,
    versions: [...c.versions.keys()].sort((a, b) => compareVersions(b, a)),
    unavailable: null,
  };
}

/** undefined for an error that is not one of the listed reasons (it stays an error). */
export function releasesUnavailableJson(err: OrchError): ReleasesOut | undefined {
  const code = InstallUnavailableCode.safeParse(err.reason);
  if (!code.success) return undefined;
  return { latest: null, versions: [], unavailable: { code: code.data, detail: err.message } };
}
