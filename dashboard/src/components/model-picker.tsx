// A model picker backed by GET /api/models: a search box over the catalog, configured
// providers first; the value is a `provider/model` spec, and an empty value means "inherit".
import { useQuery } from "@tanstack/react-query";
import { useDeferredValue, useId, useState } from "react";
import { q } from "../api/queries";

/** What is wrong with a typed model spec, checked against the catalog's answer for it (a
 * warning, not a refusal: a new model may be missing from the catalog; issue 30, defect 11). */
function specWarning(spec: string, catalog: { id: string }[] | undefined): string | null {
  if (spec === "") return null;
  if (!/^[a-z0-9][a-z0-9-]*\/[!-~]+$/.test(spec)) return "Not a `provider/model` spec: the server will refuse it.";
  if (catalog && !catalog.some((m) => m.id === spec))
    return "Not in the model catalog: check the spelling. It is saved anyway, for a model the catalog does not list yet.";
  return null;
}

export function ModelPicker({
  label,
  value,
  onChange,
  placeholder = "inherit the default",
  help,
}: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  placeholder?: string;
  /** One line on what the field does and what applies when it is empty. */
  help?: string;
}) {
  const id = useId();
  const [search, setSearch] = useState(value);
  const deferred = useDeferredValue(search);
  const models = useQuery(q.models(deferred));
  const exact = useDeferredValue(value);
  const checked = useQuery({ ...q.models(exact), enabled: exact.includes("/") });
  const warning = specWarning(exact, checked.data?.models);
  const list = (models.data?.models ?? []).slice().sort((a, b) => Number(b.configured) - Number(a.configured));
  return (
    <div className="model-picker">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="text"
        list={`${id}-list`}
        value={search}
        placeholder={placeholder}
        autoComplete="off"
        onChange={(e) => {
          setSearch(e.target.value);
          onChange(e.target.value.trim());
        }}
      />
      <datalist id={`${id}-list`}>
        {list.map((m) => (
          <option key={m.id} value={m.id}>
            {`${m.modelName} · ${m.providerName}${m.configured ? " · configured" : ""}`}
          </option>
        ))}
      </datalist>
      {help && <p className="muted small">{help}</p>}
      {warning && (
        <p className="warn-text small" role="status" data-testid="model-warning">
          {warning}
        </p>
      )}
      <p className="muted small" aria-live="polite">
        {models.isPending
          ? "Searching models…"
          : models.error
            ? "The model catalog is unavailable; type a provider/model spec."
            : `${models.data?.total ?? 0} models match; configured providers: ${(models.data?.providers ?? []).join(", ") || "none"}`}
      </p>
    </div>
  );
}
