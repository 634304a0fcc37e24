/**
 * The audit page's six filters. Under 600 px they fold behind a "Filters (n active)" button so the
 * events come first (pages.css decides the width; the button exists at every width and shows on
 * phones only). A refused filter keeps the panel open: its message is under its field.
 */
import { type FormEvent, useEffect, useId, useState } from "react";
import { AUDIT_FILTERS, type AuditFilters } from "../../lib/audit-query";
import { Field } from "../../ui";
import { activeFilterCount, filterToggleText } from "./filter-summary";

export function AuditFilterForm({
  filters,
  errorFor,
  onApply,
}: {
  /** The filters in force (the URL's). */
  filters: AuditFilters;
  /** The API's refusal of one filter, shown under its field. */
  errorFor: (name: string) => string | undefined;
  onApply: (next: AuditFilters) => void;
}) {
  const [draft, setDraft] = useState<AuditFilters>(filters);
  const [open, setOpen] = useState(false);
  const panelId = useId();
  // Back/forward or a bookmark changed the filters: the form shows them.
  useEffect(() => setDraft(filters), [filters]);
  const refused = AUDIT_FILTERS.some((f) => errorFor(f.name) !== undefined);

  function apply(e: FormEvent) {
    e.preventDefault();
    onApply(draft);
    setOpen(false);
  }

  return (
    <form
      className={open || refused ? "audit-filters is-open" : "audit-filters"}
      onSubmit={apply}
      aria-label="Audit filters"
    >
      <button
        type="button"
        className="btn filter-toggle"
        aria-expanded={open || refused}
        aria-controls={panelId}
        onClick={() => setOpen((o) => !o)}
      >
        {filterToggleText(activeFilterCount(filters))}
      </button>
      <div className="audit-filter-panel" id={panelId}>
        {AUDIT_FILTERS.map((f) => (
          <Field key={f.name} label={f.label} hint={f.hint} error={errorFor(f.name)}>
            <input
              type="text"
              name={f.name}
              value={draft[f.name] ?? ""}
              spellCheck={false}
              autoComplete="off"
              onChange={(e) => setDraft((d) => ({ ...d, [f.name]: e.target.value }))}
            />
          </Field>
        ))}
        <div className="toolbar">
          <button type="submit" className="btn btn-primary">
            Apply
          </button>
        </div>
      </div>
    </form>
  );
}
