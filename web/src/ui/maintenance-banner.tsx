/**
 * "Maintenance window active" on every signed-in page while one is: deliveries to channels are
 * suppressed then, which an operator wondering why nobody got paged should see at once. Lives in the
 * shell, so it stays small: one polled query (every 30 s and on window focus), no heavy imports.
 */
import { Link } from "wouter";
import { useActiveWindows } from "../api/maintenance";
import { Banner } from "./banner";
import "./maintenance-banner.css";

export function MaintenanceBanner() {
  const active = useActiveWindows().data ?? [];
  if (active.length === 0) return null;
  // The one ending last says how long notifications stay quiet.
  const last = active.reduce((a, b) => (b.ends_at > a.ends_at ? b : a));
  const until = new Date(last.ends_at * 1000);
  return (
    <Banner kind="info" testId="maintenance-banner" className="maintenance-banner">
      <strong>Maintenance window active</strong> until{" "}
      <time dateTime={until.toISOString()} title={until.toISOString()}>
        {until.toLocaleString()}
      </time>
      {last.reason ? <> — {last.reason}</> : null}. Channel notifications are suppressed.{" "}
      <Link href="/maintenance">Maintenance windows</Link>
    </Banner>
  );
}
