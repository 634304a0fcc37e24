import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import {
  AGENT_VERSION_RE,
  AGENT_VERSION_RULE,
  AgentsService,
  RELEASE_FILE_RE,
  type ErrorReason,
} from "@orch/contracts";
import { OrchError, invalid, notFound, rpcClient } from "@orch/kit";
import type { GatewayContext } from "../app.js";
import { problem, sendProblem } from "../problem.js";
import { publicBaseUrl } from "../public-url.js";
import { route } from "../route.js";
import { installReleases, type InstallReleases } from "./install-releases.js";
import { agentShTemplate, linkAddress, renderAgentSh } from "./install-script.js";

const VersionParams = z.object({ version: z.string().describe(AGENT_VERSION_RULE) });
const FileParams = VersionParams.extend({ file: z.string().describe("a package file the manifest lists") });
const NO_RELEASE: ErrorReason[] = ["agent_packages_unavailable", "agent_version_not_found"];

/** A path segment is used in a filesystem path only after it matched these (no traversal). */
function checkVersion(v: string): string {
  if (!AGENT_VERSION_RE.test(v)) throw invalid("invalid_version", `version must be ${AGENT_VERSION_RULE}`);
  return v;
}

/**
 * /install: the one-line install script and the signed orch-agent releases it downloads
 * (docs/agent-install.md). Public: a machine being installed has no credentials yet, and nothing
 * here is secret — the script embeds only public values (addresses, fingerprint, public key).
 */
export function installRoutes(ctx: GatewayContext) {
  const agents = rpcClient(ctx.nc, "agents", AgentsService, { timeoutMs: ctx.timeoutMs });
  // Built on first use: the route table is also built without a running gateway (openApiDocument).
  let cache: InstallReleases | undefined;
  const releases = () =>
    (cache ??= installReleases({
      dir: ctx.config.releases.dir,
      signingKeyFile: ctx.config.releases.signing_key_file,
      clock: ctx.clock,
      log: ctx.log,
    }));

  return [
    route({
      method: "GET",
      path: "/install/agent.sh",
      auth: "public",
      summary: "The orch-agent install script (POSIX sh)",
      description:
        "text/x-shellscript: `curl -fsSL <base>/install/agent.sh | sudo sh -s -- --token <join token>`. Embeds this " +
        "server's base URL, the agent link's address and pinned fingerprint, the release public key and the latest " +
        "version; it verifies the signed manifest and the package's SHA-256 before installing anything.",
      tags: ["install"],
      responses: { 200: z.string().meta({ description: "text/x-shellscript" }) },
      errors: { 404: ["agent_packages_unavailable"], 503: ["release_signing_unavailable", "service_unavailable"] },
      async handler({ raw }, reply) {
        const catalog = await releases().catalog();
        const signer = await releases().signer();
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
        const baseUrl = publicBaseUrl(ctx.config.http, raw);
        const script = renderAgentSh(await agentShTemplate(), {
          baseUrl,
          server: linkAddress(baseUrl, link.advertiseAddress, link.port),
          fingerprint: link.fingerprint,
          insecure: link.insecure,
          version: catalog.latest,
          releasePub: signer.publicKeyPem,
        });
        return reply.type("text/x-shellscript; charset=utf-8").send(script);
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
        const signer = await releases().signer();
        return reply.type("application/x-pem-file").send(signer.publicKeyPem);
      },
    }),
    route({
      method: "GET",
      path: "/install/releases/{version}/manifest.json",
      auth: "public",
      summary: "A release's manifest, byte for byte as signed",
      tags: ["install"],
      params: VersionParams,
      responses: { 200: z.string().meta({ description: "application/json: the manifest bytes" }) },
      errors: { 400: ["invalid_version"], 404: NO_RELEASE },
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
        "Check with `base64 -d < manifest.json.sig > sig.bin; openssl pkeyutl -verify -pubin -inkey release.pub -rawin -in manifest.json -sigfile sig.bin`.",
      tags: ["install"],
      params: VersionParams,
      responses: { 200: z.string().meta({ description: "text/plain: base64 signature" }) },
      errors: { 400: ["invalid_version"], 404: NO_RELEASE, 503: ["release_signing_unavailable"] },
      async handler({ params }, reply) {
        const e = await releases().version(checkVersion(params.version));
        const signer = await releases().signer();
        return reply.type("text/plain; charset=utf-8").send(`${signer.sign(e)}\n`);
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
      errors: { 400: ["invalid_version"], 404: [...NO_RELEASE, "route_not_found"] },
      async handler({ params }, reply) {
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
        return reply
          .type(pkg.kind === "deb" ? "application/vnd.debian.binary-package" : "application/gzip")
          .header("content-length", st.size)
          .header("content-disposition", `attachment; filename="${pkg.file}"`)
          .send(createReadStream(path));
      },
    }),
  ];
}
