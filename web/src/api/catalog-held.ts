/**
 * A catalog write (assignment or module create, update, delete) an approval policy held (202,
 * catalog.write, docs/approvals.md): nothing changed until the change request is approved.
 */
export interface HeldCatalogWrite {
  status: "held";
  change_request_id: string;
  summary: string;
}

export const isHeldCatalogWrite = (b: unknown): b is HeldCatalogWrite =>
  typeof b === "object" && b !== null && (b as HeldCatalogWrite).status === "held";
