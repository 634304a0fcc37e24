/** The console's shared UI: pages build on these, and on the CSS classes in theme.css. */
export { Badge, type BadgeTone, Banner, type BannerKind, EmptyState, toneOf } from "./banner";
export { ConfirmDialog, Dialog } from "./dialog";
export { type DeleteMutation, DeleteWithConfirm } from "./delete-with-confirm";
export { Field } from "./field";
export { FilterField, useListFilter } from "./filter-field";
export { Loading, QueryStatus } from "./loading";
export { Page, Section } from "./page";
export { fieldError, ProblemMessage, problemText } from "./problem";
export { relativeTime, toMs } from "./relative-time";
export { Time } from "./time";
