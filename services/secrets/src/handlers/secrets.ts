import type { SecretsService } from "@orch/contracts";
import {
  keysetPage,
  conflict,
  invalid,
  notFound,
  pageCursor,
  pageLimit,
  type Handlers,
  isUniqueViolation,
} from "@orch/kit";
import { eventMetadata, secretRef, toSecret } from "../convert.js";
import { secretsDb, type SecretMeta } from "../db/secrets.js";
import { normaliseRestriction, type Restriction } from "../restriction.js";
import { requireAdminToWiden } from "../widening.js";
import { checkDescription, checkExpiry, checkName, checkValue } from "../validate.js";
import type { HandlerContext } from "../deps.js";

type CrudHandlers = Pick<
  Handlers<typeof SecretsService>,
  "createSecret" | "listSecrets" | "getSecret" | "updateSecret" | "deleteSecret"
>;

const notFoundError = (name: string) => notFound("secret_not_found", `no secret '${name}'`, { field: "name" });

export function secretHandlers({ deps, keyring }: HandlerContext): CrudHandlers {
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
      const sealed = keyring.seal(name, value);
      try {
        await events.tx(async (db, emit) => {
          await secretsDb.insert(db, meta, sealed);
          await emit({
            type: "secret.created",
            summary: `secret ${name} created by ${ctx.actor.name}`,
            actor: ctx.actor,
            target: secretRef(name),
            metadata: { ...eventMetadata(meta), key_id: sealed.keyId },
          });
        });
      } catch (err) {
        if (isUniqueViolation(err))
          throw conflict("secret_exists", `a secret named '${name}' already exists`, { field: "name" });
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
      const value = req.value === undefined ? undefined : checkValue(req.value);
      const description = req.description === undefined ? undefined : checkDescription(req.description);
      const expiresAt = req.expiresAt === undefined ? undefined : checkExpiry(req.expiresAt, now);
      let restriction: Restriction | null | undefined;
      if (req.restriction) restriction = normaliseRestriction(req.restriction);
      else if (req.clearRestriction) restriction = null;
      if (value === undefined && description === undefined && expiresAt === undefined && restriction === undefined) {
        throw invalid("nothing_to_update", "send at least one of value, description, expires_at, restriction");
      }
      return events.tx(async (db, emit) => {
        const row = await secretsDb.forUpdate(db, req.name);
        if (!row) throw notFoundError(req.name);
        // Before any write: a refused widening changes nothing (the transaction rolls back anyway).
        requireAdminToWiden(ctx, row, { restriction, expiresAt });
        const changed: string[] = [];
        const next: SecretMeta = { ...row, updated_at: now, updated_by: ctx.actor.id };
        if (description !== undefined) {
          next.description = description;
          changed.push("description");
        }
        if (expiresAt !== undefined) {
          next.expires_at = expiresAt;
          changed.push("expires_at");
        }
        if (restriction !== undefined) {
          next.restriction = restriction;
          changed.push("restriction");
        }
        const metadata: Record<string, unknown> = {};
        if (value !== undefined) {
          const sealed = keyring.seal(row.name, value);
          await secretsDb.updateSealed(db, row.name, sealed);
          changed.unshift("value");
          metadata.key_id = sealed.keyId;
        }
        await secretsDb.updateMeta(db, next);
        await emit({
          type: "secret.updated",
          summary: `secret ${row.name} updated by ${ctx.actor.name} (${changed.join(", ")})`,
          actor: ctx.actor,
          target: secretRef(row.name),
          metadata: { changed, ...eventMetadata(next), ...metadata },
        });
        return toSecret(next);
      });
    },

    async deleteSecret(req, ctx) {
      await events.tx(async (db, emit) => {
        const row = await secretsDb.remove(db, req.name);
        if (!row) throw notFoundError(req.name);
        await emit({
          type: "secret.deleted",
          summary: `secret ${row.name} deleted by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: secretRef(row.name),
          metadata: eventMetadata(row),
        });
      });
      return {};
    },
  };
}
