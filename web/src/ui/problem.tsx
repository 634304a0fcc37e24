/**
 * Shows an API failure the way the API phrased it: its `detail` and its stable `code`. Never a blank
 * screen: anything that is not an ApiError is shown by its message.
 */
import { ApiError } from "../api/client";

export function problemText(error: unknown): { detail: string; code: string | undefined } {
  if (error instanceof ApiError) return { detail: error.problem.detail, code: error.problem.code };
  if (error instanceof Error) return { detail: error.message, code: undefined };
  return { detail: String(error), code: undefined };
}

/** The message of the API's `errors[]` entry naming this field, if any. */
export function fieldError(error: unknown, field: string): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  const errors = error.problem.errors;
  if (!Array.isArray(errors)) return undefined;
  for (const e of errors as { field?: string; message?: string }[]) {
    if (e.field === field || e.field?.endsWith(`.${field}`)) return e.message;
  }
  return undefined;
}

export function ProblemMessage({ error }: { error: unknown }) {
  if (!error) return null;
  const { detail, code } = problemText(error);
  return (
    <div className="problem" role="alert">
      <span className="problem-detail">{detail}</span>
      {code ? <code className="problem-code">{code}</code> : null}
    </div>
  );
}
