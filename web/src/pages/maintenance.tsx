/**
 * Maintenance windows (/maintenance?cursor=): while one is active, channel deliveries are suppressed
 * and every page shows a banner. Everyone sees the list; admins create windows and end an active one
 * now (ends_at = now, so it stays in the list as history) or delete one.
 */
import { type FormEvent, useState } from "react";
import { useCreateWindow, useDeleteWindow, useEndWindow, useWindows } from "../api/maintenance";
import { useSession } from "../api/session";
import { useUrlState } from "../lib/url-state";
import {
  Badge,
  DeleteWithConfirm,
  EmptyState,
  Field,
  fieldError,
  Page,
  ProblemMessage,
  QueryStatus,
  Section,
  Time,
} from "../ui";
import { useNow } from "../ui/now";
import { fromLocalInput, phaseOf, spanError, toLocalInput } from "../lib/window-times";
import "./pages.css";
import { PagedTable } from "./parts/item-table";

export default function MaintenancePage() {
  const { isAdmin } = useSession();
  const [params, setParams] = useUrlState();
  const cursor = params.get("cursor") ?? undefined;
  const list = useWindows(cursor);
  const end = useEndWindow();
  const remove = useDeleteWindow();
  // The shared clock re-renders every 30 s; the phase itself uses the real time (an ended window must
  // not look active until the next tick).
  useNow();
  const now = Date.now();
  const windows = list.data?.windows ?? [];

  return (
    <Page title="Maintenance windows">
      {isAdmin ? <NewWindowForm /> : null}
      <Section title="All windows">
        <QueryStatus query={list}>
          <PagedTable
            label="Maintenance windows"
            columns={["Reason", "Starts", "Ends", "Status", "Created by", isAdmin && "Actions"]}
            items={windows}
            empty={
              <EmptyState title="No maintenance windows.">
                While one is active, channel notifications are suppressed.
              </EmptyState>
            }
            cursor={cursor}
            nextCursor={list.data?.has_more ? list.data.next_cursor : undefined}
            onCursor={(c) => setParams({ cursor: c })}
          >
            {(w) => {
              const phase = phaseOf(w, now);
              return (
                <tr key={w.id}>
                  <td>{w.reason}</td>
                  <td>
                    <Time value={w.starts_at * 1000} />
                  </td>
                  <td>
                    <Time value={w.ends_at * 1000} />
                  </td>
                  <td>
                    <Badge tone={phase === "active" ? "warn" : phase === "upcoming" ? "info" : "neutral"}>
                      {phase}
                    </Badge>
                  </td>
                  <td>{w.created_by}</td>
                  {isAdmin ? (
                    <td>
                      {phase === "active" ? (
                        <button
                          type="button"
                          className="btn btn-small"
                          disabled={end.isPending}
                          onClick={() => end.mutate(w)}
                        >
                          End now
                        </button>
                      ) : (
                        <DeleteWithConfirm
                          mutation={remove}
                          target={w.id}
                          title="Delete this maintenance window?"
                          small
                          showProblem={false}
                        >
                          <p>{w.reason}</p>
                        </DeleteWithConfirm>
                      )}
                    </td>
                  ) : null}
                </tr>
              );
            }}
          </PagedTable>
        </QueryStatus>
        {end.error ? <ProblemMessage error={end.error} /> : null}
        {remove.error ? <ProblemMessage error={remove.error} /> : null}
      </Section>
    </Page>
  );
}

function NewWindowForm() {
  const create = useCreateWindow();
  const [starts, setStarts] = useState(() => toLocalInput(Date.now()));
  const [ends, setEnds] = useState(() => toLocalInput(Date.now() + 3600_000));
  const [reason, setReason] = useState("");
  const [submitted, setSubmitted] = useState(false);
  const [done, setDone] = useState(false);
  const startsAt = fromLocalInput(starts);
  const endsAt = fromLocalInput(ends);
  const span = spanError(startsAt, endsAt);
  const reasonError =
    (submitted && reason.trim() === "" ? "Reason is required" : undefined) ?? fieldError(create.error, "reason");
  const endsError = (submitted ? span : undefined) ?? fieldError(create.error, "ends_at");
  const startsError = fieldError(create.error, "starts_at");

  function submit(e: FormEvent) {
    e.preventDefault();
    setSubmitted(true);
    setDone(false);
    if (span || reason.trim() === "" || startsAt === undefined || endsAt === undefined) return;
    create.mutate(
      { starts_at: startsAt, ends_at: endsAt, reason: reason.trim() },
      {
        onSuccess: () => {
          setDone(true);
          setSubmitted(false);
          setReason("");
        },
      },
    );
  }

  return (
    <Section title="New window">
      <form className="stack card" onSubmit={submit} aria-label="New window">
        <div className="grid">
          <Field label="Starts" hint="your local time" error={startsError}>
            <input type="datetime-local" value={starts} onChange={(e) => setStarts(e.target.value)} />
          </Field>
          <Field label="Ends" error={endsError}>
            <input type="datetime-local" value={ends} onChange={(e) => setEnds(e.target.value)} />
          </Field>
        </div>
        <Field label="Reason" error={reasonError}>
          <input type="text" value={reason} maxLength={1000} onChange={(e) => setReason(e.target.value)} />
        </Field>
        <div className="toolbar">
          <button type="submit" className="btn btn-primary" disabled={create.isPending}>
            Create
          </button>
          {done ? (
            <span role="status" className="muted">
              Window created.
            </span>
          ) : null}
        </div>
        {create.error && !reasonError && !endsError && !startsError ? <ProblemMessage error={create.error} /> : null}
      </form>
    </Section>
  );
}
