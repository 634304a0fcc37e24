import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatReleaseManifest } from "@orch/contracts";
import { RELEASE_SIGNATURE_FILE, signManifest } from "../releases.js";

/** Signs what publishTestRelease writes: a release is published signed or not at all (readReleaseCatalog). */
const testReleaseKey = generateKeyPairSync("ed25519").privateKey;

/**
 * Writes `<dir>/<version>/manifest.json` and its signature for a release without packages: a
 * releases.dir fixture.
 */
export function publishTestRelease(dir: string, version: string): void {
  mkdirSync(join(dir, version), { recursive: true });
  const text = formatReleaseManifest({
    schema: 1,
    name: "orch-agent",
    version,
    node_version: "v24.0.0",
    created_at: new Date(0).toISOString(),
    packages: [],
  });
  writeFileSync(join(dir, version, "manifest.json"), text);
  writeFileSync(join(dir, version, RELEASE_SIGNATURE_FILE), `${signManifest(Buffer.from(text), testReleaseKey)}\n`);
}
