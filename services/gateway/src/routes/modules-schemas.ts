import { z } from "zod";
import { checkName, NAME_RE } from "@orch/contracts";
import { ruled } from "../schemas.js";

/** Module and assignment names (the state service checks them again). */
export const NAME = ruled(checkName, NAME_RE);
export const ModuleName = z.object({ name: z.string().min(1).max(128) });
