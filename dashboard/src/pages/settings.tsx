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
const MODELS: [string, string, string][] = [
  ["agent_model", "Review model (agent_model)", "Reviews and chat; a repository's own model wins. Empty: AGENT_MODEL, else the built-in default."],
  ["refine_model", "Refine model (refine_model)", "Stored for refine work; this server runs none. Empty: the review model."],
  ["implement_model", "Implement model (implement_model)", "Stored for implement work; this server runs none. Empty: the review model."],
  ["improver_model", "Improver model (improver_model)", "The prompt improver. Empty: the review model."],
  ["verify_model", "Verifier model (verify_model)", "Checks each inline finding before it is posted. Empty: the review model."],
];
/** The number fields: setting, label, help line, the pattern the server accepts. */
const NUMBERS: [string, string, string, string][] = [
  ["review_max_tokens", "Most tokens one review may use (review_max_tokens)", "Input plus output tokens; the review stops and fails as `budget` when reached. Empty: REVIEW_MAX_TOKENS, else no limit.", "[1-9][0-9]{0,17}"],
  ["review_max_cost", "Most one review may cost, USD (review_max_cost)", "Priced from the model catalog. Empty: REVIEW_MAX_COST, else no limit.", "[0-9]+(\\.[0-9]+)?"],
  ["monthly_budget", "Monthly budget of the whole service, USD (monthly_budget)", "Reviews are skipped once the calendar month (UTC) reaches it; a repository's own budget replaces it there. Empty: MONTHLY_BUDGET, else none.", "[0-9]+(\\.[0-9]+)?"],
  ["thread_max_answers", "Answers per review thread (thread_max_answers)", "Most replies the App posts in one review thread; 0: none. Empty: THREAD_MAX_ANSWERS (3).", "[0-9]{1,9}"],
  ["pr_max_answers", "Answers per pull request (pr_max_answers)", "Most replies and /ask answers on one pull request; 0: none. Empty: PR_MAX_ANSWERS (20).", "[0-9]{1,9}"],
];

export function SettingsPage() {
  const settings = useQuery(q.settings());
  const client = useQueryClient();
  // Owned here, not by the form: a save replaces the stored settings, which remounts the form
  // (its key), and the "Saved." status must outlive that.
  const save = useMutation({
    mutationFn: async (body: Record<string, string>) => unwrap(await api.PUT("/api/settings", { body })),
    onSuccess: (data) => {
      client.setQueryData(q.settings().queryKey, data as Record<string, string>);
      return client.invalidateQueries({ queryKey: q.effective().queryKey });
    },
  });
  return (
    <>
      <header className="page-head">
        <h1>Settings</h1>
        <p className="muted">Empty a field to fall back to the environment or the built-in default.</p>
      </header>
      <InForce />
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
    for (const k of [...KEYS.map(([k]) => k), ...MODELS.map(([k]) => k), ...NUMBERS.map(([k]) => k), "default_prompt", "review_min_severity", "review_quiet", "review_verify", "review_passes"]) {
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
            <div key={k}>
              <SecretField id={k} label={label} value={draft[k] ?? ""} onChange={set(k)} />
              <p className="muted small">Unlocks its provider's models. Empty: {k.toUpperCase()} from the environment, else the provider cannot be used.</p>
            </div>
          ))}
        </div>
      </Card>
      <Card title="Models">
        <div className="grid two">
          {MODELS.map(([k, label, help]) => (
            <ModelPicker key={k} label={label} help={help} value={draft[k] ?? ""} onChange={set(k)} />
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

        </div>
      </Card>
      <Card title="Budgets and limits">
        <div className="grid two">
          {NUMBERS.map(([k, label, help, pattern]) => (
            <div key={k}>
              <label htmlFor={k}>{label}</label>
              <input id={k} type="text" inputMode="decimal" pattern={pattern} value={draft[k] ?? ""} placeholder="not set" onChange={(e) => set(k)(e.target.value.trim())} />
              <p className="muted small">{help}</p>
            </div>
          ))}
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

/** Where each value in force comes from, in words. */
const SOURCE: Record<string, string> = {
  setting: "this page",
  environment: "the environment",
  default: "the built-in default",
  inherited: "the review model",
  repository: "the repository",
  off: "off",
  missing: "missing",
};

/** What the server runs with (docs/review-service.md, "Settings in force"): each role's model and
 * where it comes from, each key's state, and what cannot run. */
function InForce() {
  const effective = useQuery(q.effective());
  return (
    <Card title="In force">
      <Query q={effective} what="Loading what is in force">
        {(e) => (
          <div className="stack">
            <div className="table-wrap">
              <table className="in-force" data-testid="models-in-force">
                <caption className="sr-only">The model of each role and where it comes from</caption>
                <thead>
                  <tr>
                    <th scope="col">Role</th>
                    <th scope="col">Model</th>
                    <th scope="col">From</th>
                    <th scope="col">Key</th>
                  </tr>
                </thead>
                <tbody>
                  {e.models.map((m) => (
                    <tr key={m.role} data-role={m.role}>
                      <td>{m.role}</td>
                      <td className="mono small">
                        {m.model ?? "—"}
                        {m.model && !m.inCatalog && !m.problem && <div className="warn-text small">not in the model catalog</div>}
                      </td>
                      <td data-testid="source">{SOURCE[m.source] ?? m.source}</td>
                      <td>
                        {m.problem ? (
                          <span className="error-text small" role="note">
                            {m.problem}
                          </span>
                        ) : m.key ? (
                          <span className="mono small">{m.key}</span>
                        ) : (
                          "—"
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <div className="table-wrap">
              <table className="in-force" data-testid="keys-in-force">
                <caption className="sr-only">Each provider key and where it is set</caption>
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">Provider</th>
                    <th scope="col">State</th>
                    <th scope="col">Used by</th>
                  </tr>
                </thead>
                <tbody>
                  {e.keys.map((k) => (
                    <tr key={k.setting} data-key={k.setting}>
                      <td className="mono small">
                        {k.setting} <span className="muted">/ {k.env}</span>
                      </td>
                      <td>{k.provider}</td>
                      <td data-testid="state" className={k.source === "missing" && k.usedBy.length > 0 ? "error-text" : undefined}>
                        {k.source === "setting" ? "set here" : k.source === "environment" ? "from the environment" : "missing"}
                      </td>
                      <td className="small">{k.usedBy.length > 0 ? k.usedBy.join(", ") : <span className="muted">no model in use</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </div>
        )}
      </Query>
    </Card>
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
