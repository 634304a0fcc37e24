import { createHash, randomBytes } from "node:crypto";
import {
  checkJoinTokenMaxUses,
  checkJoinTokenNamePrefix,
  checkJoinTokenTtl,
  JOIN_TOKEN_DESCRIPTION_MAX,
  JOIN_TOKEN_ID_RE,
  JOIN_TOKEN_PREFIX,
  type AgentsService,
  type Violation,
} from "@orch/contracts";
import {
  forbidden,
  invalid,
  keysetPage,
  notFound,
  pageCursor,
  pageLimit,
  type CallContext,
  type Handlers,
  type Ref,
} from "@orch/kit";
import { joinTokensDb, type JoinTokenRow } from "../db/join-tokens.js";
import type { AgentsDeps } from "../deps.js";
import { toJoinToken } from "../convert.js";
import { checkTags } from "../validate.js";

type JoinTokenHandlers = Pick<Handlers<typeof AgentsService>, "createJoinToken" | "listJoinTokens" | "revokeJoinToken">;

// The gateway enforces roles; the service checks again so a bus caller cannot skip it.
function requireAdmin(ctx: CallContext) {
  if (ctx.actor.type !== "system" && ctx.actor.role !== "admin") throw forbidden();
}

const refuse = (v: Violation | null, field: string) => {
  if (v) throw invalid(v.reason, `${field} ${v.message}`, { field });
};

export const hashSecret = (secret: string): Buffer => createHash("sha256").update(secret).digest();

export const joinTokenRef = (r: Pick<JoinTokenRow, "id">): Ref => ({
  id: r.id,
  name: `join_token:${r.id}`,
  type: "join_token",
});

/** How summaries name a token: its description when it has one (a token has no name), else its id. */
export const tokenLabel = (r: Pick<JoinTokenRow, "id" | "description">) =>
  r.description ? `'${r.description}'` : r.id;

const tokenNotFound = (id: string) => notFound("join_token_not_found", `no join token '${id}'`, { field: "id" });

export function joinTokenHandlers(deps: AgentsDeps): JoinTokenHandlers {
  const { pool, events, clock, ids } = deps;
  return {
    async createJoinToken(req, ctx) {
      requireAdmin(ctx);
      refuse(checkJoinTokenTtl(req.ttlS), "ttl_s");
      refuse(checkJoinTokenMaxUses(req.maxUses), "max_uses");
      refuse(checkJoinTokenNamePrefix(req.namePrefix), "name_prefix");
      checkTags(req.tags);
      if (req.description.length > JOIN_TOKEN_DESCRIPTION_MAX)
        throw invalid("invalid_description", `description must be at most ${JOIN_TOKEN_DESCRIPTION_MAX} characters`, {
          field: "description",
        });
      const id = ids.next().toLowerCase();
      const secret = randomBytes(32).toString("base64url");
      const now = clock.now();
      const row = await events.tx(async (db, emit) => {
        const r = await joinTokensDb.insert(db, {
          id,
          secret_hash: hashSecret(secret),
          description: req.description,
          tags: { ...req.tags },
          name_prefix: req.namePrefix,
          max_uses: req.maxUses,
          created_at: now,
          expires_at: now + req.ttlS * 1000,
          created_by: ctx.actor.id,
          created_by_name: ctx.actor.name,
        });
        await emit({
          type: "join_token.created",
          summary: `join token ${tokenLabel(r)} created by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: joinTokenRef(r),
          // Never the token: it is shown to its creator once and exists nowhere else.
          metadata: { ttl_s: req.ttlS, max_uses: req.maxUses, tags: r.tags, name_prefix: r.name_prefix },
        });
        return r;
      });
      return { joinToken: toJoinToken(row, now), token: `${JOIN_TOKEN_PREFIX}${id}.${secret}` };
    },

    async listJoinTokens(req, ctx) {
      requireAdmin(ctx);
      const limit = pageLimit(req.limit);
      const before = pageCursor(req.cursor, "ulid").toLowerCase();
      const rows = await joinTokensDb.page(pool, { limit: limit + 1, before });
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
      const now = clock.now();
      return { joinTokens: page.map((r) => toJoinToken(r, now)), nextCursor };
    },

    async revokeJoinToken(req, ctx) {
      requireAdmin(ctx);
      const id = req.id.toLowerCase();
      if (!JOIN_TOKEN_ID_RE.test(id)) throw tokenNotFound(req.id);
      const now = clock.now();
      const row = await events.tx(async (db, emit) => {
        const cur = await joinTokensDb.byId(db, id, true);
        if (!cur) throw tokenNotFound(req.id);
        // Idempotent: revoking again returns the record and records nothing new.
        if (cur.revoked_at !== null) return cur;
        const r = await joinTokensDb.revoke(db, id, now);
        await emit({
          type: "join_token.revoked",
          summary: `join token ${tokenLabel(r)} revoked by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: joinTokenRef(r),
          metadata: { uses: r.uses, max_uses: r.max_uses, tags: r.tags },
        });
        return r;
      });
      return toJoinToken(row, now);
    },
  };
}
