import type { BundleFile } from "@orch/contracts";
import type { SourceFileErrorRow } from "../db/sources.js";
import type { ParsedModule } from "../module/types.js";
import type { TreeValueSet } from "../values/source-file.js";
import type { TreePolicy } from "./policy-file.js";

/** What a commit's tree holds once validated (tree.ts), as the diff and the apply read it. */

export interface TreeModule {
  file: string;
  name: string;
  content: string;
  sha256: string;
  parsed: ParsedModule;
  /** A bundle's files (modules/<name>/files/…, as blobs); null for a modules/<name>.yaml module. */
  files: BundleFile[] | null;
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
  /** Given to its modules' declared parameters (absent: the file has none); checked by checkTreeParameters. */
  parameters?: Record<string, unknown>;
  /** Where each given parameter (and `parameters:` itself, under "") is in the file, for errors. */
  parameterLines?: Record<string, { line: number; column: number }>;
}

export interface Tree {
  modules: TreeModule[];
  assignments: TreeAssignment[];
  /** `values/<name>.yaml` (docs/modules.md#values); absent in trees built before values existed. */
  values?: TreeValueSet[];
  /** `approval-policies/<name>.yaml` (docs/approvals.md#policies-from-git), handed to the auth service. */
  policies?: TreePolicy[];
  errors: SourceFileErrorRow[];
}
