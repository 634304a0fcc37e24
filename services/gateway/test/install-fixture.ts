import { execFileSync } from "node:child_process";
import { createHash, generateKeyPairSync, type KeyObject } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatReleaseManifest, type ReleaseManifest, type ReleasePackage } from "@orch/contracts";
import { RELEASE_SIGNATURE_FILE, signManifest, systemClock, ulidGenerator, type Logger } from "@orch/kit";
import { silentLogger, type NatsHandle } from "@orch/kit/testing";
import { buildGateway } from "../src/app.js";
import { gatewayConfigSchema } from "../src/config.js";

export interface ReleaseFixture {
  /** releases.dir */
  dir: string;
  /** The release signing key (Ed25519 PKCS#8 PEM) the build signs with: never the gateway's. */
  keyFile: string;
  /** releases.public_key_file: the public half (SPKI PEM). */
  pubFile: string;
  /** SPKI PEM of the key. */
  publicKeyPem: string;
  /**
   * Adds `<dir>/<version>/` with a tar.gz per arch (bin/orch-agent is a sh script) and a fake .deb,
   * and manifest.json signed as the build signs it (`signWith` another key to test refusals).
   */
  addRelease(version: string, signWith?: KeyObject): ReleaseManifest;
  cleanup(): void;
}

/** A releases directory the way `npm run build:agent-package` lays it out, with tiny fake packages. */
export function releaseFixture(): ReleaseFixture {
  const root = mkdtempSync(join(tmpdir(), "orch-releases-"));
  const dir = join(root, "releases");
  mkdirSync(dir);
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const keyFile = join(root, "release.key");
  writeFileSync(keyFile, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
  const publicKeyPem = publicKey.export({ type: "spki", format: "pem" }).toString();
  const pubFile = join(root, "release.pub");
  writeFileSync(pubFile, publicKeyPem);
  const pkg = (file: string, kind: "deb" | "tar", arch: "amd64" | "arm64", bytes: Buffer): ReleasePackage => ({
    file,
    kind,
    arch,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    size: bytes.length,
  });
  return {
    dir,
    keyFile,
    pubFile,
    publicKeyPem,
    addRelease(version, signWith = privateKey) {
      const vdir = join(dir, version);
      mkdirSync(vdir, { recursive: true });
      const tree = join(root, `tree-${version}`);
      const rel = join(tree, "opt/orch-agent/releases", version);
      mkdirSync(join(rel, "bin"), { recursive: true });
      writeFileSync(join(rel, "bin/orch-agent"), `#!/bin/sh\necho "orch-agent ${version} (node v0.0.0-test)"\n`);
      chmodSync(join(rel, "bin/orch-agent"), 0o755);
      writeFileSync(join(rel, "package.json"), `${JSON.stringify({ name: "orch-agent", version })}\n`);
      symlinkSync(`releases/${version}`, join(tree, "opt/orch-agent/current"));
      mkdirSync(join(tree, "usr/bin"), { recursive: true });
      symlinkSync("/opt/orch-agent/current/bin/orch-agent", join(tree, "usr/bin/orch-agent"));
      mkdirSync(join(tree, "lib/systemd/system"), { recursive: true });
      writeFileSync(
        join(tree, "lib/systemd/system/orch-agent.service"),
        "[Service]\nExecStart=/opt/orch-agent/current/bin/orch-agent\n",
      );
      const packages: ReleasePackage[] = [];
      for (const arch of ["amd64", "arm64"] as const) {
        const tar = `orch-agent-${version}-linux-${arch}.tar.gz`;
        execFileSync("tar", ["-czf", join(vdir, tar), "-C", tree, "opt", "usr", "lib"]);
        packages.push(pkg(tar, "tar", arch, readFileSync(join(vdir, tar))));
        const deb = `orch-agent_${version}_${arch}.deb`;
        const debBytes = Buffer.from(`not really a deb (${version} ${arch})\n`);
        writeFileSync(join(vdir, deb), debBytes);
        packages.push(pkg(deb, "deb", arch, debBytes));
      }
      rmSync(tree, { recursive: true, force: true });
      const m: ReleaseManifest = {
        schema: 1,
        name: "orch-agent",
        version,
        node_version: "v24.0.0",
        created_at: new Date(0).toISOString(),
        packages,
      };
      const text = formatReleaseManifest(m);
      writeFileSync(join(vdir, "manifest.json"), text);
      writeFileSync(join(vdir, RELEASE_SIGNATURE_FILE), `${signManifest(Buffer.from(text), signWith)}\n`);
      return m;
    },
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** The real gateway (as harness.ts starts it) with releases.* set. */
export async function startInstallGateway(
  nats: NatsHandle,
  releases: { dir?: string; public_key_file?: string },
  http: Record<string, unknown> = {},
  log: Logger = silentLogger(),
) {
  const nc = await nats.connect("gateway");
  const config = gatewayConfigSchema.parse({
    http: { port: 0, host: "127.0.0.1", ...http },
    gateway: { services: ["agents"] },
    releases,
  });
  const { app, tokens } = await buildGateway({
    config,
    log,
    nc,
    clock: systemClock,
    ids: ulidGenerator(systemClock),
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  return {
    url,
    async stop() {
      await app.close();
      tokens.stop();
      await nc.close();
    },
  };
}
