import type { Violation } from "./violation.js";

/**
 * Git sources (`/api/v1/sources`): the input rules the gateway's schemas, the CLI and the state
 * service all apply, and the repository layout a sync reads. Messages never repeat the input (a
 * URL or a secret may carry a credential someone pasted).
 */

/** Scheduled sync period bounds and default (seconds). */
export const SOURCE_INTERVAL_MIN_S = 10;
export const SOURCE_INTERVAL_MAX_S = 86_400;
export const SOURCE_INTERVAL_DEFAULT_S = 300;
export const SOURCE_DEFAULT_BRANCH = "main";
/**
 * How long a manual sync request waits for the sync before answering with the source as it stands
 * (the sync goes on); the gateway adds it to its bus timeout for the sync and plan routes.
 */
export const SOURCE_SYNC_WAIT_S = 50;
/** A plan's wait for its agents' plan runs: default and bound (seconds). */
export const SOURCE_PLAN_WAIT_DEFAULT_S = 60;
export const SOURCE_PLAN_WAIT_MAX_S = 300;
/** Webhook secrets: at least this long when given (generated ones are 32 random bytes, base64url). */
export const WEBHOOK_SECRET_MIN = 16;
export const WEBHOOK_SECRET_MAX = 256;
export const SOURCE_URL_MAX = 2048;
export const SOURCE_TOKEN_MAX = 4096;
export const SOURCE_SSH_KEY_MAX = 16 * 1024;
/** Files a tree may hold under modules/ and assignments/ together. */
export const SOURCE_MAX_FILES = 1000;
/** Where a tree keeps its objects, under the source's path; files end in .yaml or .yml. */
export const SOURCE_MODULES_DIR = "modules";
export const SOURCE_ASSIGNMENTS_DIR = "assignments";
/** Approval policies a source manages (docs/approvals.md): `approval-policies/<name>.yaml`. */
export const SOURCE_POLICIES_DIR = "approval-policies";
export const SOURCE_FILE_RE = /^[^/]+\.ya?ml$/;
export const SOURCE_STATUSES = ["pending", "ok", "error"] as const;
export type SourceStatus = (typeof SOURCE_STATUSES)[number];
export const SOURCE_AUTH_KINDS = ["none", "token", "ssh_key"] as const;
export type SourceAuthKind = (typeof SOURCE_AUTH_KINDS)[number];
/** Who a sync acts as in events and runs: `source:<name>`. */
export const sourceActorId = (name: string) => `source:${name}`;

/** How a URL reaches the repository; scp-like is git's `user@host:path`. */
export type SourceUrlKind = "https" | "http" | "ssh" | "file";

const SCP_LIKE = /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!\/\/)[^\s]+$/;

/** The URL's kind, or a violation: unknown schemes, credentials in the URL, spaces or control characters. */
export function sourceUrlKind(url: string): SourceUrlKind | Violation {
  const bad = (message: string): Violation => ({ reason: "invalid_source", message });
  if (url.length === 0 || url.length > SOURCE_URL_MAX) return bad(`must be 1-${SOURCE_URL_MAX} characters`);
  if (/[\s\u0000-\u001f\u007f]/.test(url)) return bad("must not contain spaces or control characters");
  if (SCP_LIKE.test(url)) return "ssh";
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return bad("must be an https://, http://, ssh://, user@host:path or file:// URL");
  }
  const scheme = u.protocol.slice(0, -1);
  if (scheme === "file") return u.host === "" ? "file" : bad("must be a local file:///path URL");
  if (scheme !== "https" && scheme !== "http" && scheme !== "ssh")
    return bad("must be an https://, http://, ssh://, user@host:path or file:// URL");
  if (u.password !== "" || (scheme !== "ssh" && u.username !== ""))
    return bad("must not carry credentials: give them as auth, which is stored sealed");
  if (u.hostname === "") return bad("must name a host");
  return scheme;
}

/**
 * A branch name as git's check-ref-format allows it (a practical subset): no `..`, `@{`, `//`,
 * leading `-` or `/`, trailing `/`, `.` or `.lock`, no control characters or ` ~^:?*[\`.
 */
export const BRANCH_RE =
  /^(?!-)(?!\/)(?!.*\/\/)(?!.*\.\.)(?!.*@\{)(?!.*\/$)(?!.*\.$)(?!.*\.lock$)[A-Za-z0-9._/-]{1,200}$/;
export const COMMIT_SHA_RE = /^[0-9a-f]{7,64}$/;

export function checkBranch(branch: string): Violation | null {
  return BRANCH_RE.test(branch) ? null : { reason: "invalid_source", message: "must be a valid git branch name" };
}

/** A plan's ref: a branch name or a commit SHA (full or abbreviated, at least 7 hex digits). */
export function checkRef(ref: string): Violation | null {
  return BRANCH_RE.test(ref) || COMMIT_SHA_RE.test(ref)
    ? null
    : { reason: "invalid_ref", message: "must be a branch name or a commit SHA" };
}

/** The directory inside the repository: relative, no `.` or `..` segments ("" = the root). */
export function checkSourcePath(path: string): Violation | null {
  if (path === "") return null;
  const segs = path.replace(/\/+$/, "").split("/");
  const ok = path.length <= 512 && !path.startsWith("/") && segs.every((s) => s !== "" && s !== "." && s !== "..");
  return ok ? null : { reason: "invalid_source", message: "must be a relative directory without '.' or '..' segments" };
}

export function checkInterval(s: number): Violation | null {
  return Number.isInteger(s) && s >= SOURCE_INTERVAL_MIN_S && s <= SOURCE_INTERVAL_MAX_S
    ? null
    : {
        reason: "invalid_source",
        message: `must be an integer from ${SOURCE_INTERVAL_MIN_S} to ${SOURCE_INTERVAL_MAX_S}`,
      };
}

export function checkWebhookSecret(s: string): Violation | null {
  return s.length >= WEBHOOK_SECRET_MIN && s.length <= WEBHOOK_SECRET_MAX
    ? null
    : { reason: "invalid_source", message: `must be ${WEBHOOK_SECRET_MIN}-${WEBHOOK_SECRET_MAX} characters` };
}
