/**
 * A selector field checked as it is typed with the gateway's own parser (lib/selector.ts): the
 * error says what is wrong and marks where, so nothing that would be refused is ever sent.
 *
 *   <SelectorInput value={text} onChange={setText} required />
 *   const check = checkSelector(text) // the same verdict, for enabling the submit button
 */
import type { ReactNode } from "react";
import { checkSelector } from "../lib/selector";
import { Field } from "./field";
import { selectorExcerpt } from "./selector-excerpt";
import "./selector-input.css";

export const SELECTOR_HINT = "e.g. role=web, env in (prod,staging), !draining, attr.os=linux; * for every agent";

export function SelectorInput({
  value,
  onChange,
  label = "Selector",
  hint = SELECTOR_HINT,
  required = false,
  apiError,
  className,
}: {
  value: string;
  onChange: (value: string) => void;
  label?: ReactNode;
  hint?: ReactNode;
  /** Blank is not a selector here (the caller disables submitting; no error is shown for it). */
  required?: boolean;
  /** What the API said about the selector, shown when the text itself parses. */
  apiError?: string | undefined;
  className?: string;
}) {
  const check = checkSelector(value);
  const error = check.ok ? apiError : <SelectorError text={value} message={check.message} position={check.position} />;
  return (
    <Field label={label} hint={hint} error={error} className={className}>
      <input
        type="text"
        className="mono"
        value={value}
        required={required}
        spellCheck={false}
        autoComplete="off"
        autoCapitalize="off"
        onChange={(e) => onChange(e.target.value)}
      />
    </Field>
  );
}

function SelectorError({ text, message, position }: { text: string; message: string; position: number }) {
  const x = selectorExcerpt(text, position);
  return (
    <>
      <span>{message}</span>
      <code className="selector-excerpt" data-testid="selector-error-at">
        {x.clippedStart ? "…" : ""}
        {x.before}
        <mark>{x.at || " "}</mark>
        {x.after}
        {x.clippedEnd ? "…" : ""}
      </code>
    </>
  );
}
