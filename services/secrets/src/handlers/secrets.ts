import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SecretSchema, SecretsService, UpdateSecretRequest } from "@orch/contracts";
import {
  keysetPage,
  conflict,
  invalid,
  notFound,
  pageCursor,
  pageLimit,
  type CallContext,
  type Handlers,
  isUniqueViolation,
} from "@orch/kit";
import { holdWrite, needsApproval } from "../approval-gate.js";
import { toSecret } from "../convert.js";
import type { MetaChanges } from "../db/pending.js";
import { secretsDb, type SecretMeta } from "../db/secrets.js";
import { normaliseRestriction } from "../restriction.js";
import { requireAdminToWiden } from "../widening.js";
import { checkDescription, checkExpiry, checkName, checkValue } from "../validate.js";
import type { HandlerContext } from "../deps.js";
import { createWrite, deleteWrite, updateWrite } from "../writes.js";

type CrudHandlers = Pick<
  Handlers<typeof SecretsService>,
  "createSecret" | "listSecrets" | "getSecret" | "updateSecret" | "deleteSecret"
>;
type SecretOut = MessageInitShape<typeof SecretSchema>;

const notFoundError = (name: string) => notFound("secret_not_found", `no secret '${name}'`, { field: "name" });
const existsError = (name: string) =>
  conflict("secret_exists", `a secret named '${name}' already exists`, { field: "name" });
const held = (name: string, h: { changeRequestId: string; summary: string }): SecretOut => ({
  name,
  held: { changeRequestId: h.changeRequestId, summary: h.summary },
});

/** The update's checked value and metadata changes (a key present = that field changes). */
function updateChanges(req: UpdateSecretRequest, now: number): { value: string | undefined; changes: MetaChanges } {
  const value = req.value === undefined ? undefined : checkValue(req.value);
  const changes: MetaChanges = {};
  if (req.description !== undefined) changes.description = checkDescription(req.description);
  if (req.expiresAt !== undefined) changes.expires_at = checkExpiry(req.expiresAt, now);
  if (req.restriction) changes.restriction = normaliseRestriction(req.restriction);
  else if (req.clearRestriction) changes.restriction = null;
  if (value === undefined && Object.keys(changes).length === 0) {
    throw invalid("nothing_to_update", "send at least one of value, description, expires_at, restriction");
  }
  return { value, changes };
}

const gateOf = (ctx: CallContext, req: { name: string; reason: string; breakGlass: boolean }) => ({
  actor: ctx.actor,
  reason: req.reason,
  breakGlass: req.breakGlass,
  name: req.name,
});

export function secretHandlers(hc: HandlerContext): CrudHandlers {
  const { deps, keyring } = hc;
  const { pool, events, clock } = deps;
  return {
    async createSecret(req, ctx) {
      const now = clock.now();
      const name = checkName(req.name);
      const value = checkValue(req.value);
      const meta: SecretMeta = {
        name,
        description: checkDescription(req.description),
        expires_at: checkExpiry(req.expiresAt, now),
        restriction: req.restriction ? normaliseRestriction(req.restriction) : null,
        created_at: now,
        created_by: ctx.actor.id,
        updated_at: now,
        updated_by: ctx.actor.id,
      };
      const gate = await needsApproval(hc, { ...gateOf(ctx, { ...req, name }), op: "create" });
      const sealed = keyring.seal(name, value);
      if (gate.kind === "hold") {
        if (await secretsDb.meta(pool, name)) throw existsError(name);
        const { description, expires_at, restriction } = meta;
        const changes: MetaChanges = { description, expires_at, restriction };
        const h = await holdWrite(hc, {
          op: "create",
          name,
          sealed,
          changes,
          baseVersion: null,
          actor: ctx.actor,
          reason: gate.reason,
        });
        return held(name, h);
      }
      try {
        await events.tx((db, emit) => createWrite(db, emit, { meta, sealed, actor: ctx.actor }));
      } catch (err) {
        if (isUniqueViolation(err)) throw existsError(name);
        throw err;
      }
      return toSecret(meta);
    },

    async listSecrets(req) {
      const limit = pageLimit(req.limit);
      const rows = await secretsDb.page(pool, limit + 1, pageCursor(req.cursor, "name"));
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.name);
      return { secrets: page.map(toSecret), nextCursor };
    },

    async getSecret(req) {
      const row = await secretsDb.meta(pool, req.name);
      if (!row) throw notFoundError(req.name);
      return toSecret(row);
    },

    async updateSecret(req, ctx) {
      const now = clock.now();
      const { value, changes } = updateChanges(req, now);
      const reach = { restriction: changes.restriction, expiresAt: changes.expires_at };
      const gate = await needsApproval(hc, { ...gateOf(ctx, req), op: "update" });
      if (gate.kind === "hold") {
        const row = await secretsDb.versioned(pool, req.name);
        if (!row) throw notFoundError(req.name);
        // Refused now rather than after approval: the approvers would approve what cannot run.
        requireAdminToWiden(ctx, row, reach);
        const sealed = value === undefined ? null : keyring.seal(row.name, value);
        const h = await holdWrite(hc, {
          op: "update",
          name: row.name,
          sealed,
          changes,
          baseVersion: row.version,
          actor: ctx.actor,
          reason: gate.reason,
        });
        return held(row.name, h);
      }
      return events.tx(async (db, emit) => {
        const row = await secretsDb.forUpdate(db, req.name);
        if (!row) throw notFoundError(req.name);
        // Before any write: a refused widening changes nothing (the transaction rolls back anyway).
        requireAdminToWiden(ctx, row, reach);
        const sealed = value === undefined ? undefined : keyring.seal(row.name, value);
        const { meta } = await updateWrite(db, emit, { row, changes, sealed, actor: ctx.actor, now });
        return toSecret(meta);
      });
    },

    async deleteSecret(req, ctx) {
      const gate = await needsApproval(hc, { ...gateOf(ctx, req), op: "delete" });
      if (gate.kind === "hold") {
        const row = await secretsDb.versioned(pool, req.name);
        if (!row) throw notFoundError(req.name);
        const h = await holdWrite(hc, {
          op: "delete",
          name: row.name,
          sealed: null,
          changes: {},
          baseVersion: row.version,
          actor: ctx.actor,
          reason: gate.reason,
        });
        return { held: { changeRequestId: h.changeRequestId, summary: h.summary } };
      }
      await events.tx(async (db, emit) => {
        if (!(await deleteWrite(db, emit, { name: req.name, actor: ctx.actor }))) throw notFoundError(req.name);
      });
      return {};
    },
  };
}
