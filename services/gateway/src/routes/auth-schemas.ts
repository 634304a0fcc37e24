import { z } from "zod";

export const Hex = (bytes: number, what: string) =>
  z.string().regex(new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`), `must be ${what}: ${bytes} bytes, hex-encoded`);
