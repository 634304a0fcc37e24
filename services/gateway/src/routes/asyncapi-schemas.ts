import { z } from "zod";

export const AsyncApiOut = z
  .looseObject({ asyncapi: z.string() })
  .describe("AsyncAPI 3.0 document (packages/contracts/asyncapi.json)");
