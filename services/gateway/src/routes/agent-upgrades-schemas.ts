import { z } from "zod";
import { AGENT_VERSION_RULE } from "@orch/contracts";

export const Version = z.string().max(64).nullish().describe(`${AGENT_VERSION_RULE}; absent = the newest published`);
