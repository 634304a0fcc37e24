import { isMap, isScalar, LineCounter, type Node, type Pair, parseDocument } from "yaml";
import type { ErrorReason, PutApprovalPolicyRequest } from "@orch/contracts";
import type { SourceFileErrorRow } from "../db/sources.js";

/**
 * One `approval-policies/<name>.yaml`: the fields of `PUT /approval-policies/{name}`. Only the
 * shape is read here (types, unknown keys); the policy rules (actions, selector, bounds, approvers
 * that exist) are the auth service's, which checks the tree's policies when the sync hands them
 * over, so a file is refused exactly when the same PUT would be. Each field's position is kept so
 * those refusals point at the line.
 */

export type PolicyFields = Omit<PutApprovalPolicyRequest, "$typeName">;

export interface TreePolicy {
  file: string;
  name: string;
  policy: PolicyFields;
  /** Where each field is in the file (the auth service names the field at fault). */
  at: Record<string, { line: number; column: number }>;
}

type Kind = "string" | "strings" | "int" | "bool";
const FIELDS: Record<string, Kind> = {
  name: "string",
  description: "string",
  actions: "strings",
  selector: "string",
  approvals_required: "int",
  approvers: "strings",
  requester_may_approve: "bool",
  expires_after_seconds: "int",
  max_access_seconds: "int",
};

function typed(kind: Kind, v: unknown): boolean {
  switch (kind) {
    case "string":
      return typeof v === "string";
    case "strings":
      return Array.isArray(v) && v.every((x) => typeof x === "string");
    case "int":
      return Number.isInteger(v) && Math.abs(v as number) <= 2 ** 31 - 1;
    case "bool":
      return typeof v === "boolean";
  }
}

const KIND_TEXT: Record<Kind, string> = {
  string: "a string",
  strings: "a list of strings",
  int: "an integer",
  bool: "true or false",
};

export function readPolicyFile(
  file: string,
  name: string,
  content: string,
): { policy?: TreePolicy; errors: SourceFileErrorRow[] } {
  const errors: SourceFileErrorRow[] = [];
  const lines = new LineCounter();
  const pos = (node: Node | null | undefined) => {
    const { line, col } = lines.linePos(node?.range?.[0] ?? 0);
    return { line, column: col };
  };
  const refuseAt = (node: Node | null | undefined, code: ErrorReason, message: string) =>
    errors.push({ file, ...pos(node), code, message });

  const doc = parseDocument(content, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length) {
    const e = doc.errors[0]!;
    const { line, col } = lines.linePos(e.pos[0]);
    const message = e.message.split("\n")[0]!.replace(/ at line \d+, column \d+.*$/, "");
    errors.push({ file, line, column: col, code: "invalid_yaml", message: `invalid YAML: ${message}` });
    return { errors };
  }
  const root = doc.contents;
  if (!isMap(root)) {
    refuseAt(root, "invalid_approval_policy", "an approval policy is a mapping with actions and approvers");
    return { errors };
  }
  const values: Record<string, unknown> = {};
  const at: TreePolicy["at"] = {};
  for (const pair of root.items as Pair[]) {
    const key = isScalar(pair.key) ? String(pair.key.value) : "";
    const kind = FIELDS[key];
    if (!kind) {
      refuseAt(pair.key as Node, "invalid_approval_policy", `unknown field '${key || "(complex key)"}'`);
      continue;
    }
    const node = (pair.value ?? pair.key) as Node;
    const v = pair.value ? (pair.value as Node).toJSON() : undefined;
    at[key] = pos(node);
    // `key:` with nothing after it is absent, as in the other source files.
    if (v === undefined || v === null) continue;
    if (!typed(kind, v)) refuseAt(node, "invalid_approval_policy", `${key} must be ${KIND_TEXT[kind]}`);
    else values[key] = v;
  }
  if (values.name !== undefined && values.name !== name)
    refuseAt(
      root.items.find((p) => isScalar(p.key) && p.key.value === "name")?.value as Node,
      "name_mismatch",
      `the policy's name '${String(values.name)}' does not match its file name '${name}'`,
    );
  if (errors.length) return { errors };
  const str = (k: string) => (values[k] as string | undefined) ?? "";
  const list = (k: string) => (values[k] as string[] | undefined) ?? [];
  const int = (k: string) => (values[k] as number | undefined) ?? 0;
  return {
    policy: {
      file,
      name,
      at,
      policy: {
        name,
        description: str("description"),
        actions: list("actions"),
        selector: str("selector"),
        approvalsRequired: int("approvals_required"),
        approvers: list("approvers"),
        requesterMayApprove: values.requester_may_approve === true,
        expiresAfterSeconds: int("expires_after_seconds"),
        maxAccessSeconds: int("max_access_seconds"),
      },
    },
    errors: [],
  };
}
