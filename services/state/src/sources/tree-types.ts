import type { SourceFileErrorRow } from "../db/sources.js";
import type { ParsedModule } from "../module/types.js";

/** What a commit's tree holds once validated (tree.ts), as the diff and the apply read it. */

export interface TreeModule {
  file: string;
  name: string;
  content: string;
  sha256: string;
  parsed: ParsedModule;
}

export interface TreeAssignment {
  file: string;
  name: string;
  selector: string;
  modules: string[];
  description: string | null;
  enforce: boolean;
  apply_on_sync: boolean;
  batch: string;
  max_failures: number | null;
}

export interface Tree {
  modules: TreeModule[];
  assignments: TreeAssignment[];
  errors: SourceFileErrorRow[];
}
