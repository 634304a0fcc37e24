import { z } from "zod";

export const StatusOut = z.object({
  status: z.enum(["ok", "degraded", "unavailable"]),
  protocol_version: z.string(),
  api_version: z.string(),
  services: z.record(z.string(), z.enum(["ok", "unavailable"])),
});
