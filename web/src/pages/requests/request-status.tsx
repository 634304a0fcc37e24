/** A change request's status as a badge, and the tab links of the Requests page. */
import { Link } from "wouter";
import type { ChangeRequest, RequestFilter } from "../../api/approvals";
import { Badge, type BadgeTone } from "../../ui";

const TONES: Record<string, BadgeTone> = {
  pending: "warn",
  approved: "info",
  executed: "ok",
  denied: "danger",
  failed: "danger",
  cancelled: "neutral",
  expired: "neutral",
};

export function RequestStatus({ request, testId }: { request: Pick<ChangeRequest, "status">; testId?: string }) {
  return (
    <span data-testid={testId}>
      <Badge tone={TONES[request.status] ?? "neutral"}>{request.status}</Badge>
    </span>
  );
}

export const approvalsOf = (r: Pick<ChangeRequest, "decisions" | "approvals_required">) =>
  `${r.decisions.filter((d) => d.decision === "approve").length}/${r.approvals_required}`;

export const FILTERS: { filter: RequestFilter; label: string; href: string }[] = [
  { filter: "to_approve", label: "To approve", href: "/requests?to_approve=true" },
  { filter: "mine", label: "Mine", href: "/requests?mine=true" },
  { filter: "all", label: "All", href: "/requests" },
];

export function filterOf(params: URLSearchParams): RequestFilter {
  if (params.get("to_approve") === "true") return "to_approve";
  if (params.get("mine") === "true") return "mine";
  return "all";
}

/** The filters as links (each view is a URL): the one shown is aria-current. */
export function FilterTabs({ current, toApprove }: { current: RequestFilter; toApprove?: number }) {
  return (
    <nav aria-label="Requests shown" className="request-tabs">
      {FILTERS.map((f) => (
        <Link
          key={f.filter}
          href={f.href}
          className={current === f.filter ? "btn btn-primary" : "btn"}
          aria-current={current === f.filter ? "page" : undefined}
        >
          {f.label}
          {f.filter === "to_approve" && toApprove ? <span className="inbox-badge has-unread">{toApprove}</span> : null}
        </Link>
      ))}
    </nav>
  );
}
