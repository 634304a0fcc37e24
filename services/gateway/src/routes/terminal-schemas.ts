import { z } from "zod";
import { TERMINAL_DIM_MAX, TERMINAL_DIM_MIN } from "@orch/contracts";
import { Ulid, qInt } from "../schemas.js";

export const SessionParams = z.object({ session_id: Ulid });

/** A requested width or height: the contract's int32 range; the terminal service clamps it for the PTY. */
export const terminalDim = qInt(TERMINAL_DIM_MIN, TERMINAL_DIM_MAX);
