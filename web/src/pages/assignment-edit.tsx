/**
 * Create (/assignments/new?selector=) or edit (/assignments/:name/edit) an assignment: a selector
 * checked as it is typed with a live "matches N agents", the modules to keep on those agents, and
 * whether drift is corrected automatically (enforce).
 * An unparsable selector disables Create/Save; the API's refusals are shown at their field.
 */
import { type FormEvent, useState } from "react";
import { Link, useLocation, useParams, useSearchParams } from "wouter";
import { ApiError } from "../api/client";
import {
  type Assignment,
  type NewAssignment,
  useAssignment,
  useCreateAssignment,
  useUpdateAssignment,
} from "../api/assignments";
import { useModules } from "../api/modules";
import { Field, fieldError, Page, ProblemMessage, QueryStatus } from "../ui";
import { SelectorInput } from "../ui/selector-input";
import { checkDraft } from "./assignments/form-rules";
import { SelectorMatches } from "./assignments/selector-matches";
import { type HeldCatalogWrite, isHeldCatalogWrite } from "../api/catalog-held";
import { CatalogHeldNotice } from "./catalog-held-notice";
import "./assignments/assignments.css";
import "./pages.css";

export default function AssignmentEditPage() {
  const { name } = useParams<{ name?: string }>();
  const [search] = useSearchParams();
  const existing = useAssignment(name ?? "", { enabled: name !== undefined });
  if (name === undefined) {
    return (
      <Page title="New assignment">
        <AssignmentForm initial={{ selector: search.get("selector") ?? "" }} />
      </Page>
    );
  }
  return (
    <Page title={`Edit ${name}`}>
      <QueryStatus query={existing}>
        {existing.data ? <AssignmentForm key={name} initial={existing.data} existing={name} /> : null}
      </QueryStatus>
    </Page>
  );
}

/** Codes that are about one field (and carry no errors[] entry naming it). */
const FIELD_CODES: Record<string, string[]> = {
  name: ["assignment_exists"],
  selector: ["invalid_selector"],
  modules: ["module_not_found"],
};

function apiFieldError(error: unknown, field: string): string | undefined {
  const own = fieldError(error, field);
  if (own) return own;
  if (error instanceof ApiError && FIELD_CODES[field]?.includes(error.code)) {
    return `${error.problem.detail} (${error.code})`;
  }
  return undefined;
}

function AssignmentForm({ initial, existing }: { initial: Partial<Assignment>; existing?: string }) {
  const [, navigate] = useLocation();
  const [name, setName] = useState(initial.name ?? "");
  const [selector, setSelector] = useState(initial.selector ?? "");
  const [modules, setModules] = useState<readonly string[]>(initial.modules ?? []);
  const [description, setDescription] = useState(initial.description ?? "");
  const [enforce, setEnforce] = useState(initial.enforce ?? false);
  const [touched, setTouched] = useState(false);
  const [held, setHeld] = useState<HeldCatalogWrite | undefined>();
  const available = useModules();
  const create = useCreateAssignment();
  const update = useUpdateAssignment(existing ?? "");
  const save = existing ? update : create;
  const check = checkDraft({ name, selector, modules, description }, { touched });
  const error = save.error;
  const shownAtField = ["name", "selector", "modules", "description"].some((f) => apiFieldError(error, f));

  // Modules the assignment names that the list does not hold still show, so they can be unticked.
  const names = [...new Set([...(available.data ?? []).map((m) => m.name), ...modules])].sort();

  function toggle(module: string, on: boolean) {
    setModules((ms) => (on ? [...ms, module] : ms.filter((m) => m !== module)));
  }

  function submit(e: FormEvent) {
    e.preventDefault();
    setTouched(true);
    setHeld(undefined);
    if (!check.ready || !check.selector) return;
    const body: NewAssignment = {
      name: name.trim(),
      selector: check.selector,
      modules: names.filter((m) => modules.includes(m)),
      description: description.trim() === "" ? null : description.trim(),
      enforce,
    };
    // Held for approval (catalog.write): stay on the form, with the request linked.
    const done = (a: Assignment | HeldCatalogWrite) =>
      isHeldCatalogWrite(a) ? setHeld(a) : navigate(`/assignments/${encodeURIComponent(a.name)}`);
    if (existing) {
      const { name: _name, ...change } = body;
      update.mutate(change, { onSuccess: done });
    } else create.mutate(body, { onSuccess: done });
  }

  const back = existing ? `/assignments/${encodeURIComponent(existing)}` : "/assignments";
  return (
    <form className="stack card" onSubmit={submit} aria-label={existing ? `Edit ${existing}` : "New assignment"}>
      {held ? <CatalogHeldNotice held={held} /> : null}
      <Field
        label="Name"
        hint={existing ? "an assignment's name cannot change" : "a-z 0-9 . _ - (e.g. web-base)"}
        error={check.name ?? apiFieldError(error, "name")}
      >
        <input
          type="text"
          value={name}
          readOnly={existing !== undefined}
          spellCheck={false}
          autoComplete="off"
          autoCapitalize="off"
          onChange={(e) => setName(e.target.value)}
        />
      </Field>
      <div>
        <SelectorInput value={selector} onChange={setSelector} required apiError={apiFieldError(error, "selector")} />
        <SelectorMatches selector={check.selector} />
      </div>
      <ModulePicker
        names={names}
        chosen={modules}
        available={available}
        error={check.modules ?? apiFieldError(error, "modules")}
        onToggle={toggle}
      />
      <Field label="Description" hint="optional, at most 1000 characters" error={apiFieldError(error, "description")}>
        <textarea value={description} rows={2} maxLength={1000} onChange={(e) => setDescription(e.target.value)} />
      </Field>
      <div className="stack">
        <label className="check">
          <input
            type="checkbox"
            checked={enforce}
            aria-describedby="enforce-hint"
            onChange={(e) => setEnforce(e.target.checked)}
          />
          Enforce
        </label>
        <p id="enforce-hint" className="muted">
          Drift a scheduled check finds is re-applied automatically (outside maintenance windows, at most once per agent
          per interval). Off: drift is only reported.
        </p>
      </div>
      {error && !shownAtField ? <ProblemMessage error={error} /> : null}
      <div className="toolbar">
        <button type="submit" className="btn btn-primary" disabled={!check.selectorOk || save.isPending}>
          {existing ? "Save" : "Create"}
        </button>
        <Link href={back} className="btn">
          Cancel
        </Link>
      </div>
    </form>
  );
}

/** The modules to apply, as checkboxes: every module the catalog holds and any the assignment names. */
function ModulePicker({
  names,
  chosen,
  available,
  error,
  onToggle,
}: {
  names: string[];
  chosen: readonly string[];
  available: ReturnType<typeof useModules>;
  error: string | undefined;
  onToggle: (module: string, on: boolean) => void;
}) {
  return (
    <fieldset className="stack module-picker" aria-describedby={error ? "modules-error" : undefined}>
      <legend>Modules</legend>
      <QueryStatus query={available}>
        {names.length === 0 ? (
          <p className="muted">
            No modules yet: <Link href="/modules/new">upload one</Link> first.
          </p>
        ) : (
          <div className="grid">
            {names.map((m) => (
              <label key={m} className="check">
                <input type="checkbox" checked={chosen.includes(m)} onChange={(e) => onToggle(m, e.target.checked)} />
                {m}
              </label>
            ))}
          </div>
        )}
      </QueryStatus>
      {error ? (
        <div id="modules-error" className="field-error" role="alert">
          {error}
        </div>
      ) : null}
    </fieldset>
  );
}
