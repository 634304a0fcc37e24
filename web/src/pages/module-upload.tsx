/**
 * Upload a module (/modules/new) or a new version of one (/modules/:name/upload). The YAML is typed
 * in a CodeMirror editor; a refusal that names a line (invalid YAML, an unknown field, …) is marked
 * on that line and said in words, and nothing is stored. Success opens the module's page.
 */
import { type FormEvent, Suspense, useCallback, useId, useMemo, useState } from "react";
import { Link, useLocation, useParams } from "wouter";
import { useModule, useUploadModule } from "../api/modules";
import { type LineProblem, YamlEditor } from "../editor";
import { Loading, Page, ProblemMessage, problemText, QueryStatus } from "../ui";
import { MODULE_TEMPLATE, moduleNameOf, yamlProblemOf } from "./modules/yaml-source";
import { type HeldCatalogWrite, isHeldCatalogWrite } from "../api/catalog-held";
import { CatalogHeldNotice } from "./catalog-held-notice";
import "./pages.css";

export default function ModuleUploadPage() {
  const { name } = useParams<{ name?: string }>();
  // A new version starts from the current content; a new module from a small example.
  const current = useModule(name ?? "", { enabled: name !== undefined });
  return (
    <Page title="Upload module">
      {name === undefined ? (
        <UploadForm initial={MODULE_TEMPLATE} />
      ) : (
        <QueryStatus query={current}>
          {current.data ? <UploadForm key={name} initial={current.data.content} fixedName={name} /> : null}
        </QueryStatus>
      )}
    </Page>
  );
}

function UploadForm({ initial, fixedName }: { initial: string; fixedName?: string }) {
  const [, navigate] = useLocation();
  const [content, setContent] = useState(initial);
  const [localError, setLocalError] = useState<string | undefined>();
  const [held, setHeld] = useState<HeldCatalogWrite | undefined>();
  const upload = useUploadModule();
  const errorId = useId();
  const problem = useMemo(
    () => (upload.error ? yamlProblemOf(upload.error, upload.variables?.content ?? "") : undefined),
    [upload.error, upload.variables],
  );
  const code = upload.error ? problemText(upload.error).code : undefined;
  const problems = useMemo<LineProblem[]>(() => (problem ? [problem] : []), [problem]);

  const edit = useCallback((text: string) => {
    setContent(text);
    setLocalError(undefined);
  }, []);

  function submit(e: FormEvent) {
    e.preventDefault();
    upload.reset();
    setHeld(undefined);
    const name = fixedName ?? moduleNameOf(content);
    if (!name) {
      setLocalError("The YAML needs a top-level name: line (the module's name).");
      return;
    }
    upload.mutate(
      { name, content },
      {
        // Held for approval (catalog.write): stay on the form, with the request linked.
        onSuccess: (m) => (isHeldCatalogWrite(m) ? setHeld(m) : navigate(`/modules/${encodeURIComponent(m.name)}`)),
      },
    );
  }

  return (
    <form className="stack" onSubmit={submit} aria-label="Upload module">
      {held ? <CatalogHeldNotice held={held} /> : null}
      {fixedName ? (
        <p>
          New version of <Link href={`/modules/${encodeURIComponent(fixedName)}`}>{fixedName}</Link>: its{" "}
          <code>name:</code> must stay <code>{fixedName}</code>.
        </p>
      ) : (
        <p className="muted">
          The module's name is its top-level <code>name:</code>; uploading an existing name replaces that module.
        </p>
      )}
      <Suspense fallback={<Loading label="Loading the editor…" />}>
        <YamlEditor
          value={content}
          onChange={edit}
          label="Module YAML"
          problems={problems}
          describedBy={upload.error || localError ? errorId : undefined}
        />
      </Suspense>
      <div id={errorId}>
        {problem ? (
          <div className="problem" role="alert">
            <span className="problem-detail">
              Line <span data-testid="yaml-error-line">{problem.line}</span>
              {problem.column ? `, column ${problem.column}` : ""}: {problem.message}
            </span>
            {code ? <code className="problem-code">{code}</code> : null}
          </div>
        ) : upload.error ? (
          <ProblemMessage error={upload.error} />
        ) : null}
        {localError ? (
          <div className="problem" role="alert">
            <span className="problem-detail">{localError}</span>
          </div>
        ) : null}
      </div>
      <div className="toolbar">
        <button type="submit" className="btn btn-primary" disabled={upload.isPending}>
          Upload
        </button>
        <Link href={fixedName ? `/modules/${encodeURIComponent(fixedName)}` : "/modules"} className="btn">
          Cancel
        </Link>
      </div>
    </form>
  );
}
