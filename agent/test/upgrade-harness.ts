import { execFileSync } from "node:child_process";
import { createHash, generateKeyPairSync, type KeyObject } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatReleaseManifest, tarFileName, type ReleaseManifest } from "@orch/contracts";
import { releasePublicKeyPem, signManifest } from "@orch/kit/releases";
import type { AgentHandlers, AgentRuntime } from "../src/runtime.js";
import type { AgentUpgradeService } from "@orch/contracts";

/**
 * A real install root in a temp dir (`<root>/releases/<v>/bin/orch-agent` sh scripts, `current`),
 * release tarballs built with tar, manifests signed with a test key, served by node:http the way
 * the gateway's /install routes serve them.
 */
export interface Fixture {
  dir: string;
  root: string;
  dataDir: string;
  keyFile: string;
  key: KeyObject;
  /** Files served under /releases/<path>; tests replace entries to tamper. */
  files: Map<string, Buffer>;
  url: string;
  publish(version: string, opts?: { tamper?: boolean; signWith?: KeyObject }): void;
  close(): Promise<void>;
}

export function releaseScript(version: string): string {
  return `#!/bin/sh\necho "orch-agent ${version} (node v24.0.0)"\n`;
}

/** Installs `version` as the running release (what dpkg -i or the install script leaves). */
export function installRelease(root: string, version: string): string {
  const dir = join(root, "releases", version);
  mkdirSync(join(dir, "bin"), { recursive: true });
  writeFileSync(join(dir, "bin/orch-agent"), releaseScript(version));
  chmodSync(join(dir, "bin/orch-agent"), 0o755);
  symlinkSync(join("releases", version), join(root, "current"));
  return dir;
}

export function buildTarball(work: string, version: string): Buffer {
  const tree = mkdtempSync(join(work, "tree-"));
  const bin = join(tree, "opt/orch-agent/releases", version, "bin");
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, "orch-agent"), releaseScript(version));
  chmodSync(join(bin, "orch-agent"), 0o755);
  writeFileSync(
    join(tree, "opt/orch-agent/releases", version, "package.json"),
    `{"name":"orch-agent","version":"${version}"}\n`,
  );
  const out = join(work, `${version}.tar.gz`);
  execFileSync("tar", ["-czf", out, "-C", tree, "opt"]);
  rmSync(tree, { recursive: true, force: true });
  return readFileSync(out);
}

export async function startFixture(): Promise<Fixture> {
  const dir = mkdtempSync(join(tmpdir(), "orch-upgrade-"));
  const root = join(dir, "opt/orch-agent");
  const dataDir = join(dir, "data");
  mkdirSync(dataDir, { recursive: true });
  const { privateKey } = generateKeyPairSync("ed25519");
  const keyFile = join(dir, "release.pub");
  writeFileSync(keyFile, releasePublicKeyPem(privateKey));
  const files = new Map<string, Buffer>();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "").replace(/^\/install\/releases\//, "");
    const body = files.get(path);
    if (!body) {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200, { "content-length": body.length }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/install`;
  return {
    dir,
    root,
    dataDir,
    keyFile,
    key: privateKey,
    files,
    url,
    publish(version, opts = {}) {
      const tar = buildTarball(dir, version);
      const file = tarFileName(version, "amd64");
      const manifest: ReleaseManifest = {
        schema: 1,
        name: "orch-agent",
        version,
        node_version: "v24.0.0",
        created_at: new Date(0).toISOString(),
        packages: [
          {
            file,
            kind: "tar",
            arch: "amd64",
            sha256: createHash("sha256").update(tar).digest("hex"),
            size: tar.length,
          },
        ],
      };
      const bytes = Buffer.from(formatReleaseManifest(manifest));
      files.set(`${version}/manifest.json`, bytes);
      files.set(`${version}/manifest.json.sig`, Buffer.from(signManifest(bytes, opts.signWith ?? privateKey)));
      // Tampered: same size, one byte changed after the manifest was signed.
      const served = Buffer.from(tar);
      if (opts.tamper) served[served.length - 10] = served[served.length - 10]! ^ 0xff;
      files.set(`${version}/${file}`, served);
    },
    async close() {
      await new Promise<void>((r) => server.close(() => r()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A runtime standing in for the daemon: captures the served handlers, link-up listeners and exits. */
export function fakeRuntime(opts: { dataDir: string; packagesUrl?: string; releaseKeyFile?: string }) {
  let handlers: AgentHandlers<typeof AgentUpgradeService> | undefined;
  const linkUp: Array<() => void> = [];
  const exits: number[] = [];
  const silent = { debug() {}, info() {}, warn() {}, error() {} };
  const rt: AgentRuntime = {
    nodeId: "node-test",
    dataDir: opts.dataDir,
    options: {
      server: undefined,
      discover: false,
      discoveryPort: 0,
      terminalEnabled: false,
      shells: [],
      metricsIntervalSeconds: 60,
      trust: { kind: "insecure" },
      packagesUrl: opts.packagesUrl,
      releaseKeyFile: opts.releaseKeyFile,
    },
    log: silent,
    serve(_service, h) {
      handlers = h as unknown as AgentHandlers<typeof AgentUpgradeService>;
    },
    publish() {},
    subscribe: () => () => undefined,
    setAttribute() {},
    onLinkUp(fn) {
      linkUp.push(fn);
    },
    exit(code) {
      exits.push(code);
    },
  };
  return {
    rt,
    exits,
    linkUp: () => {
      for (const fn of linkUp) fn();
    },
    upgrade: (version: string, deadlineSeconds = 60) =>
      handlers!.upgrade({ upgradeId: "01JTEST0000000000000000000", version, deadlineSeconds } as never, {
        deadline: Date.now() + 60_000,
      }),
  };
}
