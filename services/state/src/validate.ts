import { randomBytes } from "node:crypto";
import {
  INT32_MAX,
  checkBranch,
  checkInterval,
  checkRef,
  checkSourcePath,
  checkWebhookSecret,
  NAME_RE,
  NAME_RULE,
  parseSelector,
  SelectorError,
  SOURCE_DEFAULT_BRANCH,
  SOURCE_PLAN_WAIT_DEFAULT_S,
  SOURCE_PLAN_WAIT_MAX_S,
  SOURCE_SSH_KEY_MAX,
  SOURCE_TOKEN_MAX,
  ULID_RE,
  sourceUrlKind,
  type CreateSourceRequest,
  type SourceAuthKind,
  type Violation,
} from "@orch/contracts";
import { classifyAddress, invalid, pageLimit } from "@orch/kit";
import type { StateConfig } from "./config.js";
import type { GitAuth } from "./sources/seal.js";

/**
 * The state service's input rules, each in one place: its handlers call them, and a git source's
 * files are checked with the same functions, so a file is refused exactly when the same request
 * would be. The service re-checks what the gateway checked.
 */

/** Validates a module, assignment or source name. */
export function validName(name: string, field: string, what: string): string {
  if (!NAME_RE.test(name)) throw invalid("invalid_request", `${what} ${field} must be ${NAME_RULE}`, { field });
  return name;
}

export const MAX_WAIT_SECONDS = 300;

export function waitMs(seconds: number): number {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_WAIT_SECONDS)
    throw invalid("invalid_request", `wait must be an integer between 0 and ${MAX_WAIT_SECONDS} seconds`, {
      field: "wait",
    });
  return seconds * 1000;
}

export function kindOf(kind: string): "apply" | "plan" {
  if (kind !== "apply" && kind !== "plan")
    throw invalid("invalid_request", "kind must be apply or plan", { field: "kind" });
  return kind;
}

// Modules and assignments.

const MAX_MODULES = 100;
/** Characters of an assignment's description (the API and a git source's assignment files alike). */
export const MAX_DESCRIPTION = 1000;
const MAX_RUNS_PAGE = 200;

/** An uploaded module's content must hold something before it is parsed. */
export function checkModuleContent(content: string): void {
  if (!content.trim()) throw invalid("invalid_module", "content is empty", { field: "content" });
}

export function checkSelector(selector: string): void {
  try {
    parseSelector(selector);
  } catch (err) {
    if (err instanceof SelectorError)
      throw invalid("invalid_selector", `selector: ${err.message}`, { field: "selector", position: err.position });
    throw err;
  }
}

/** The list without repeats, in first-seen order. */
export function checkModuleList(modules: readonly string[]): string[] {
  if (modules.length === 0)
    throw invalid("invalid_request", "modules must name at least one module", { field: "modules" });
  if (modules.length > MAX_MODULES)
    throw invalid("invalid_request", `at most ${MAX_MODULES} modules`, { field: "modules" });
  for (const [i, m] of modules.entries()) validName(m, `modules.${i}`, "module");
  return [...new Set(modules)];
}

export function checkDescription(description: string): void {
  if (description.length > MAX_DESCRIPTION)
    throw invalid("invalid_request", `description is longer than ${MAX_DESCRIPTION} characters`, {
      field: "description",
    });
}

/** The request's selector, modules and description, validated the same way for create and update. */
export function checkDefinition(req: { selector: string; modules: readonly string[]; description?: string }) {
  checkSelector(req.selector);
  const modules = checkModuleList(req.modules);
  if (req.description !== undefined) checkDescription(req.description);
  // Stored trimmed: an assignment file's selector is too.
  return { selector: req.selector.trim(), modules, description: req.description ?? null };
}

/** How many failed targets stop a run (absent: no limit); int32 on the wire and an integer column. */
export function checkMaxFailures(value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > INT32_MAX)
    throw invalid("invalid_request", "max_failures must be a non-negative integer", { field: "max_failures" });
}

export const runsPageLimit = (limit: number | undefined) => pageLimit(limit, 50, MAX_RUNS_PAGE);

// Operations.

const OPERATION_KINDS = new Set(["apply", "plan", "drift"]);
const OPERATION_STATUSES = new Set(["pending", "running", "succeeded", "failed", "timed_out", "unreachable"]);
/** Results make a row heavy (diffs), so a page with them is smaller. */
const MAX_WITH_RESULTS = 100;

export const operationsPageLimit = (limit: number | undefined, withResults: boolean) =>
  withResults ? pageLimit(limit, 50, MAX_WITH_RESULTS) : pageLimit(limit);

/** ListOperations' filters; returns the run id as stored (upper case). */
export function checkOperationFilter(f: { runId: string; kind: string; status: string }): string {
  const runId = f.runId.toUpperCase();
  if (runId && !ULID_RE.test(runId))
    throw invalid("invalid_request", "run_id must be a run id (ULID)", { field: "run_id" });
  if (f.kind && !OPERATION_KINDS.has(f.kind))
    throw invalid("invalid_request", "kind must be apply, plan or drift", { field: "kind" });
  if (f.status && !OPERATION_STATUSES.has(f.status))
    throw invalid("invalid_request", `status must be one of ${[...OPERATION_STATUSES].join(", ")}`, {
      field: "status",
    });
  return runId;
}

// Git sources.

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

/** Validates a CreateSource request with the rules the gateway and CLI apply. */
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

/** PlanSource's ref: the source's branch when none is given. */
export function planRef(ref: string, branch: string): string {
  const chosen = ref === "" ? branch : ref;
  const bad = checkRef(chosen);
  if (bad) throw invalid(bad.reason, `ref ${bad.message}`, { field: "ref" });
  return chosen;
}

/** How long PlanSource waits for the plan, in ms. */
export function planWaitMs(seconds: number | undefined): number {
  const wait = seconds ?? SOURCE_PLAN_WAIT_DEFAULT_S;
  if (!Number.isInteger(wait) || wait < 0 || wait > SOURCE_PLAN_WAIT_MAX_S)
    throw invalid("invalid_request", `wait_seconds must be an integer from 0 to ${SOURCE_PLAN_WAIT_MAX_S}`, {
      field: "wait_seconds",
    });
  return wait * 1000;
}
