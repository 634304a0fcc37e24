/**
 * npm run build:agent-package [-- --version V] [--out DIR]
 * The self-contained orch-agent packages (.deb, tarball, manifest.json) in <out>/<version>/.
 * Importing this file (tests, benches) runs nothing: buildAgentPackage is the API.
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { buildAgentPackage, DEFAULT_OUT_DIR } from "./package.js";

export { buildAgentPackage, type BuildOptions, type BuildResult } from "./package.js";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { version: { type: "string" }, out: { type: "string" }, help: { type: "boolean", short: "h" } },
  });
  if (values.help) {
    console.log("usage: npm run build:agent-package -- [--version V] [--out DIR (dist/agent-releases)]");
    return;
  }
  const { dir, manifest } = await buildAgentPackage({
    version: values.version,
    outDir: values.out ?? DEFAULT_OUT_DIR,
    log: (l) => console.log(`build:agent-package: ${l}`),
  });
  console.log(`orch-agent ${manifest.version} (node ${manifest.node_version}) in ${dir}`);
  for (const p of manifest.packages)
    console.log(`  ${p.file}  ${(p.size / 1024 / 1024).toFixed(1)} MB  sha256 ${p.sha256}`);
}

const entry = process.argv[1] ? realpathSync(process.argv[1]) : "";
if (entry === realpathSync(fileURLToPath(import.meta.url)))
  await main().catch((err: Error) => {
    console.error(`build:agent-package: ${err.message}`);
    process.exit(1);
  });
