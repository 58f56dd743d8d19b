// Small building blocks shared by every page: states, badges, times, money.
import type { MouseEvent, ReactNode } from "react";
import { Link, useNavigate } from "@tanstack/react-router";
import { useQuery } from "@tanstack/react-query";
import { ApiFailure, type Review } from "../api/client";
import { q } from "../api/queries";

export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <p className="muted state" role="status" aria-busy="true">
      {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="muted state empty">{children}</p>;
}

export function ErrorBox({ error, retry }: { error: unknown; retry?: () => void }) {
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div className="error-box" role="alert">
      <strong>Could not load:</strong> {message}
      {retry && (
        <button type="button" className="btn small" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** Loading, error or the content of a query. */
export function Query<T>({
  q,
  children,
  what,
}: {
  q: { data?: T; error: unknown; isPending: boolean; refetch: () => unknown };
  children: (data: T) => ReactNode;
  what?: string;
}) {
  if (q.isPending) return <Loading what={what} />;
  // Asking again does not make a missing thing appear: no "Try again" for a 404.
  if (q.error || q.data === undefined) return <ErrorBox error={q.error} retry={isNotFound(q.error) ? undefined : () => q.refetch()} />;
  return <>{children(q.data)}</>;
}

/** Whether a query failed because the thing does not exist (the API answered 404). */
export function isNotFound(error: unknown): boolean {
  return error instanceof ApiFailure && error.status === 404;
}

/** The page shown for an unknown review or repository: a heading and the way back. */
export function NotFoundPage({ title, children, back }: { title: string; children: ReactNode; back: ReactNode }) {
  return (
    <>
      <header className="page-head">
        <h1>{title}</h1>
        <p className="muted">{children}</p>
      </header>
      <p>{back}</p>
    </>
  );
}

/** Preformatted text that may scroll (long tool results): focusable and named, so a keyboard
 * user can scroll it too (axe: scrollable-region-focusable). */
export function Pre({ children, label, className }: { children: ReactNode; label: string; className?: string }) {
  return (
    <pre tabIndex={0} role="region" aria-label={label} className={className}>
      {children}
    </pre>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return (
    <span className={`badge status-${status}`} data-status={status}>
      <span className="dot" aria-hidden="true" />
      {status}
    </span>
  );
}

const fullFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "long" });
const shortFormat = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
});

/** Epoch seconds as a relative time in the viewer's zone, the exact time on hover. */
export function Time({ at }: { at: number | null | undefined }) {
  if (at === null || at === undefined) return <span className="muted">—</span>;
  const d = new Date(at * 1000);
  return (
    <time dateTime={d.toISOString()} title={fullFormat.format(d)}>
      {relative(at)}
    </time>
  );
}

export function relative(at: number): string {
  const secs = Math.round(Date.now() / 1000 - at);
  if (secs < 45) return "just now";
  if (secs < 3600) return `${Math.round(secs / 60)}m ago`;
  if (secs < 86400) return `${Math.round(secs / 3600)}h ago`;
  if (secs < 86400 * 14) return `${Math.round(secs / 86400)}d ago`;
  return shortFormat.format(new Date(at * 1000));
}

export function money(v: number | null | undefined): string {
  if (v === null || v === undefined) return "—";
  return `$${v < 1 ? v.toFixed(4) : v.toFixed(2)}`;
}

export function count(v: number | null | undefined): string {
  if (v === null || v === undefined) return "—";
  if (v >= 1_000_000) return `${(v / 1_000_000).toFixed(1)}M`;
  if (v >= 10_000) return `${(v / 1000).toFixed(1)}k`;
  return v.toLocaleString();
}

export function duration(secs: number | null | undefined): string {
  if (secs === null || secs === undefined) return "—";
  const s = Math.round(secs);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** Links to a repository's pull requests and comments on its own forge: GitHub's (FORGE_URL)
 * for `owner/repo`, GitLab's (GITLAB_URL) for `<gitlab host>/<namespace>/<project>`
 * (docs/review-service.md, "GitLab"). */
export interface ForgeLinks {
  /** The pull (merge) request's page; null when the forge's URL is not known. */
  pull(fullName: string, number: number): string | null;
  /** An inline comment by its id, else the pull request's changes; null as above. */
  comment(fullName: string, number: number, commentId: number | null | undefined): string | null;
  /** `#` on GitHub, `!` on GitLab. */
  sigil(fullName: string): string;
}

/** Whether a full name is a GitLab project's: a GitHub owner never holds a `/`. */
export function isGitLab(fullName: string): boolean {
  return fullName.split("/").length > 2;
}

/** The forge URLs as the server runs with them (GET /api/settings/effective); the links are
 * null until they are known (no link is better than a wrong one, which a github.com guess is
 * on GitHub Enterprise). */
export function useForgeLinks(): ForgeLinks {
  const effective = useQuery(q.effective());
  const github = effective.data?.forgeUrl ?? null;
  const gitlab = effective.data?.gitlabUrl ?? null;
  const pull = (fullName: string, n: number) => {
    if (isGitLab(fullName)) {
      const path = fullName.split("/").slice(1).join("/");
      return gitlab ? `${gitlab}/${path}/-/merge_requests/${n}` : null;
    }
    return github ? `${github}/${fullName}/pull/${n}` : null;
  };
  return {
    pull,
    comment(fullName, n, commentId) {
      const base = pull(fullName, n);
      if (!base) return null;
      if (isGitLab(fullName)) return commentId ? `${base}#note_${commentId}` : `${base}/diffs`;
      return commentId ? `${base}#discussion_r${commentId}` : `${base}/files`;
    },
    sigil: (fullName) => (isGitLab(fullName) ? "!" : "#"),
  };
}

export function PrLink({ review }: { review: Review }) {
  const { repo_full_name: repo, pr_number: pr } = review;
  if (pr === 0) return <span className="mono">{repo} · improver</span>;
  return (
    <Link
      to="/repos/$owner/$name/pr/$number"
      params={{ ...splitRepo(repo), number: String(pr) }}
      className="mono"
    >
      {repo}
      {isGitLab(repo) ? "!" : "#"}
      {pr}
    </Link>
  );
}

/** A full name's owner and name: the name is the last part, the owner all before it (a
 * GitLab project's host and namespace). */
export function splitRepo(fullName: string): { owner: string; name: string } {
  const at = fullName.lastIndexOf("/");
  return at < 0 ? { owner: fullName, name: "" } : { owner: fullName.slice(0, at), name: fullName.slice(at + 1) };
}

export function Card({ title, children, className }: { title?: string; children: ReactNode; className?: string }) {
  return (
    <section className={`card ${className ?? ""}`} aria-label={title}>
      {title && <h2 className="card-title">{title}</h2>}
      {children}
    </section>
  );
}

/** How long a review ran (or has run so far, for one in flight), in seconds. */
export function reviewSeconds(r: Review, now = Date.now() / 1000): number | null {
  if (r.completed_at !== null && r.completed_at !== undefined) return r.completed_at - r.created_at;
  if (r.status === "running" || r.status === "pending") return Math.max(0, now - r.created_at);
  return null;
}

/** The reviews table used by the list, the repo page and the PR history. A click anywhere on a
 * row opens the review (the id stays a real link for keyboards and new tabs); failed rows show
 * their error, cut, with the full text on hover. */
export function ReviewTable({ rows, caption, empty = "No reviews yet." }: { rows: Review[]; caption: string; empty?: string }) {
  const navigate = useNavigate();
  if (rows.length === 0) return <Empty>{empty}</Empty>;
  const open = (e: MouseEvent<HTMLTableRowElement>, id: number) => {
    // Links and buttons inside the row do their own thing; so does a text selection.
    if ((e.target as HTMLElement).closest("a, button") || window.getSelection()?.toString()) return;
    void navigate({ to: "/reviews/$id", params: { id: String(id) } });
  };
  return (
    <div className="table-wrap">
      <table className="rows-open">
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Review</th>
            <th scope="col">Status</th>
            <th scope="col" className="hide-narrow">Error</th>
            <th scope="col">Pull request</th>
            <th scope="col" className="hide-narrow">Trigger</th>
            <th scope="col" className="hide-narrow">Model</th>
            <th scope="col" className="num">Cost</th>
            <th scope="col" className="num hide-narrow">Duration</th>
            <th scope="col">Started</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.id} data-review-id={r.id} onClick={(e) => open(e, r.id)}>
              <td>
                <Link to="/reviews/$id" params={{ id: String(r.id) }}>
                  #{r.id}
                </Link>
              </td>
              <td>
                <StatusBadge status={r.status} />
              </td>
              <td className="hide-narrow small error-cell" title={r.error ?? undefined} data-testid="row-error">
                {r.error ? (r.error.length > 48 ? `${r.error.slice(0, 45)}…` : r.error) : ""}
              </td>
              <td>
                <PrLink review={r} />
                {r.title && <div className="muted small">{r.title}</div>}
              </td>
              <td className="hide-narrow">{r.trigger ?? "—"}</td>
              <td className="hide-narrow mono small">{r.model ?? "—"}</td>
              <td className="num">{money(r.cost)}</td>
              <td className="num hide-narrow">{duration(reviewSeconds(r))}</td>
              <td>
                <Time at={r.created_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
