import type { StateService } from "@orch/contracts";
import type { Handlers } from "@orch/kit";
import { gateCatalogWrite } from "../approvals/catalog-write.js";
import { assignmentInput, insertAssignment, removeAssignment, replaceAssignment } from "../catalog/assignment-write.js";
import { assignmentMsg } from "../convert.js";
import type { Engine } from "../engine/index.js";

type H = Handlers<typeof StateService>;

export const createAssignment =
  (engine: Engine): H["createAssignment"] =>
  async (req, ctx) => {
    const input = assignmentInput(req);
    const held = await gateCatalogWrite(engine, { kind: "assignment", op: "create", input }, ctx.actor, req);
    if (held) return { name: input.name, held };
    return assignmentMsg(await insertAssignment(engine, input, ctx.actor));
  };

export const updateAssignment =
  (engine: Engine): H["updateAssignment"] =>
  async (req, ctx) => {
    const input = assignmentInput(req);
    const held = await gateCatalogWrite(engine, { kind: "assignment", op: "update", input }, ctx.actor, req);
    if (held) return { name: input.name, held };
    return assignmentMsg(await replaceAssignment(engine, input, ctx.actor));
  };

export const deleteAssignment =
  (engine: Engine): H["deleteAssignment"] =>
  async (req, ctx) => {
    const held = await gateCatalogWrite(engine, { kind: "assignment", op: "delete", name: req.name }, ctx.actor, req);
    if (held) return held;
    await removeAssignment(engine, req.name, ctx.actor);
    return {};
  };
