/**
 * npm run build:agent-package [-- --version V] [--out DIR] [--signing-key FILE]
 * npm run build:agent-package -- --sign DIR --signing-key FILE
 * The self-contained orch-agent packages (.deb, tarball, manifest.json and its signature
 * manifest.json.sig) in <out>/<version>/; or, with --sign, a new signature for a release directory
 * already built (key rotation: docs/agent-install.md#release-signing-key).
 * Importing this file (tests, benches) runs nothing: buildAgentPackage is the API.
 */
import { existsSync, realpathSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { loadReleaseSigningKey, signReleaseDir } from "@orch/kit/releases";
import { upStateDir } from "../lib/up-state.mjs";
import { buildAgentPackage, DEFAULT_OUT_DIR, REPO } from "./package.js";

export { buildAgentPackage, type BuildOptions, type BuildResult } from "./package.js";

/** The development key `npm run up` creates (in its state dir); used when no key is named and it exists. */
const DEV_KEY = join(upStateDir(process.env, REPO), "release.key");

const USAGE = `usage: npm run build:agent-package -- [--version V] [--out DIR (dist/agent-releases)] [--signing-key FILE]
       npm run build:agent-package -- --sign <out>/<version> [--signing-key FILE]
  --signing-key FILE  Ed25519 private key (PKCS#8 PEM) that signs the manifest; default
                      $ORCH_RELEASE_SIGNING_KEY_FILE, else npm run up's development key
                      (.orch/release.key, or in ORCH_UP_STATE_DIR)`;

function signingKeyFile(given: string | undefined): string {
  const file = given ?? (process.env.ORCH_RELEASE_SIGNING_KEY_FILE || undefined);
  if (file) return file;
  if (existsSync(DEV_KEY)) {
    console.log(`build:agent-package: signing with the DEVELOPMENT key ${DEV_KEY}`);
    return DEV_KEY;
  }
  throw new Error(
    "no release signing key: give --signing-key FILE (or ORCH_RELEASE_SIGNING_KEY_FILE); make one with openssl genpkey -algorithm ed25519 -out release.key",
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      version: { type: "string" },
      out: { type: "string" },
      "signing-key": { type: "string" },
      sign: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const signingKey = await loadReleaseSigningKey(signingKeyFile(values["signing-key"]));
  if (values.sign !== undefined) {
    const dir = resolve(values.sign);
    const sig = await signReleaseDir(dir, signingKey);
    console.log(`${join(dir, "manifest.json.sig")}: ${sig}`);
    return;
  }
  const { dir, manifest } = await buildAgentPackage({
    version: values.version,
    outDir: values.out ?? DEFAULT_OUT_DIR,
    signingKey,
    log: (l) => console.log(`build:agent-package: ${l}`),
  });
  console.log(`orch-agent ${manifest.version} (node ${manifest.node_version}) in ${dir}, manifest signed`);
  for (const p of manifest.packages)
    console.log(`  ${p.file}  ${(p.size / 1024 / 1024).toFixed(1)} MB  sha256 ${p.sha256}`);
}

const entry = process.argv[1] ? realpathSync(process.argv[1]) : "";
if (entry === realpathSync(fileURLToPath(import.meta.url)))
  await main().catch((err: Error) => {
    console.error(`build:agent-package: ${err.message}`);
    process.exit(1);
  });
