/**
 * The "Filter" box above a list the console holds whole (it filters in the browser, not the API).
 *
 *   const filter = useListFilter(all, (m, needle) => m.name.includes(needle));
 *   <FilterField value={filter.query} onChange={filter.setQuery} placeholder="name" />
 *   …filter.shown…
 */
import { useUrlState } from "../lib/url-state";
import { Field } from "./field";

/**
 * The filter text lives in the URL (?q=), so a filtered view is bookmarkable; typing replaces the
 * history entry instead of adding one per keystroke. `matches` gets the trimmed, lower-cased text.
 */
export function useListFilter<T>(items: readonly T[], matches: (item: T, needle: string) => boolean) {
  const [params, setParams] = useUrlState();
  const query = params.get("q") ?? "";
  const needle = query.trim().toLowerCase();
  const shown = needle ? items.filter((item) => matches(item, needle)) : items;
  const setQuery = (q: string) => setParams({ q }, { replace: true });
  return { query, setQuery, shown };
}

export function FilterField({
  value,
  onChange,
  placeholder,
}: {
  value: string;
  onChange: (value: string) => void;
  /** What the filter looks at, e.g. "name or description". */
  placeholder: string;
}) {
  return (
    <div className="toolbar">
      <Field label="Filter">
        <input
          type="search"
          value={value}
          placeholder={placeholder}
          spellCheck={false}
          autoComplete="off"
          onChange={(e) => onChange(e.target.value)}
        />
      </Field>
    </div>
  );
}
