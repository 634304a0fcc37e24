import { randomBytes } from "node:crypto";
import {
  checkBranch,
  checkInterval,
  checkSourcePath,
  checkWebhookSecret,
  SOURCE_DEFAULT_BRANCH,
  SOURCE_SSH_KEY_MAX,
  SOURCE_TOKEN_MAX,
  sourceUrlKind,
  type CreateSourceRequest,
  type SourceAuthKind,
  type Violation,
} from "@orch/contracts";
import { classifyAddress, invalid } from "@orch/kit";
import type { StateConfig } from "../config.js";
import type { GitAuth } from "../sources/seal.js";
import { validName } from "../validate.js";

/** What CreateSource stores once its request passed every rule (secrets still in clear: sealed next). */
export interface SourceInput {
  name: string;
  url: string;
  branch: string;
  path: string;
  interval_s: number;
  auth_kind: SourceAuthKind;
  auth: GitAuth | undefined;
  webhook_secret: string;
  /** Whether the secret was generated here (it is then returned once, like a given one). */
  generated_secret: boolean;
}

const USERNAME_RE = /^[A-Za-z0-9._@+-]{1,128}$/;

const refuse = (v: Violation, field: string) => invalid(v.reason, `${field} ${v.message}`, { field });
const badAuth = (message: string) => invalid("invalid_source", `auth ${message}`, { field: "auth" });

/** A token sent over plain http would cross the network in clear; loopback never leaves the host. */
function isLoopbackHost(url: string): boolean {
  const host = new URL(url).hostname;
  return host === "localhost" || classifyAddress(host)?.reason === "loopback";
}

function checkAuth(req: CreateSourceRequest, url: string, kind: string): { kind: SourceAuthKind; auth?: GitAuth } {
  const token = req.auth?.token ?? "";
  const sshKey = req.auth?.sshKey ?? "";
  const username = req.auth?.username ?? "";
  if (token === "" && sshKey === "") {
    if (username !== "") throw badAuth("username needs a token");
    return { kind: "none" };
  }
  if (token !== "" && sshKey !== "") throw badAuth("must carry a token or an ssh_key, not both");
  if (token !== "") {
    if (kind !== "https" && kind !== "http") throw badAuth("token needs an https:// URL");
    if (kind === "http" && !isLoopbackHost(url)) throw badAuth("token is never sent over plain http:// (use https://)");
    // Messages describe the value, never repeat it: it is a credential.
    if (token.length > SOURCE_TOKEN_MAX || /[\s\u0000-\u001f\u007f]/.test(token))
      throw badAuth(`token must be 1-${SOURCE_TOKEN_MAX} characters without spaces or control characters`);
    if (username !== "" && !USERNAME_RE.test(username))
      throw badAuth("username must be 1-128 letters, digits or ._@+-");
    return { kind: "token", auth: { token, ...(username ? { username } : {}) } };
  }
  if (kind !== "ssh") throw badAuth("ssh_key needs an ssh:// or user@host:path URL");
  if (username !== "") throw badAuth("username goes in the ssh URL (user@host), not with an ssh_key");
  if (sshKey.length > SOURCE_SSH_KEY_MAX || !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(sshKey))
    throw badAuth(`ssh_key must be a PEM or OpenSSH private key of at most ${SOURCE_SSH_KEY_MAX} characters`);
  // ssh refuses a key file without its final newline.
  return { kind: "ssh_key", auth: { sshKey: sshKey.endsWith("\n") ? sshKey : `${sshKey}\n` } };
}

/** Validates a CreateSource request with the rules the gateway and CLI apply (the service re-checks). */
export function checkCreateSource(req: CreateSourceRequest, config: StateConfig["state"]): SourceInput {
  const name = validName(req.name, "name", "source");
  const kind = sourceUrlKind(req.url);
  if (typeof kind !== "string") throw refuse(kind, "url");
  if (kind === "file" && !config.sources_allow_file_urls)
    throw invalid(
      "source_url_not_allowed",
      "url: file:// sources are not allowed here (state.sources_allow_file_urls)",
      {
        field: "url",
      },
    );
  const branch = req.branch === "" ? SOURCE_DEFAULT_BRANCH : req.branch;
  const badBranch = checkBranch(branch);
  if (badBranch) throw refuse(badBranch, "branch");
  const badPath = checkSourcePath(req.path);
  if (badPath) throw refuse(badPath, "path");
  const interval = req.intervalS ?? config.sources_default_interval_s;
  const badInterval = checkInterval(interval);
  if (badInterval) throw refuse(badInterval, "interval_s");
  const { kind: authKind, auth } = checkAuth(req, req.url, kind);
  if (req.webhookSecret !== undefined) {
    const bad = checkWebhookSecret(req.webhookSecret);
    if (bad) throw refuse(bad, "webhook_secret");
  }
  return {
    name,
    url: req.url,
    branch,
    path: req.path.replace(/\/+$/, ""),
    interval_s: interval,
    auth_kind: authKind,
    auth,
    webhook_secret: req.webhookSecret ?? randomBytes(32).toString("base64url"),
    generated_secret: req.webhookSecret === undefined,
  };
}
