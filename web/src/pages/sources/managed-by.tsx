/**
 * "Managed by git source <name> @ <commit7>": on a module, assignment or approval policy a git source owns. The API
 * refuses to change such an object (409 managed_by_source), so pages hide their edit actions and say
 * where the change belongs instead.
 */
import { Link } from "wouter";
import { Badge, Banner } from "../../ui";

/** What a module or an assignment says about its owner (null/absent = not managed). */
export interface Ownable {
  name: string;
  source?: string | null;
  commit?: string | null;
}

export interface Owner {
  source: string;
  /** The first 7 characters of the commit it came from ("" if unknown). */
  commit7: string;
}

export function ownerOf(o: Ownable): Owner | undefined {
  if (!o.source) return undefined;
  return { source: o.source, commit7: (o.commit ?? "").slice(0, 7) };
}

export const sourceHref = (name: string) => `/sources/${encodeURIComponent(name)}`;

/** The detail pages' notice, with a link to the source. */
export function ManagedByBanner({ owner, what }: { owner: Owner; what: "module" | "assignment" | "approval policy" }) {
  return (
    <Banner kind="info" testId="managed-by">
      Managed by git source <Link href={sourceHref(owner.source)}>{owner.source}</Link>
      {owner.commit7 ? (
        <>
          {" "}
          @ <code>{owner.commit7}</code>
        </>
      ) : null}
      . Change this {what} in the repository: edits here are refused.
    </Banner>
  );
}

/** The lists' marker beside the name. */
export function ManagedBadge({ owner }: { owner: Owner }) {
  const at = owner.commit7 ? ` @ ${owner.commit7}` : "";
  return (
    <Badge tone="info" title={`Managed by git source ${owner.source}${at}`}>
      git: {owner.source}
    </Badge>
  );
}

/** A list's name cell: the link to the object, and its badge when a git source manages it. */
export function ManagedNameCell({ item, href }: { item: Ownable; href: string }) {
  const owner = ownerOf(item);
  return (
    <td>
      <Link href={href}>{item.name}</Link>
      {owner ? (
        <>
          {" "}
          <ManagedBadge owner={owner} />
        </>
      ) : null}
    </td>
  );
}
