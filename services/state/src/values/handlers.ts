import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { AgentValuesSchema, StateService, ValueOriginSchema, ValueSetSchema } from "@orch/contracts";
import {
  forbidden,
  invalid,
  isScoped,
  keysetPage,
  notFound,
  pageCursor,
  pageLimit,
  type Actor,
  type Handlers,
  type Queryable,
} from "@orch/kit";
import type { AgentInfo } from "../deps.js";
import type { Engine } from "../engine/index.js";
import { reachableAgent } from "../handlers/agents.js";
import { refuseManaged } from "../handlers/managed.js";
import { agentValuesDb, valueSetsDb, type ValueSetRow } from "./tables.js";
import { checkValueSet, valueSetRow } from "./define.js";
import { layersFor, mergeWithOrigins, prepareSets, type Origin } from "./merge.js";
import { parseValuesObject, parseValuesText, type ParsedValues } from "./parse.js";

/** PutValueSet found no set to lock, then replaced one created meanwhile. */
class CreatedMeanwhile extends Error {}

type H = Handlers<typeof StateService>;
type ValueHandlers = Pick<
  H,
  "putValueSet" | "listValueSets" | "getValueSet" | "deleteValueSet" | "setAgentValues" | "getAgentValues"
>;

const setMsg = (s: ValueSetRow, full: boolean): MessageInitShape<typeof ValueSetSchema> => ({
  name: s.name,
  selector: s.selector,
  priority: s.priority,
  description: s.description,
  ...(full ? { values: s.values as JsonObject, content: s.content } : {}),
  updatedAt: s.updated_at,
  updatedBy: s.updated_by,
  updatedByName: s.updated_by_name,
  source: s.source ?? "",
  commit: s.source_commit,
  sha256: s.sha256,
  keyCount: s.key_count,
});

const originMsg = (o: Origin): MessageInitShape<typeof ValueOriginSchema> => ({
  set: o.set,
  layer: o.layer,
  priority: o.priority,
  line: o.line,
  path: o.path,
});

/** `values` (a map) or `content` (its YAML text), not both; neither is an empty map. */
function givenValues(req: { values?: JsonObject; content: string }): ParsedValues {
  if (req.values !== undefined && req.content !== "")
    throw invalid("invalid_values", "give values or content (YAML), not both", { field: "content" });
  return req.values !== undefined ? parseValuesObject(req.values) : parseValuesText(req.content);
}

/** A set reaches every agent its selector matches, so only an unscoped operator may change one. */
function refuseScoped(actor: Actor): void {
  if (isScoped(actor))
    throw forbidden(
      "value_set_scoped_operator",
      "a scoped operator may not change value sets: a set reaches agents outside the scope",
    );
}

/** Value sets and agents' own values (docs/modules.md#values): every change with its audit event, in one transaction. */
export function valueHandlers({ deps, clients }: Engine): ValueHandlers {
  const { pool, events, clock } = deps;
  const agentOf = (id: string, actor: Actor) =>
    reachableAgent(clients, id, actor, () => notFound("agent_not_found", `no agent '${id}'`, { node_id: id }));

  return {
    async putValueSet(req, ctx) {
      refuseScoped(ctx.actor);
      const def = checkValueSet(req);
      const parsed = givenValues(req);
      const row = valueSetRow(def, parsed, { id: ctx.actor.id, name: ctx.actor.name, at: clock.now() });
      const write = () =>
        events.tx(async (db, emit) => {
          const old = await valueSetsDb.getForUpdate(db, def.name);
          if (old) refuseManaged("value set", old);
          // Created meanwhile (perhaps by a sync, managed): rolled back and tried once more, locked this time.
          if ((await valueSetsDb.upsert(db, row)) && !old) throw new CreatedMeanwhile();
          await emit({
            type: "values.set_updated",
            summary: `value set ${def.name} ${old ? "replaced" : "created"} by ${ctx.actor.name} (${row.key_count} keys)`,
            actor: ctx.actor,
            target: { id: def.name, name: def.name, type: "value_set" },
            metadata: {
              selector: row.selector,
              priority: row.priority,
              sha256: row.sha256,
              keys: row.key_count,
              replaced: Boolean(old),
              ...(old ? { previous: { selector: old.selector, priority: old.priority, sha256: old.sha256 } } : {}),
            },
          });
        });
      await write().catch((err: unknown) => {
        if (err instanceof CreatedMeanwhile) return write();
        throw err;
      });
      return setMsg(row, true);
    },

    async listValueSets(req) {
      const limit = pageLimit(req.limit);
      const rows = await valueSetsDb.page(pool, limit + 1, pageCursor(req.cursor, "name"));
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.name);
      return { sets: page.map((s) => setMsg(s, false)), nextCursor };
    },

    async getValueSet(req) {
      const row = await valueSetsDb.get(pool, req.name);
      if (!row) throw notFound("value_set_not_found", `no value set '${req.name}'`);
      return setMsg(row, true);
    },

    async deleteValueSet(req, ctx) {
      refuseScoped(ctx.actor);
      await events.tx(async (db, emit) => {
        const row = await valueSetsDb.getForUpdate(db, req.name);
        if (!row) throw notFound("value_set_not_found", `no value set '${req.name}'`);
        refuseManaged("value set", row);
        await valueSetsDb.remove(db, req.name);
        await emit({
          type: "values.set_deleted",
          summary: `value set ${req.name} deleted by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: { id: req.name, name: req.name, type: "value_set" },
          metadata: { selector: row.selector, priority: row.priority, sha256: row.sha256 },
        });
      });
      return {};
    },

    async setAgentValues(req, ctx) {
      const parsed = givenValues(req);
      // Scoped operators reach only their agents: another one is 404, as everywhere (docs/access.md).
      const agent = await agentOf(req.nodeId, ctx.actor);
      const keys = Object.keys(parsed.lines).length;
      await events.tx(async (db, emit) => {
        const cleared = Object.keys(parsed.values).length === 0;
        if (cleared) await agentValuesDb.remove(db, agent.nodeId);
        else
          await agentValuesDb.upsert(db, {
            node_id: agent.nodeId,
            values: parsed.values,
            lines: parsed.lines,
            content: parsed.content,
            updated_at: clock.now(),
            updated_by: ctx.actor.id,
            updated_by_name: ctx.actor.name,
          });
        await emit({
          type: "values.agent_updated",
          summary: `values of agent ${agent.name || agent.nodeId} ${cleared ? "cleared" : `set (${keys} keys)`} by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: { id: agent.nodeId, name: agent.name, type: "agent" },
          metadata: { keys, cleared },
        });
      });
      return agentValuesMsg(pool, agent);
    },

    async getAgentValues(req, ctx) {
      return agentValuesMsg(pool, await agentOf(req.nodeId, ctx.actor));
    },
  };
}

/** The merged values of one agent with every key's origin, and its own layer as given. */
async function agentValuesMsg(db: Queryable, agent: AgentInfo): Promise<MessageInitShape<typeof AgentValuesSchema>> {
  const [sets, own] = await Promise.all([valueSetsDb.all(db), agentValuesDb.get(db, agent.nodeId)]);
  const layers = layersFor(prepareSets(sets), agent, own);
  const { values, keys } = mergeWithOrigins(layers);
  return {
    nodeId: agent.nodeId,
    name: agent.name,
    values: values as JsonObject,
    keys: keys.map((k) => ({ path: k.path, origin: originMsg(k.origin), overridden: k.overridden.map(originMsg) })),
    own: (own?.values ?? {}) as JsonObject,
    ownContent: own?.content ?? "",
    sets: layers.filter((l) => l.layer !== "agent").map((l) => l.set),
  };
}
