import { z } from "zod";
import {
  SOURCE_AUTH_KINDS,
  SOURCE_STATUSES,
  type Source,
  type SourceFileError,
  type SourcePlan,
  type SourceWebhookResult,
} from "@orch/contracts";
import { iso } from "../schemas.js";
import { RunOut, runJson } from "./assignments-json.js";
import { OperationDetailOut, operationDetailJson } from "./state-json.js";

/**
 * The one place a git source, its plan and a webhook's outcome become JSON. The bus never carries
 * a source's credentials or webhook secret, so nothing here can leak them; the secret appears only
 * in the create answer, added by the route.
 */

const isoOrNull = (ms: number) => (ms > 0 ? iso(ms) : null);

export const SourceFileErrorOut = z.object({
  file: z.string().describe('relative to the source\'s path, e.g. "modules/web.yaml" ("" for the tree as a whole)'),
  line: z.number().int().nullable().describe("1-based; null when the problem is not at a line"),
  column: z.number().int().nullable(),
  code: z.string().describe("the code the API would answer for the same content (invalid_module, invalid_selector, …)"),
  message: z.string(),
});

export const SourceOut = z.object({
  name: z.string(),
  url: z.string().describe("never carries credentials"),
  branch: z.string(),
  path: z.string().describe('directory holding modules/ and assignments/ ("" = the repository root)'),
  interval_s: z.number().int().describe("seconds between scheduled syncs"),
  auth: z.enum(SOURCE_AUTH_KINDS).describe("how the repository is reached; the credential itself is never returned"),
  status: z.enum(SOURCE_STATUSES).describe("pending (never synced), ok, or error (the last attempt failed)"),
  commit: z.string().nullable().describe("commit in force (the last successful sync); null before the first"),
  synced_at: z.string().nullable(),
  attempted_at: z.string().nullable(),
  attempted_commit: z.string().nullable().describe("commit of the last attempt; null when the fetch itself failed"),
  next_sync_at: z.string().nullable(),
  error: z.string().nullable().describe("reason of the last failed attempt"),
  errors: z.array(SourceFileErrorOut).describe("per-file errors of the last failed attempt"),
  failures: z.number().int().describe("consecutive failed attempts"),
  module_count: z.number().int(),
  assignment_count: z.number().int(),
  created_at: z.string(),
  created_by: z.string(),
});
export type SourceJson = z.infer<typeof SourceOut>;

export const CreatedSourceOut = SourceOut.extend({
  webhook_secret: z.string().describe("verifies push webhooks; shown this once (given, or generated)"),
});

export const fileErrorJson = (e: SourceFileError) => ({
  file: e.file,
  line: e.line > 0 ? e.line : null,
  column: e.column > 0 ? e.column : null,
  code: e.code,
  message: e.message,
});

export const sourceJson = (s: Source): SourceJson => ({
  name: s.name,
  url: s.url,
  branch: s.branch,
  path: s.path,
  interval_s: s.intervalS,
  auth: s.auth as SourceJson["auth"],
  status: s.status as SourceJson["status"],
  commit: s.commit || null,
  synced_at: isoOrNull(s.syncedAt),
  attempted_at: isoOrNull(s.attemptedAt),
  attempted_commit: s.attemptedCommit || null,
  next_sync_at: isoOrNull(s.nextSyncAt),
  error: s.error || null,
  errors: s.errors.map(fileErrorJson),
  failures: s.failures,
  module_count: s.moduleCount,
  assignment_count: s.assignmentCount,
  created_at: iso(s.createdAt),
  created_by: s.createdBy,
});

const PLAN_CHANGES = ["created", "updated", "unchanged", "removed"] as const;

export const SourcePlanOut = z.object({
  source: z.string(),
  ref: z.string(),
  commit: z.string().nullable().describe("the commit the ref resolved to"),
  current_commit: z.string().nullable().describe("the commit in force; null when never synced"),
  errors: z.array(SourceFileErrorOut).describe("per-file errors of the ref's tree; when any, nothing was planned"),
  modules_changed: z.array(z.string()),
  modules_removed: z.array(z.string()),
  assignments: z.array(
    z.object({
      name: z.string(),
      change: z.enum(PLAN_CHANGES),
      run: RunOut.nullable().describe("the plan run over the matched agents (created and updated only)"),
      operations: z.array(OperationDetailOut).describe("the run's plan operations with their per-resource diffs"),
    }),
  ),
  complete: z.boolean().describe("every plan run finished within wait_seconds"),
});

export const planJson = (p: SourcePlan) => ({
  source: p.source,
  ref: p.ref,
  commit: p.commit || null,
  current_commit: p.currentCommit || null,
  errors: p.errors.map(fileErrorJson),
  modules_changed: p.modulesChanged,
  modules_removed: p.modulesRemoved,
  assignments: p.assignments.map((a) => ({
    name: a.name,
    change: a.change as (typeof PLAN_CHANGES)[number],
    run: a.run ? runJson(a.run) : null,
    operations: a.operations.map(operationDetailJson),
  })),
  complete: p.complete,
});

export const WebhookOut = z.object({
  forge: z.enum(["github", "gitlab", "gitea"]),
  event: z.string(),
  synced: z
    .boolean()
    .describe("a sync of the push was started; it runs after this answer (GET the source for its outcome)"),
  reason: z.string().nullable().describe("why not (ping, another branch, not a push), or that the sync was started"),
  commit: z.string().nullable().describe("the pushed commit"),
});

// The source itself stays out: the caller proved it holds the secret, not that it may read the source.
export const webhookJson = (r: SourceWebhookResult) => ({
  forge: r.forge as z.infer<typeof WebhookOut>["forge"],
  event: r.event,
  synced: r.synced,
  reason: r.reason || null,
  commit: r.commit || null,
});
