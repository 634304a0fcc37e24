import { memo, useId, useState } from "react";
import type { AuditEvent } from "../../api/audit";
import { Badge, Time, toneOf } from "../../ui";

function who(r: AuditEvent["actor"]): string {
  if (!r.type && !r.id) return "";
  return `${r.type ? `${r.type} ` : ""}${r.name || r.id}`;
}

/** One audit event; "Show JSON" reveals the event exactly as the API sent it. */
export const AuditRow = memo(function AuditRow({ event, isNew = false }: { event: AuditEvent; isNew?: boolean }) {
  const [open, setOpen] = useState(false);
  const jsonId = useId();
  const actor = who(event.actor);
  const target = who(event.target);
  return (
    <li className={isNew ? "audit-new" : undefined} data-event-id={event.id}>
      <div className="list-main">
        <div>
          <Badge tone={toneOf(event.severity)}>{event.severity}</Badge> <span className="mono">{event.event_type}</span>{" "}
          {event.summary}
        </div>
        <div className="meta">
          <Time value={event.timestamp} />
          {actor ? <span>by {actor}</span> : null}
          {target ? <span>on {target}</span> : null}
          {isNew ? <span>new</span> : null}
        </div>
        {open ? (
          <pre className="json" id={jsonId}>
            {JSON.stringify(event, null, 2)}
          </pre>
        ) : null}
      </div>
      <button
        type="button"
        className="btn btn-small"
        aria-expanded={open}
        aria-controls={open ? jsonId : undefined}
        onClick={() => setOpen((o) => !o)}
      >
        {open ? "Hide JSON" : "Show JSON"}
      </button>
    </li>
  );
});
