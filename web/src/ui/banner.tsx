import type { ReactNode } from "react";

export type BannerKind = "info" | "success" | "warning" | "error";

/** A page-wide message. Errors interrupt (role="alert"); the rest are polite (role="status"). */
export function Banner({
  kind = "info",
  children,
  testId,
  className,
}: {
  kind?: BannerKind;
  children: ReactNode;
  testId?: string;
  className?: string;
}) {
  return (
    <div
      className={`banner banner-${kind}${className ? ` ${className}` : ""}`}
      role={kind === "error" ? "alert" : "status"}
      data-testid={testId}
    >
      {children}
    </div>
  );
}

/** Nothing to show, said plainly (and an optional next step). */
export function EmptyState({ title, children }: { title: ReactNode; children?: ReactNode }) {
  return (
    <div className="empty-state">
      <p className="empty-title">{title}</p>
      {children ? <div className="muted">{children}</div> : null}
    </div>
  );
}

export type BadgeTone = "neutral" | "ok" | "warn" | "danger" | "info";

/** A short status word. The tone is colour only: the text must say it too. */
export function Badge({
  tone = "neutral",
  children,
  title,
}: {
  tone?: BadgeTone;
  children: ReactNode;
  title?: string;
}) {
  return (
    <span className={`badge badge-${tone}`} title={title}>
      {children}
    </span>
  );
}

/** The tone for the API's severities and statuses, so every page colours them the same way. */
export function toneOf(word: string | null | undefined): BadgeTone {
  switch ((word ?? "").toLowerCase()) {
    case "connected":
    case "approved":
    case "ok":
    case "succeeded":
    case "success":
      return "ok";
    case "warning":
    case "warn":
    case "pending":
    case "drift":
      return "warn";
    case "critical":
    case "error":
    case "failed":
    case "rejected":
    case "disconnected":
      return "danger";
    case "info":
      return "info";
    default:
      return "neutral";
  }
}
