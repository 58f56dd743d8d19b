// Settings: keys masked with a reveal control, the model fields with the picker, the default
// prompt, the connection test; and the reviewer skills.
import { useMutation, useQuery, useQueryClient, type UseMutationResult } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap, type Skill } from "../api/client";
import { q } from "../api/queries";
import { ModelPicker } from "../components/model-picker";
import { Card, Empty, Query, Time } from "../components/ui";

const KEYS: [string, string][] = [
  ["agent_api_key", "Anthropic API key (agent_api_key)"],
  ["second_api_key", "Z.ai coding plan key (second_api_key)"],
  ["third_api_key", "OpenAI API key (third_api_key)"],
];
const MODELS: [string, string][] = [
  ["agent_model", "Review model (agent_model)"],
  ["refine_model", "Refine model (refine_model)"],
  ["implement_model", "Implement model (implement_model)"],
  ["improver_model", "Improver model (improver_model)"],
  ["verify_model", "Verifier model (verify_model)"],
];

export function SettingsPage() {
  const settings = useQuery(q.settings());
  const client = useQueryClient();
  // Owned here, not by the form: a save replaces the stored settings, which remounts the form
  // (its key), and the "Saved." status must outlive that.
  const save = useMutation({
    mutationFn: async (body: Record<string, string>) => unwrap(await api.PUT("/api/settings", { body })),
    onSuccess: (data) => client.setQueryData(q.settings().queryKey, data as Record<string, string>),
  });
  return (
    <>
      <header className="page-head">
        <h1>Settings</h1>
        <p className="muted">Empty a field to fall back to the environment or the built-in default.</p>
      </header>
      <Query q={settings} what="Loading settings">
        {(s) => <SettingsForm key={JSON.stringify(s)} stored={s} save={save} />}
      </Query>
      <ConnectionTest />
    </>
  );
}

type SaveSettings = UseMutationResult<unknown, Error, Record<string, string>>;

function SettingsForm({ stored, save }: { stored: Record<string, string>; save: SaveSettings }) {
  const [draft, setDraft] = useState<Record<string, string>>(stored);
  const changed = () => {
    const body: Record<string, string> = {};
    for (const [k] of [...KEYS, ...MODELS, ["default_prompt", ""], ["review_min_severity", ""], ["review_quiet", ""], ["review_verify", ""], ["review_passes", ""], ["monthly_budget", ""]]) {
      if (k && (draft[k] ?? "") !== (stored[k] ?? "")) body[k] = draft[k] ?? "";
    }
    return body;
  };
  const set = (k: string) => (v: string) => setDraft((d) => ({ ...d, [k]: v }));
  return (
    <form
      className="stack"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate(changed());
      }}
    >
      <Card title="Provider keys">
        <div className="stack">
          {KEYS.map(([k, label]) => (
            <SecretField key={k} id={k} label={label} value={draft[k] ?? ""} onChange={set(k)} />
          ))}
        </div>
      </Card>
      <Card title="Models">
        <div className="grid two">
          {MODELS.map(([k, label]) => (
            <ModelPicker key={k} label={label} value={draft[k] ?? ""} onChange={set(k)} />
          ))}
        </div>
      </Card>
      <Card title="Default prompt">
        <label htmlFor="default_prompt">The review focus used by repositories without their own prompt</label>
        <textarea id="default_prompt" rows={10} value={draft.default_prompt ?? ""} onChange={(e) => set("default_prompt")(e.target.value)} />
      </Card>
      <Card title="What is posted">
        <div className="grid two">
          <div>
            <label htmlFor="review_min_severity">Least severity posted inline (review_min_severity)</label>
            <select id="review_min_severity" value={draft.review_min_severity ?? ""} onChange={(e) => set("review_min_severity")(e.target.value)}>
              <option value="">nit: all (default)</option>
              <option value="question">question and blocking</option>
              <option value="blocking">blocking only</option>
            </select>
          </div>
          <div>
            <input
              id="review_quiet"
              type="checkbox"
              checked={draft.review_quiet === "true"}
              onChange={(e) => set("review_quiet")(e.target.checked ? "true" : "")}
            />{" "}
            <label htmlFor="review_quiet">Post nothing when a review has no finding to post (review_quiet)</label>
          </div>
          <div>
            <label htmlFor="review_passes">Passes over the diff (review_passes)</label>
            <select id="review_passes" value={draft.review_passes ?? ""} onChange={(e) => set("review_passes")(e.target.value)}>
              <option value="">1 (default)</option>
              {["2", "3", "4", "5"].map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </div>
          <div>
            <input
              id="review_verify"
              type="checkbox"
              checked={draft.review_verify !== "false"}
              onChange={(e) => set("review_verify")(e.target.checked ? "" : "false")}
            />{" "}
            <label htmlFor="review_verify">Check every inline finding with an independent verifier before posting (review_verify)</label>
          </div>
          <div>
            <label htmlFor="monthly_budget">Monthly budget of the whole service in USD (monthly_budget; empty: MONTHLY_BUDGET or none)</label>
            <input
              id="monthly_budget"
              type="number"
              min="0"
              step="any"
              inputMode="decimal"
              value={draft.monthly_budget ?? ""}
              onChange={(e) => set("monthly_budget")(e.target.value)}
            />
          </div>
        </div>
      </Card>
      <div className="row">
        <button type="submit" className="btn primary" disabled={save.isPending}>
          {save.isPending ? "Saving…" : "Save settings"}
        </button>
        {save.isSuccess && <span role="status">Saved.</span>}
        {save.error && <span role="alert" className="error-text">{save.error.message}</span>}
      </div>
    </form>
  );
}

function SecretField({ id, label, value, onChange }: { id: string; label: string; value: string; onChange: (v: string) => void }) {
  const [shown, setShown] = useState(false);
  return (
    <div>
      <label htmlFor={id}>{label}</label>
      <div className="row nowrap">
        <input
          id={id}
          type={shown ? "text" : "password"}
          value={value}
          autoComplete="off"
          spellCheck={false}
          placeholder="not set"
          onChange={(e) => onChange(e.target.value)}
        />
        <button type="button" className="btn small" aria-pressed={shown} aria-controls={id} onClick={() => setShown((s) => !s)}>
          {shown ? "Hide" : "Reveal"}
        </button>
      </div>
    </div>
  );
}

function ConnectionTest() {
  const test = useMutation({
    mutationFn: async () => unwrap(await api.GET("/api/settings/test")),
  });
  return (
    <Card title="Connection test">
      <p className="muted small">Sends one small prompt through the configured key and review model (one provider request).</p>
      <button type="button" className="btn" onClick={() => test.mutate()} disabled={test.isPending}>
        {test.isPending ? "Testing…" : "Test the connection"}
      </button>
      {test.data && (
        <p role="status" className={test.data.ok ? "ok-text" : "error-text"} data-testid="connection-result">
          {test.data.ok ? `OK: ${test.data.text ?? ""}` : `Failed: ${test.data.error ?? ""}`}
        </p>
      )}
      {test.error && <p role="alert" className="error-text">{test.error.message}</p>}
    </Card>
  );
}

export function SkillsPage() {
  const client = useQueryClient();
  const skills = useQuery(q.skills());
  const [url, setUrl] = useState("");
  const refresh = () => client.invalidateQueries({ queryKey: ["skills"] });
  const install = useMutation({
    mutationFn: async (u: string) => unwrap(await api.POST("/api/skills", { body: { url: u } })),
    onSuccess: () => {
      setUrl("");
      return refresh();
    },
  });
  return (
    <>
      <header className="page-head">
        <h1>Skills</h1>
        <p className="muted">Reviewer skills, installed from a folder on GitHub and pinned to its commit.</p>
      </header>
      <Card title="Install a skill">
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            install.mutate(url.trim());
          }}
        >
          <label htmlFor="skill-url" className="sr-only">
            Tree URL
          </label>
          <input
            id="skill-url"
            type="url"
            required
            value={url}
            placeholder="https://github.com/owner/repo/tree/main/skills/name"
            onChange={(e) => setUrl(e.target.value)}
          />
          <button type="submit" className="btn primary" disabled={install.isPending}>
            {install.isPending ? "Installing…" : "Install"}
          </button>
        </form>
        {install.error && <p role="alert" className="error-text">{install.error.message}</p>}
      </Card>
      <Card title="Installed">
        <Query q={skills} what="Loading skills">
          {(rows) => (rows.length === 0 ? <Empty>No skill installed.</Empty> : <SkillTable rows={rows} refresh={refresh} />)}
        </Query>
      </Card>
    </>
  );
}

function SkillTable({ rows, refresh }: { rows: Skill[]; refresh: () => Promise<void> }) {
  const toggle = useMutation({
    mutationFn: async (s: Skill) =>
      unwrap(await api.PUT("/api/skills/{name}", { params: { path: { name: s.name } }, body: { enabled: s.enabled !== 1 } })),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: async (s: Skill) => unwrap(await api.DELETE("/api/skills/{name}", { params: { path: { name: s.name } } })),
    onSuccess: refresh,
  });
  return (
    <div className="table-wrap">
      <table>
        <caption className="sr-only">Installed skills</caption>
        <thead>
          <tr>
            <th scope="col">Skill</th>
            <th scope="col">State</th>
            <th scope="col" className="hide-narrow">Source</th>
            <th scope="col">Installed</th>
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((s) => (
            <tr key={s.name} data-skill={s.name}>
              <td>
                <strong className="mono">{s.name}</strong>
                {s.description && <div className="muted small">{s.description}</div>}
              </td>
              <td>{s.enabled === 1 ? "enabled" : "disabled"}</td>
              <td className="hide-narrow small">
                <a href={s.source_url} target="_blank" rel="noreferrer" className="mono">
                  {s.owner}/{s.repo}/{s.path}
                </a>{" "}
                @ <span className="mono">{s.ref.slice(0, 7)}</span>
              </td>
              <td>
                <Time at={s.created_at} />
              </td>
              <td className="row nowrap">
                <button type="button" className="btn small" onClick={() => toggle.mutate(s)}>
                  {s.enabled === 1 ? "Disable" : "Enable"}
                </button>
                <button
                  type="button"
                  className="btn small danger"
                  onClick={() => {
                    if (window.confirm(`Delete the skill ${s.name}?`)) remove.mutate(s);
                  }}
                >
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
