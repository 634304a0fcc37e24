import { z } from "zod";

// Unix seconds up to the end of year 9999.
export const UnixSeconds = z.number().int().min(0).max(253_402_300_799).meta({ format: "int64" });

export const WindowId = z.object({ id: z.string().min(1).max(128) });
