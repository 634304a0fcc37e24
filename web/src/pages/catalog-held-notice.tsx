import { Link } from "wouter";
import type { HeldCatalogWrite } from "../api/catalog-held";
import { Banner } from "../ui";

/** "update assignment web (selector) held for approval: change request 01J…", the request linked. */
export function CatalogHeldNotice({ held }: { held: HeldCatalogWrite }) {
  const id = held.change_request_id;
  return (
    <Banner kind="info" testId="catalog-held">
      {held.summary} held for approval: change request <Link href={`/requests/${encodeURIComponent(id)}`}>{id}</Link>.
      Nothing changes until it is approved.
    </Banner>
  );
}
