// A model picker backed by GET /api/models: a search box over the catalog, configured
// providers first; the value is a `provider/model` spec, and an empty value means "inherit".
import { useQuery } from "@tanstack/react-query";
import { useDeferredValue, useId, useState } from "react";
import { q } from "../api/queries";

export function ModelPicker({
  label,
  value,
  onChange,
  placeholder = "inherit the default",
}: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  placeholder?: string;
}) {
  const id = useId();
  const [search, setSearch] = useState(value);
  const deferred = useDeferredValue(search);
  const models = useQuery(q.models(deferred));
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
