import type { ParsedModule } from "../module/types.js";

/**
 * The shapes rendering works on, apart from render.ts so that both renderers (version 1 in
 * render.ts, version 2 in render-v2.ts) import them without importing each other.
 */

/** A module as an operation uses it: the exact version, and for drift the inputs it was applied with. */
export interface ModuleSource {
  name: string;
  sha256: string;
  parsed: ParsedModule;
  /** The assignment's given parameters (version 2), merged over the module's declared defaults. */
  parameters?: Readonly<Record<string, unknown>>;
  /**
   * Inputs recorded by the apply (drift); absent = the agent's current ones. Version 2 also
   * records the values and resolved parameters it rendered with.
   */
  inputs?: {
    attributes: Record<string, string>;
    tags: Record<string, string>;
    values?: Readonly<Record<string, unknown>>;
    parameters?: Readonly<Record<string, unknown>>;
  };
}

/** What rendering needs to know of one agent. */
export interface RenderAgent {
  attributes: Record<string, string>;
  tags: Record<string, string>;
  /** The agent's merged values (version 2). */
  values?: Readonly<Record<string, unknown>>;
  nodeId?: string;
  name?: string;
}
