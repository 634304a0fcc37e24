/**
 * A labelled form control. The label, the hint and the error are wired to the control (htmlFor / id,
 * aria-describedby, aria-invalid) so screen readers and `getByLabel` find it by its visible name.
 *
 *   <Field label="Selector" error={err}><input value={v} onChange={…} /></Field>
 */
import { cloneElement, isValidElement, type ReactElement, type ReactNode, useId } from "react";

type ControlProps = {
  id?: string;
  "aria-describedby"?: string;
  "aria-invalid"?: boolean;
};

export function Field({
  label,
  error,
  hint,
  children,
  className,
}: {
  label: ReactNode;
  error?: ReactNode;
  hint?: ReactNode;
  /** The one control (input, select, textarea); it gets the id and aria attributes. */
  children: ReactElement<ControlProps>;
  className?: string;
}) {
  const generated = useId();
  const control = isValidElement(children) ? children : null;
  const id = control?.props.id ?? generated;
  const hintId = hint ? `${id}-hint` : undefined;
  const errorId = error ? `${id}-error` : undefined;
  const describedBy = [control?.props["aria-describedby"], hintId, errorId].filter(Boolean).join(" ") || undefined;
  return (
    <div className={["field", error ? "field-invalid" : "", className ?? ""].filter(Boolean).join(" ")}>
      <label htmlFor={id}>{label}</label>
      {control
        ? cloneElement(control, {
            id,
            "aria-describedby": describedBy,
            ...(error ? { "aria-invalid": true } : {}),
          })
        : children}
      {hint ? (
        <small id={hintId} className="field-hint muted">
          {hint}
        </small>
      ) : null}
      {error ? (
        <div id={errorId} className="field-error" role="alert">
          {error}
        </div>
      ) : null}
    </div>
  );
}
