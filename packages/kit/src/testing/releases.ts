import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatReleaseManifest } from "@orch/contracts";

/** Writes `<dir>/<version>/manifest.json` for a release without packages: a releases.dir fixture. */
export function publishTestRelease(dir: string, version: string): void {
  mkdirSync(join(dir, version), { recursive: true });
  writeFileSync(
    join(dir, version, "manifest.json"),
    formatReleaseManifest({
      schema: 1,
      name: "orch-agent",
      version,
      node_version: "v24.0.0",
      created_at: new Date(0).toISOString(),
      packages: [],
    }),
  );
}
