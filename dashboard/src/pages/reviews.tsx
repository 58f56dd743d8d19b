// Reviews: the filterable list, updating live; a review with its findings and transcript.
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, getRouteApi } from "@tanstack/react-router";
import { useEffect, useState } from "react";
import { api, unwrap, type DroppedFinding, type Filters, type Finding, type Review } from "../api/client";
import { q, type TranscriptItem } from "../api/queries";
import { FilterBar } from "../components/filters";
import { FailureBox } from "../components/failure";
import { Card, Empty, ErrorBox, NotFoundPage, Pre, Query, ReviewTable, StatusBadge, Time, count, duration, isNotFound, money, PrLink, useForgeLinks } from "../components/ui";

const listRoute = getRouteApi("/reviews");

/** The list's filters as last shown, so that "← Reviews" goes back to the same list (kept for
 * the tab's session, so a reloaded review page still knows them). */
const LIST_KEY = "review:list-filters";
function rememberList(f: Filters) {
  try {
    sessionStorage.setItem(LIST_KEY, JSON.stringify(f));
  } catch {
    // storage disabled: the back link then opens the unfiltered list
  }
}
function rememberedList(): Filters {
  try {
    const v: unknown = JSON.parse(sessionStorage.getItem(LIST_KEY) ?? "{}");
    return v && typeof v === "object" ? (v as Filters) : {};
  } catch {
    return {};
  }
}

/** Rows per page of the list. */
const PAGE = 100;

export function ReviewsPage() {
  const filters = listRoute.useSearch();
  const navigate = listRoute.useNavigate();
  const pages = useInfiniteQuery(q.reviewPages(filters, PAGE));
  useEffect(() => rememberList(filters), [filters]);
  const rows = pages.data?.pages.flatMap((p) => p.rows) ?? [];
  const total = pages.data?.pages[0]?.total ?? 0;
  return (
    <>
      <header className="page-head">
        <h1>Reviews</h1>
        <p className="muted">Newest first; new reviews and status changes appear as they happen.</p>
      </header>
      <FilterBar value={filters} onChange={(f: Filters) => void navigate({ search: f, replace: true })} withStatus />
      <Card>
        <Query q={{ ...pages, data: pages.data ? rows : undefined }} what="Loading reviews">
          {(list) => (
            <>
              <p className="muted small" data-testid="list-count" aria-live="polite">
                {list.length === total ? `${count(total)} reviews` : `Showing ${count(list.length)} of ${count(total)} reviews`}
              </p>
              <ReviewTable rows={list} caption="Reviews" empty="No review matches these filters." />
              {pages.hasNextPage && (
                <p>
                  <button type="button" className="btn" onClick={() => void pages.fetchNextPage()} disabled={pages.isFetchingNextPage}>
                    {pages.isFetchingNextPage ? "Loading…" : `Load older (${count(total - list.length)} more)`}
                  </button>
                </p>
              )}
            </>
          )}
        </Query>
      </Card>
    </>
  );
}

const oneRoute = getRouteApi("/reviews/$id");

export function ReviewPage() {
  const { id } = oneRoute.useParams();
  const reviewId = Number(id);
  const review = useQuery(q.review(reviewId));
  const [back] = useState(rememberedList);
  const backLink = (
    <Link to="/reviews" search={back}>
      ← Reviews
    </Link>
  );
  if (isNotFound(review.error))
    return (
      <NotFoundPage title="Review not found" back={backLink}>
        There is no review #{id}: it may have been deleted with its repository.
      </NotFoundPage>
    );
  return (
    <>
      <p>{backLink}</p>
      <Query q={review} what="Loading the review">
        {(r) => <ReviewDetail review={r} />}
      </Query>
    </>
  );
}

function ReviewDetail({ review: r }: { review: Review }) {
  const client = useQueryClient();
  const findings = useQuery(q.findings(r.id));
  const dropped = useQuery(q.dropped(r.id));
  const done = ["completed", "failed", "skipped"].includes(r.status);
  // A running review's transcript grows while it runs: poll it until the review ends.
  const transcript = useQuery({
    ...q.transcript(r.id),
    enabled: r.session_id !== null && r.session_id !== undefined,
    refetchInterval: done ? false : 3000,
  });
  // Retry re-runs a pull request's review: not while it runs, and not an improver run (PR 0).
  const canRetry = done && r.pr_number !== 0;
  const [confirmRetry, setConfirmRetry] = useState(false);
  const retry = useMutation({
    mutationFn: async () => unwrap(await api.POST("/api/reviews/{id}/retry", { params: { path: { id: String(r.id) } } })),
    onSuccess: () => {
      setConfirmRetry(false);
      return client.invalidateQueries({ queryKey: ["reviews"] });
    },
  });
  const stop = useMutation({
    mutationFn: async () => unwrap(await api.POST("/api/reviews/{id}/stop", { params: { path: { id: String(r.id) } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: ["reviews"] }),
  });
  const elapsed = r.completed_at ? r.completed_at - r.created_at : null;
  return (
    <>
      <header className="page-head row">
        <div>
          <h1>{r.title ?? (r.pr_number === 0 ? "Prompt improver run" : `Review #${r.id}`)}</h1>
          <p className="muted">
            <PrLink review={r} /> · review #{r.id}
          </p>
        </div>
        <div className="row">
          <StatusBadge status={r.status} />
          {!done && (
            <button type="button" className="btn danger" onClick={() => stop.mutate()} disabled={stop.isPending}>
              Stop
            </button>
          )}
          {canRetry &&
            (confirmRetry ? (
              <span className="row" role="group" aria-label="Confirm retry">
                <span>Run this review again?</span>
                <button type="button" className="btn primary" onClick={() => retry.mutate()} disabled={retry.isPending}>
                  Yes, retry
                </button>
                <button type="button" className="btn" onClick={() => setConfirmRetry(false)}>
                  Cancel
                </button>
              </span>
            ) : (
              <button type="button" className="btn" onClick={() => setConfirmRetry(true)}>
                Retry…
              </button>
            ))}
        </div>
      </header>
      {(retry.error || stop.error) && <ErrorBox error={retry.error ?? stop.error} />}
      {retry.isSuccess && <p role="status">Retry queued: a new review appears in the list.</p>}
      {stop.isSuccess && <p role="status">Stop requested.</p>}
      {r.status === "failed" ? (
        <FailureBox review={r} lastTurns={lastTurns(transcript.data?.items)} />
      ) : (
        r.error && (
          <div className="error-box" role="alert">
            <strong>{r.status === "skipped" ? "Skipped:" : "Error:"}</strong> {r.error}
          </div>
        )
      )}
      <Card>
        <dl className="facts">
          <Fact label="Status" value={r.status} />
          <Fact label="Trigger" value={r.trigger ?? "—"} />
          <Fact label="Attempt" value={r.attempt === 0 ? "first run" : "automatic retry"} />
          <div>
            <dt>Started</dt>
            <dd>
              <Time at={r.created_at} />
            </dd>
          </div>
          <div>
            <dt>Finished</dt>
            <dd>
              <Time at={r.completed_at} />
            </dd>
          </div>
          <Fact label="Duration" value={duration(elapsed)} />
          <Fact label="Cost" value={money(r.cost)} />
          <Fact label="Tokens" value={count(r.tokens)} />
          <Fact label="Model" value={r.model ?? "—"} mono />
        </dl>
      </Card>
      <Card title="Findings">
        <Query q={findings} what="Loading findings">
          {(rows) => <FindingList review={r} rows={rows} />}
        </Query>
      </Card>
      {dropped.data && dropped.data.length > 0 && (
        <Card title="Dropped by verification">
          <DroppedList rows={dropped.data} />
        </Card>
      )}
      <Card title="Transcript">
        {r.session_id === null || r.session_id === undefined ? (
          <Empty>No agent session was recorded for this review.</Empty>
        ) : (
          <Query q={transcript} what="Loading the transcript">
            {(t) =>
              // Only these two codes mean the transcript could not be read; any other `error` is
              // the agent's own, written into the transcript of a failed or cancelled review
              // (docs/review-service.md, "Reviews": Session).
              !done && t.error === "session-unavailable" ? (
                <Empty>The transcript appears here as the agent writes it.</Empty>
              ) : t.error === "session-unavailable" || t.error === "session-unparseable" ? (
                <ErrorBox error={`${t.error}: ${t.detail ?? t.raw ?? ""}`} />
              ) : (
                <>
                  {t.error && (
                    <p className="turn error" data-testid="transcript-error">
                      <strong>The agent stopped:</strong> {t.error}
                    </p>
                  )}
                  {!done && <NowRunning items={t.items} />}
                  <Conversation items={t.items} />
                </>
              )
            }
          </Query>
        )}
      </Card>
    </>
  );
}

function Fact({ label, value, mono }: { label: string; value: string; mono?: boolean }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd className={mono ? "mono" : undefined}>{value}</dd>
    </div>
  );
}

const SEVERITY_ORDER = ["blocking", "question", "nit"];

function FindingList({ review, rows }: { review: Review; rows: Finding[] }) {
  const links = useForgeLinks();
  const commentUrl = (f: Finding) => links.comment(review.repo_full_name, review.pr_number, f.github_comment_id);
  if (rows.length === 0) return <Empty>No findings recorded.</Empty>;
  const summaries = rows.filter((f) => f.kind !== "inline");
  const inline = rows.filter((f) => f.kind === "inline");
  const byFile = new Map<string, Finding[]>();
  for (const f of inline) byFile.set(f.path ?? "", [...(byFile.get(f.path ?? "") ?? []), f]);
  return (
    <div className="stack">
      {summaries.map((f) => (
        <article key={f.id} className="finding summary">
          <p className="small muted">
            {f.kind}
            {f.event ? ` · ${f.event}` : ""}
          </p>
          <p className="prewrap">{f.body}</p>
        </article>
      ))}
      {[...byFile.entries()].map(([path, list]) => (
        <section key={path} aria-label={`Findings in ${path}`}>
          <h3 className="mono file">{path}</h3>
          {list
            .slice()
            .sort((a, b) => SEVERITY_ORDER.indexOf(a.severity ?? "") - SEVERITY_ORDER.indexOf(b.severity ?? "") || (a.line ?? 0) - (b.line ?? 0))
            .map((f) => (
              <article key={f.id} className="finding" data-severity={f.severity}>
                <p className="row small">
                  <span className={`badge sev-${f.severity ?? "none"}`}>{f.severity ?? "note"}</span>
                  {commentUrl(f) ? (
                    <a href={commentUrl(f) ?? undefined} target="_blank" rel="noreferrer" className="mono">
                      {path}:{f.line ?? "?"}
                    </a>
                  ) : (
                    <span className="mono">
                      {path}:{f.line ?? "?"}
                    </span>
                  )}
                  {splitUnverified(f.body).unverified !== undefined && (
                    <span className="badge" title={splitUnverified(f.body).unverified}>
                      unverified
                    </span>
                  )}
                  {/* docs/review-service.md, "Finding outcomes" */}
                  {(f.outcome === "resolved" || f.outcome === "dismissed") && (
                    <span className={`badge outcome-${f.outcome}`} title={f.outcome_reason ?? undefined}>
                      {f.outcome}
                    </span>
                  )}
                </p>
                {(f.outcome === "resolved" || f.outcome === "dismissed") && f.outcome_reason && (
                  <p className="small muted">
                    {f.outcome === "resolved" ? "Resolved" : "Dismissed"}: {f.outcome_reason}
                  </p>
                )}
                <FindingBody body={f.body} />
              </article>
            ))}
        </section>
      ))}
    </div>
  );
}

/** The candidates verification dropped: never posted, each with the verifier's reason
 * (docs/review-service.md, "Verification before posting"). */
function DroppedList({ rows }: { rows: DroppedFinding[] }) {
  return (
    <div className="stack">
      <p className="small muted">Checked against the code by an independent verifier and not posted.</p>
      {rows.map((d) => (
        <article key={d.id} className="finding dropped" data-severity={d.severity}>
          <p className="row small">
            <span className={`badge sev-${d.severity}`}>{d.severity}</span>
            <span className="mono">
              {d.path}:{d.line}
            </span>
          </p>
          <p className="prewrap">{d.body}</p>
          <p className="small">
            <strong>Why dropped:</strong> {d.reason}
          </p>
        </article>
      ))}
    </div>
  );
}

/** A finding's body split into its text and, when it ends with one, GitHub's committable
 * suggestion block as post_review appends it (docs/review-service.md, "Suggestions"). */
function splitSuggestion(body: string): { text: string; suggestion?: string } {
  const m = /\n\n```suggestion\n([\s\S]*?)\n?```\s*$/.exec(body);
  return m ? { text: body.slice(0, m.index), suggestion: m[1] } : { text: body };
}

/** An inline finding's text, then its suggestion as the lines it proposes. */
/** A posted body's "_Unverified: <why>._" note, split off so it shows as a badge and a plain
 * line instead of raw Markdown (docs/review-service.md, "Verification before posting"). */
function splitUnverified(body: string): { text: string; unverified?: string } {
  const marker = "\n\n_Unverified: ";
  const at = body.indexOf(marker);
  if (at < 0) return { text: body };
  const rest = body.slice(at + marker.length);
  const end = rest.indexOf("._");
  if (end < 0) return { text: body.slice(0, at), unverified: rest };
  return { text: body.slice(0, at) + rest.slice(end + 2), unverified: rest.slice(0, end) };
}

function FindingBody({ body }: { body: string }) {
  const { text: checked, unverified } = splitUnverified(body);
  const { text, suggestion } = splitSuggestion(checked);
  return (
    <>
      <p className="prewrap">{text}</p>
      {unverified !== undefined && <p className="small muted">Unverified: {unverified}.</p>}
      {suggestion !== undefined && (
        <figure className="suggestion">
          <figcaption className="small muted">Suggested change</figcaption>
          <Pre label="Suggested change" className="mono">{suggestion}</Pre>
        </figure>
      )}
    </>
  );
}

/** The last three turns of a transcript as one line each, for a failed review's box. */
function lastTurns(items: TranscriptItem[] | undefined): string[] {
  if (!items) return [];
  return items.slice(-3).map((it) => {
    const what = it.name ?? it.role ?? it.type;
    const text = it.text ?? it.message ?? (typeof it.content === "string" ? it.content : "");
    const line = `${what}: ${text ?? ""}`.replace(/\s+/g, " ").trim();
    return line.length > 160 ? `${line.slice(0, 157)}…` : line;
  });
}

/** The tokens of one model call, as its transcript item records them. */
function stepTokens(it: TranscriptItem): number {
  const u = it.usage;
  return u ? (u.input_tokens ?? 0) + (u.output_tokens ?? 0) + (u.cache_read_tokens ?? 0) + (u.cache_write_tokens ?? 0) : 0;
}

/** The arguments a preview names first, in this order (the server stores objects with their
 * keys sorted, which would put `end_line` before `path`). */
const FIRST_ARGUMENTS = ["path", "file", "query", "pattern", "start_line", "line", "end_line"];
const rank = (key: string) => {
  const i = FIRST_ARGUMENTS.indexOf(key);
  return i < 0 ? FIRST_ARGUMENTS.length : i;
};

/** A tool call's arguments in one short line for its summary: the values, strings unquoted,
 * the path and line numbers first, cut at 80 characters (`src/lib.rs 10 40`). */
export function argumentPreview(args: unknown): string {
  let value = args;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      // a string argument is shown as it is
    }
  }
  const parts =
    value && typeof value === "object"
      ? Object.entries(value as Record<string, unknown>)
          .sort(([a], [b]) => rank(a) - rank(b))
          .map(([, v]) => v)
          .filter((v) => typeof v === "string" || typeof v === "number" || typeof v === "boolean")
          .map((v) => String(v).replace(/\s+/g, " "))
      : value === undefined || value === null
        ? []
        : [String(value)];
  const line = parts.join(" ");
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

/** Text shown with a diff's lines coloured (added, removed, hunk headers) when it is one. */
function MaybeDiff({ text, label }: { text: string; label: string }) {
  const lines = text.split("\n");
  const isDiff = lines.some((l) => l.startsWith("@@") || l.startsWith("diff --git")) && lines.some((l) => /^[+-]/.test(l));
  if (!isDiff) return <Pre label={label}>{text}</Pre>;
  return (
    <Pre label={label} className="diff">
      {lines.map((l, i) => {
        const cls = l.startsWith("+++") || l.startsWith("---") || l.startsWith("diff --git") ? "diff-file" : l.startsWith("@@") ? "diff-hunk" : l.startsWith("+") ? "diff-add" : l.startsWith("-") ? "diff-del" : undefined;
        return (
          <span key={i} className={cls}>
            {l}
            {"\n"}
          </span>
        );
      })}
    </Pre>
  );
}

/** A running review's current step, what it is doing and its tokens and cost so far, from the
 * transcript it is writing (refreshed every few seconds while it runs): each model answer
 * records its tokens and its cost at the catalog's prices. */
function NowRunning({ items }: { items: TranscriptItem[] }) {
  const last = items[items.length - 1];
  if (!last) return null;
  const step = Math.max(0, ...items.map((it) => it.step ?? 0));
  const tokens = items.reduce((a, it) => a + stepTokens(it), 0);
  const cost = items.reduce((a, it) => a + (it.cost ?? 0), 0);
  const doing =
    last.type === "tool_call"
      ? `running ${last.name ?? "a tool"} ${argumentPreview(last.arguments)}`.trim()
      : last.type === "tool_result"
        ? "waiting for the model"
        : last.type === "assistant"
          ? "running its tool calls"
          : "starting";
  return (
    <p className="now-running" role="status" data-testid="now-running">
      <strong>Now:</strong> step {step}, {doing} · {count(tokens)} tokens and {money(cost)} so far
      {last.at ? (
        <>
          {" "}
          · last activity <Time at={last.at} />
        </>
      ) : null}
    </p>
  );
}

function Conversation({ items }: { items: TranscriptItem[] }) {
  if (items.length === 0) return <Empty>The transcript is empty.</Empty>;
  const results = new Map<string, TranscriptItem>();
  for (const it of items) if (it.type === "tool_result" && it.call_id) results.set(it.call_id, it);
  return (
    <ol className="conversation">
      {items.map((it, i) => {
        switch (it.type) {
          case "system":
            return (
              <li key={i} className="turn system">
                <details>
                  <summary>System instructions</summary>
                  <Pre label="System instructions">{it.text}</Pre>
                </details>
              </li>
            );
          case "message":
            return (
              <li key={i} className="turn user">
                <p className="who">{it.nudge ? "Nudge" : "Prompt"}</p>
                <details open={it.nudge}>
                  <summary>{(it.text ?? "").slice(0, 120)}</summary>
                  <Pre label={it.nudge ? "Nudge" : "Prompt"}>{it.text}</Pre>
                </details>
              </li>
            );
          case "assistant":
            return it.text ? (
              <li key={i} className="turn assistant">
                <p className="who">
                  Agent · step {it.step}
                  <span className="muted small" data-testid="step-cost">
                    {it.at && items[i - 1]?.at ? ` · ${duration(it.at - (items[i - 1]?.at ?? it.at))}` : ""}
                    {stepTokens(it) > 0 ? ` · ${count(stepTokens(it))} tokens` : ""}
                    {it.cost ? ` · ${money(it.cost)}` : ""}
                  </span>
                </p>
                <p className="prewrap">{it.text}</p>
              </li>
            ) : null;
          case "tool_call": {
            const result = it.id ? results.get(it.id) : undefined;
            return (
              <li key={i} className="turn tool" data-tool={it.name}>
                <details>
                  <summary>
                    Tool call <span className="mono">{it.name}</span>{" "}
                    <span className="mono small muted" data-testid="argument-preview">
                      {argumentPreview(it.arguments)}
                    </span>
                    {result?.is_error ? <span className="badge status-failed">error</span> : null}
                  </summary>
                  <p className="small muted">Arguments</p>
                  <Pre label={`Arguments of ${it.name ?? "the tool call"}`}>{pretty(it.arguments)}</Pre>
                  {result && (
                    <>
                      <p className="small muted">Result</p>
                      <MaybeDiff label={`Result of ${it.name ?? "the tool call"}`} text={pretty(result.content)} />
                    </>
                  )}
                </details>
              </li>
            );
          }
          case "tool_result":
            return null;
          // The verifier's conversation (docs/review-service.md, "Verification before posting").
          case "verify":
            return (
              <li key={i} className="turn verify" data-verify={it.role ?? "error"}>
                <details open={it.role === "assistant" && (it.tool_calls ?? []).some((c) => c.name === "report_verdicts")}>
                  <summary>
                    Verifier {it.role === "user" ? "· candidates" : it.role === "tool" ? `· ${it.name ?? "tool"}` : it.role === "assistant" ? "· answer" : "· error"}
                  </summary>
                  {it.text ? <Pre label="Verifier text">{it.text}</Pre> : null}
                  {(it.tool_calls ?? []).map((c) => (
                    <Pre key={c.id} label={`Verifier call ${c.name}`}>
                      {c.name} {pretty(c.arguments)}
                    </Pre>
                  ))}
                  {it.content !== undefined ? <Pre label="Verifier tool result">{pretty(it.content)}</Pre> : null}
                  {it.message ? <Pre label="Verifier error">{it.message}</Pre> : null}
                </details>
              </li>
            );
          case "verification":
            return (
              <li key={i} className="turn verify" role="note">
                <p className="who">Verification</p>
                <p className="prewrap">{String(it.result ?? "")}</p>
              </li>
            );
          case "error":
            return (
              <li key={i} className="turn error" role="note">
                <p className="who">Error</p>
                <p className="prewrap">{it.message}</p>
              </li>
            );
          default:
            return (
              <li key={i} className="turn">
                <Pre label={`Transcript item ${it.type}`}>{pretty(it)}</Pre>
              </li>
            );
        }
      })}
    </ol>
  );
}

function pretty(v: unknown): string {
  if (typeof v === "string") {
    try {
      return JSON.stringify(JSON.parse(v), null, 2);
    } catch {
      return v;
    }
  }
  return JSON.stringify(v, null, 2);
}
