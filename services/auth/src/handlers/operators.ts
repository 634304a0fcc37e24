import { create, toBinary } from "@bufbuild/protobuf";
import { checkName, RevocationSchema, type AuthService } from "@orch/contracts";
import {
  keysetPage,
  conflict,
  forbidden,
  invalid,
  notFound,
  pageCursor,
  pageLimit,
  precondition,
  type CallContext,
  type Handlers,
  type Queryable,
  isUniqueViolation,
} from "@orch/kit";
import { operatorsDb, type OperatorRow } from "../db/operators.js";
import { normaliseKey, publicKeyObject } from "../keys.js";
import { toOperator } from "../convert.js";
import type { AuthDeps } from "../deps.js";
import { agentSelector } from "../validate.js";
import { REVOCATION_SUBJECT } from "./login.js";
import { grantsDb } from "../approvals/grants-db.js";

type OperatorHandlers = Pick<
  Handlers<typeof AuthService>,
  "listOperators" | "getOperator" | "createOperator" | "removeOperator" | "updateOperator"
>;

// The gateway enforces roles; the service checks again so a bus caller cannot skip it.
function requireAdmin(ctx: CallContext) {
  if (ctx.actor.type !== "system" && ctx.actor.role !== "admin") throw forbidden();
}

/** Operators as the API shows them, each with its access grants in force (one query for the page). */
async function withGrants(db: Queryable, rows: readonly OperatorRow[], now: number) {
  const grants = await grantsDb.activeForMany(
    db,
    rows.map((r) => r.id),
    now,
  );
  return rows.map((r) => toOperator(r, grants.get(r.id)));
}

export function operatorHandlers(deps: AuthDeps): OperatorHandlers {
  const { pool, events, clock, ids, nc } = deps;
  return {
    async listOperators(req) {
      const limit = pageLimit(req.limit);
      const rows = await operatorsDb.page(pool, limit + 1, pageCursor(req.cursor, "ulid"));
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
      return { operators: await withGrants(pool, page, clock.now()), nextCursor };
    },

    async getOperator(req) {
      const row = await operatorsDb.byIdOrName(pool, req.id);
      if (!row) throw notFound("operator_not_found", `no operator '${req.id}'`);
      return toOperator(row, await grantsDb.activeFor(pool, row.id, clock.now()));
    },

    async createOperator(req, ctx) {
      requireAdmin(ctx);
      const badName = checkName(req.name);
      if (badName) throw invalid(badName.reason, `name ${badName.message}`, { field: "name" });
      if (req.role !== "admin" && req.role !== "operator")
        throw invalid("invalid_request", "role must be admin or operator", { field: "role" });
      const publicKey = normaliseKey(req.publicKey);
      publicKeyObject(publicKey);
      // `?? ""`: in-process callers may build the request without the (newer) field.
      const selector = agentSelector(req.agentSelector ?? "", req.role);
      const row = {
        id: ids.next(),
        name: req.name,
        public_key: publicKey,
        role: req.role,
        active: true,
        created_at: clock.now(),
        created_by: ctx.actor.id,
        agent_selector: selector,
      } as const;
      try {
        await events.tx(async (db, emit) => {
          await operatorsDb.insert(db, row);
          await emit({
            type: "operator.created",
            summary: `operator ${row.name} (${row.role}) added by ${ctx.actor.name}`,
            actor: ctx.actor,
            target: { id: row.id, name: row.name, type: "operator" },
            metadata: { role: row.role, public_key: publicKey, agent_selector: selector },
          });
        });
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw (err as { constraint?: string }).constraint?.includes("public_key")
            ? conflict("public_key_in_use", "another operator already uses this public key", { field: "public_key" })
            : conflict("operator_exists", `an operator named '${row.name}' already exists`, { field: "name" });
        }
        throw err;
      }
      return toOperator(row);
    },

    async updateOperator(req, ctx) {
      requireAdmin(ctx);
      if (req.agentSelector === undefined) {
        throw invalid("invalid_request", "nothing to change: give agent_selector", { field: "agent_selector" });
      }
      const text = req.agentSelector;
      const updated = await events.tx(async (db, emit) => {
        const cur = await operatorsDb.byIdOrName(db, req.id);
        if (!cur) throw notFound("operator_not_found", `no operator '${req.id}'`);
        const selector = agentSelector(text, cur.role);
        if (selector === cur.agent_selector) return { row: cur, changed: false };
        const row = await operatorsDb.setSelector(db, cur.id, selector);
        await emit({
          type: "operator.updated",
          summary: selector
            ? `scope of operator ${cur.name} set to '${selector}' by ${ctx.actor.name}`
            : `scope of operator ${cur.name} cleared by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: { id: cur.id, name: cur.name, type: "operator" },
          metadata: { old_agent_selector: cur.agent_selector, agent_selector: selector },
        });
        return { row, changed: true };
      });
      if (!updated.changed) return toOperator(updated.row);
      // Gateways cache the principal with its scope: drop it everywhere so the new scope holds on the
      // next request, and re-check the operator's open streams and terminals against the new scope
      // (those it no longer allows end with scope_changed). Its tokens stay valid.
      const revocation = create(RevocationSchema, { operatorId: updated.row.id, scopeChanged: true });
      nc.publish(REVOCATION_SUBJECT, toBinary(RevocationSchema, revocation));
      return toOperator(updated.row);
    },

    async removeOperator(req, ctx) {
      requireAdmin(ctx);
      const removed = await events.tx(async (db, emit) => {
        // Lock the active admins first so two concurrent removals cannot both pass the check.
        const admins = await operatorsDb.activeAdminIdsForUpdate(db);
        const row = await operatorsDb.byIdOrName(db, req.id);
        if (!row) throw notFound("operator_not_found", `no operator '${req.id}'`);
        if (row.role === "admin" && row.active && admins.length <= 1 && admins.includes(row.id)) {
          throw precondition("last_admin", "the last active admin cannot be removed");
        }
        await operatorsDb.remove(db, row.id);
        await emit({
          type: "operator.removed",
          summary: `operator ${row.name} removed by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: { id: row.id, name: row.name, type: "operator" },
          metadata: { role: row.role },
        });
        return row;
      });
      // Tokens are gone from the database; tell every gateway to drop its cached copies now.
      nc.publish(REVOCATION_SUBJECT, toBinary(RevocationSchema, create(RevocationSchema, { operatorId: removed.id })));
      return {};
    },
  };
}
