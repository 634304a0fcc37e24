/**
 * A modal dialog on the native <dialog> element: focus trapping, Escape and the backdrop come from the
 * browser. Open it by rendering it with `open`; it calls `onClose` on Escape or "Cancel".
 */
import { type ReactNode, useEffect, useId, useRef } from "react";

export function Dialog({
  open,
  title,
  onClose,
  children,
  actions,
}: {
  open: boolean;
  title: string;
  onClose: () => void;
  children?: ReactNode;
  /** Buttons beside "Cancel" (e.g. the confirming one). */
  actions?: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    if (open && !el.open) el.showModal();
    if (!open && el.open) el.close();
  }, [open]);
  return (
    <dialog ref={ref} className="dialog" aria-labelledby={titleId} onClose={onClose}>
      <h2 id={titleId}>{title}</h2>
      {children}
      <div className="toolbar dialog-actions">
        <button type="button" className="btn" onClick={onClose}>
          Cancel
        </button>
        {actions}
      </div>
    </dialog>
  );
}

/** Asks before a destructive action; `onConfirm` runs on the danger button. */
export function ConfirmDialog({
  open,
  title,
  confirmLabel,
  onConfirm,
  onClose,
  children,
}: {
  open: boolean;
  title: string;
  confirmLabel: string;
  onConfirm: () => void;
  onClose: () => void;
  children?: ReactNode;
}) {
  return (
    <Dialog
      open={open}
      title={title}
      onClose={onClose}
      actions={
        <button type="button" className="btn btn-danger" onClick={onConfirm}>
          {confirmLabel}
        </button>
      }
    >
      {children}
    </Dialog>
  );
}
