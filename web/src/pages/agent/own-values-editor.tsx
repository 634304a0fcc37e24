/**
 * An agent's own values (the highest layer) in the YAML editor, prefilled with the text the API
 * kept. A refusal that names a line (invalid YAML, a bad key, a secret) is marked on that line and
 * said in words beside the editor with its code; any other refusal (the agent out of reach, …) is
 * shown as the API phrased it. Nothing is stored on a refusal; the text typed stays.
 */
import { type FormEvent, Suspense, useCallback, useId, useMemo, useState } from "react";
import { usePutAgentValues } from "../../api/values";
import { type LineProblem, YamlEditor } from "../../editor";
import { Loading, ProblemMessage, problemText } from "../../ui";
import { yamlProblemOf } from "../modules/yaml-source";

/** The API's detail, led by "Line N:" unless it names that line itself ("port (line 2): …"). */
function atLine(p: LineProblem): string {
  if (new RegExp(`\\bline ${p.line}\\b`, "i").test(p.message)) return p.message;
  return `Line ${p.line}${p.column ? `, column ${p.column}` : ""}: ${p.message}`;
}

export function OwnValuesEditor({
  nodeId,
  initial,
  onSaved,
  onCancel,
}: {
  nodeId: string;
  initial: string;
  onSaved: () => void;
  onCancel: () => void;
}) {
  const [content, setContent] = useState(initial);
  const put = usePutAgentValues(nodeId);
  const errorId = useId();
  const problem = useMemo(
    () => (put.error ? yamlProblemOf(put.error, put.variables?.content ?? "") : undefined),
    [put.error, put.variables],
  );
  const code = put.error ? problemText(put.error).code : undefined;
  const problems = useMemo<LineProblem[]>(() => (problem ? [problem] : []), [problem]);
  const edit = useCallback((text: string) => setContent(text), []);

  function submit(e: FormEvent) {
    e.preventDefault();
    put.reset();
    put.mutate({ content }, { onSuccess: onSaved });
  }

  return (
    <form className="stack card" onSubmit={submit} aria-label="Edit this agent's values" autoComplete="off">
      <p className="muted values-text">
        A map, the highest layer: its maps merge over the value sets', its lists and scalars replace theirs. Saving an
        empty text clears them.
      </p>
      <Suspense fallback={<Loading label="Loading the editor…" />}>
        <YamlEditor
          value={content}
          onChange={edit}
          label="This agent's values (YAML)"
          problems={problems}
          describedBy={put.error ? errorId : undefined}
        />
      </Suspense>
      <div id={errorId}>
        {problem ? (
          <div className="problem" role="alert" data-line={problem.line}>
            <span className="problem-detail">{atLine(problem)}</span>
            {code ? <code className="problem-code">{code}</code> : null}
          </div>
        ) : put.error ? (
          <ProblemMessage error={put.error} />
        ) : null}
      </div>
      <div className="toolbar">
        <button type="submit" className="btn btn-primary" disabled={put.isPending}>
          Save
        </button>
        <button type="button" className="btn" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
