import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { AgentsService, RELEASE_FILE_RE, type ErrorReason } from "@orch/contracts";
import { OrchError, notFound, rpcClient, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { problem, sendProblem } from "../problem.js";
import { publicBaseUrl } from "../public-url.js";
import { route } from "../route.js";
import { installReleases, type InstallReleases } from "./install-releases.js";
import { ReleasesOut, releasesJson, releasesUnavailableJson } from "./install-json.js";
import { agentShTemplate, linkAddress, renderAgentSh, renderFailingSh } from "./install-script.js";
import { FileParams, VersionParams, checkVersion } from "./install-schemas.js";

type AgentsClient = Client<typeof AgentsService>;

const NO_RELEASE: ErrorReason[] = ["agent_packages_unavailable", "agent_version_not_found"];

/**
 * /install: the one-line install script and the signed orch-agent releases it downloads
 * (docs/agent-install.md); signed at build, only checked here (install-releases.ts). Public: a machine being installed has no credentials yet, and nothing
 * here is secret — the script embeds only public values (addresses, fingerprint, public key).
 */
export function installRoutes(ctx: GatewayContext) {
  const agents = rpcClient(ctx.nc, "agents", AgentsService, { timeoutMs: ctx.timeoutMs });
  // Built on first use: the route table is also built without a running gateway (openApiDocument).
  let cache: InstallReleases | undefined;
  const releases = () =>
    (cache ??= installReleases({
      dir: ctx.config.releases.dir,
      publicKeyFile: ctx.config.releases.public_key_file,
      clock: ctx.clock,
      log: ctx.log,
    }));
  return [...installScriptRoutes(ctx, agents, releases), ...releaseFileRoutes(releases)];
}

/** The install script, the release listing that says whether it can install, and the key it pins. */
function installScriptRoutes(ctx: GatewayContext, agents: AgentsClient, releases: () => InstallReleases) {
  return [
    route({
      method: "GET",
      path: "/install/agent.sh",
      auth: "public",
      summary: "The orch-agent install script (POSIX sh)",
      description:
        "text/x-shellscript: `curl -fsSL <base>/install/agent.sh | sudo sh -s -- --token <join token>`. Embeds this " +
        "server's base URL, the agent link's address and pinned fingerprint, the release public key and the latest " +
        "version; it verifies the signed manifest and the package's SHA-256 before installing anything. When the " +
        "server cannot install an agent (no package published: agent_packages_unavailable; no release key: " +
        "release_signing_unavailable; the agents service down: service_unavailable) the answer is still 200 " +
        "text/x-shellscript, a script that prints the reason on stderr and exits 1: `curl -f` would hand sh " +
        "nothing on an error status, and sh would run that as an empty script that succeeds. " +
        "`GET /api/v1/agent-packages` says the same as JSON.",
      tags: ["install"],
      responses: { 200: z.string().meta({ description: "text/x-shellscript" }) },
      async handler({ raw }, reply) {
        const baseUrl = publicBaseUrl(ctx.config.http, raw);
        const script = await renderScript(baseUrl).catch((err: unknown) => {
          const e = OrchError.from(err);
          // The known refusals are the operator's to fix and said in the script; anything else is ours.
          if (!(err instanceof OrchError)) ctx.log.error({ err }, "install script: rendering failed");
          return renderFailingSh({ baseUrl, code: e.reason, detail: e.message });
        });
        return reply.type("text/x-shellscript; charset=utf-8").send(script);
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/agent-packages",
      auth: "public",
      summary: "The published orch-agent versions, and why none can be installed when so",
      description:
        "What `orchctl join-tokens create` checks before printing an install line: `unavailable` is null when " +
        "`/install/agent.sh` has a release to install, else the reason (agent_packages_unavailable: nothing " +
        "published yet, with how to publish; release_signing_unavailable: no release public key).",
      tags: ["install"],
      responses: { 200: ReleasesOut },
      async handler() {
        try {
          return releasesJson(await releases().catalog());
        } catch (err) {
          const out = err instanceof OrchError ? releasesUnavailableJson(err) : undefined;
          if (!out) throw err;
          return out;
        }
      },
    }),
    route({
      method: "GET",
      path: "/install/release.pub",
      auth: "public",
      summary: "The public key that signs orch-agent release manifests (PEM)",
      tags: ["install"],
      responses: { 200: z.string().meta({ description: "application/x-pem-file (SPKI)" }) },
      errors: { 503: ["release_signing_unavailable"] },
      async handler(_req, reply) {
        return reply.type("application/x-pem-file").send(await releases().publicKey());
      },
    }),
  ];

  /** The real script, or the OrchError that says why there is none. */
  async function renderScript(baseUrl: string): Promise<string> {
    const releasePub = await releases().publicKey();
    const catalog = await releases().catalog();
    const link = await agents.getLinkInfo({}).catch((err: unknown) => {
      ctx.log.warn({ err }, "install script: agents service GetLinkInfo failed");
      throw new OrchError(
        "UNAVAILABLE",
        "service_unavailable",
        "the agents service did not answer; the install script needs the agent link's address",
        {},
        { cause: err },
      );
    });
    return renderAgentSh(await agentShTemplate(), {
      baseUrl,
      server: linkAddress(baseUrl, link.advertiseAddress, link.port),
      fingerprint: link.fingerprint,
      insecure: link.insecure,
      version: catalog.latest,
      releasePub,
    });
  }
}

/** A release's signed manifest, its signature, and the package files it lists. */
function releaseFileRoutes(releases: () => InstallReleases) {
  return [
    route({
      method: "GET",
      path: "/install/releases/{version}/manifest.json",
      auth: "public",
      summary: "A release's manifest, byte for byte as signed",
      tags: ["install"],
      params: VersionParams,
      responses: { 200: z.string().meta({ description: "application/json: the manifest bytes" }) },
      errors: { 400: ["invalid_version"], 404: NO_RELEASE, 503: ["release_signing_unavailable"] },
      async handler({ params }, reply) {
        const e = await releases().version(checkVersion(params.version));
        return reply.type("application/json").send(e.bytes);
      },
    }),
    route({
      method: "GET",
      path: "/install/releases/{version}/manifest.json.sig",
      auth: "public",
      summary: "Base64 Ed25519 signature of a release's manifest.json bytes",
      description:
        "Made once when the package was built (the gateway holds no signing key) and served only when it verifies with this server's release public key. Check with `base64 -d < manifest.json.sig > sig.bin; openssl pkeyutl -verify -pubin -inkey release.pub -rawin -in manifest.json -sigfile sig.bin`.",
      tags: ["install"],
      params: VersionParams,
      responses: { 200: z.string().meta({ description: "text/plain: base64 signature" }) },
      errors: { 400: ["invalid_version"], 404: NO_RELEASE, 503: ["release_signing_unavailable"] },
      async handler({ params }, reply) {
        const e = await releases().version(checkVersion(params.version));
        return reply.type("text/plain; charset=utf-8").send(`${e.sig}\n`);
      },
    }),
    route({
      method: "GET",
      path: "/install/releases/{version}/{file}",
      auth: "public",
      summary: "A package file of a release (only files its manifest lists)",
      tags: ["install"],
      params: FileParams,
      responses: { 200: z.string().meta({ description: "application/octet-stream: the package" }) },
      errors: {
        400: ["invalid_version"],
        404: [...NO_RELEASE, "route_not_found"],
        503: ["release_signing_unavailable"],
      },
      async handler({ params, raw }, reply) {
        const e = await releases().version(checkVersion(params.version));
        const pkg = RELEASE_FILE_RE.test(params.file)
          ? e.manifest.packages.find((p) => p.file === params.file)
          : undefined;
        // Only what the signed manifest lists is served: nothing else in (or above) the directory.
        if (!pkg)
          return sendProblem(
            reply,
            problem("route_not_found", `release ${params.version} lists no file ${params.file}`, {
              files: e.manifest.packages.map((p) => p.file),
            }),
          );
        const path = join(e.dir, pkg.file);
        const st = await stat(path).catch(() => undefined);
        if (!st?.isFile())
          throw notFound("agent_version_not_found", `release ${params.version} is incomplete: ${pkg.file} is missing`);
        // A client that goes away mid-download (ctrl-C, a lost link) is routine: noted at debug, no more.
        reply.raw.once("close", () => {
          if (!reply.raw.writableFinished) raw.log.debug({ file: pkg.file }, "package download aborted");
        });
        return reply
          .type(pkg.kind === "deb" ? "application/vnd.debian.binary-package" : "application/gzip")
          .header("content-length", st.size)
          .header("content-disposition", `attachment; filename="${pkg.file}"`)
          .send(createReadStream(path));
      },
    }),
  ];
}
