// The stats filters (range, from/to, repo, model, and status on the review list), kept in the
// URL's search params so a view can be shared.
import { useQuery } from "@tanstack/react-query";
import { q } from "../api/queries";
import { cleanFilters, type Filters } from "../api/client";

const RANGES = ["24h", "7d", "30d", "90d", "all"];
const STATUSES = ["pending", "running", "completed", "failed", "skipped"];

/** The options of a select plus the value from the URL, so a shared link shows its filter
 * even before (or without) the list that names it. */
function withCurrent(options: string[], current: string | undefined): string[] {
  return current && !options.includes(current) ? [current, ...options] : options;
}

/** Search params → filters, dropping anything that is not a string. */
export function validateFilters(search: Record<string, unknown>): Filters {
  const pick = (k: string) => (typeof search[k] === "string" ? (search[k] as string) : undefined);
  return cleanFilters({
    range: pick("range"),
    from: pick("from"),
    to: pick("to"),
    repo: pick("repo"),
    model: pick("model"),
    status: pick("status"),
  });
}

export function FilterBar({
  value,
  onChange,
  withStatus = false,
  defaultRange,
}: {
  value: Filters;
  onChange: (f: Filters) => void;
  withStatus?: boolean;
  /** The range the page uses when the URL names none (the overview's 30 days). */
  defaultRange?: string;
}) {
  const repos = useQuery(q.repos());
  const stats = useQuery(q.stats({}));
  const set = (patch: Filters) => onChange(cleanFilters({ ...value, ...patch }));
  return (
    <form className="filters" aria-label="Filters" onSubmit={(e) => e.preventDefault()}>
      <label>
        Range
        <select value={value.range ?? ""} onChange={(e) => set({ range: e.target.value })}>
          <option value="">{defaultRange ? `last ${defaultRange} (default)` : "all time"}</option>
          {RANGES.filter((r) => r !== defaultRange).map((r) => (
            <option key={r} value={r}>
              {r === "all" ? "all" : `last ${r}`}
            </option>
          ))}
        </select>
      </label>
      <label>
        From
        <input type="date" value={value.from ?? ""} onChange={(e) => set({ from: e.target.value })} />
      </label>
      <label>
        To
        <input type="date" value={value.to ?? ""} onChange={(e) => set({ to: e.target.value })} />
      </label>
      <label>
        Repository
        <select value={value.repo ?? ""} onChange={(e) => set({ repo: e.target.value })}>
          <option value="">all</option>
          {withCurrent((repos.data ?? []).map((r) => r.full_name), value.repo).map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </label>
      <label>
        Model
        <select value={value.model ?? ""} onChange={(e) => set({ model: e.target.value })}>
          <option value="">all</option>
          {withCurrent(stats.data?.allModels ?? [], value.model).map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
      </label>
      {withStatus && (
        <label>
          Status
          <select value={value.status ?? ""} onChange={(e) => set({ status: e.target.value })}>
            <option value="">all</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      )}
      {Object.keys(value).length > 0 && (
        <button type="button" className="btn small" onClick={() => onChange({})}>
          Clear filters
        </button>
      )}
    </form>
  );
}
