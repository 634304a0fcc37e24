/**
 * A destructive action, asked first: a danger button, then a ConfirmDialog; confirming runs the page's
 * delete mutation (the hook, and so the request, stays in web/src/api) and `onDeleted` after it worked.
 *
 *   <DeleteWithConfirm mutation={remove} target={m.name} title={`Delete module ${m.name}?`}
 *     onDeleted={() => navigate("/modules")}>
 *     <p>What happens to what uses it.</p>
 *   </DeleteWithConfirm>
 *
 * One per thing: in a table each row gets its own (its dialog is hidden until asked for).
 */
import { type ReactNode, useState } from "react";
import { ConfirmDialog } from "./dialog";
import { ProblemMessage } from "./problem";

/** What this needs of a react-query mutation; a page passes the result of its `useDelete…()` hook. */
export interface DeleteMutation<K> {
  mutate: (target: K, options?: { onSuccess?: () => void }) => void;
  reset: () => void;
  isPending: boolean;
  error: unknown;
}

export function DeleteWithConfirm<K>({
  mutation,
  target,
  title,
  children,
  label = "Delete",
  small = false,
  tooltip,
  accessibleName,
  showProblem = true,
  onDeleted,
}: {
  mutation: DeleteMutation<K>;
  /** What `mutation.mutate` deletes (a name or an id). */
  target: K;
  /** The dialog's title (and accessible name): the question, naming the thing. */
  title: string;
  /** The dialog's body: what deleting it does. */
  children?: ReactNode;
  /** The button's text, and the confirming button's. */
  label?: string;
  /** The compact button of a table row. */
  small?: boolean;
  tooltip?: string;
  /** Where a bare "Delete" would be ambiguous (one per row), e.g. "Delete web". */
  accessibleName?: string;
  /**
   * False where the page shows `mutation.error` itself: a list shares one mutation between its rows
   * and shows its refusal once, under the table, rather than inside a row.
   */
  showProblem?: boolean;
  onDeleted?: () => void;
}) {
  const [confirming, setConfirming] = useState(false);
  // aria-disabled rather than disabled: the button keeps focus (where the closing dialog returns it)
  // while the request is in flight, and a second delete cannot start before the first one's answer.
  const busy = mutation.isPending;
  return (
    <>
      <button
        type="button"
        className={small ? "btn btn-danger btn-small" : "btn btn-danger"}
        title={tooltip}
        aria-label={accessibleName}
        aria-disabled={busy || undefined}
        onClick={() => {
          if (busy) return;
          mutation.reset();
          setConfirming(true);
        }}
      >
        {label}
      </button>
      {showProblem && mutation.error ? <ProblemMessage error={mutation.error} /> : null}
      <ConfirmDialog
        open={confirming}
        title={title}
        confirmLabel={label}
        onClose={() => setConfirming(false)}
        onConfirm={() => {
          setConfirming(false);
          mutation.mutate(target, { onSuccess: onDeleted });
        }}
      >
        {children}
      </ConfirmDialog>
    </>
  );
}
