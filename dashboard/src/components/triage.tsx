// The overview's triage band (issue 30): what an operator opens the dashboard for first. What is
// running or waiting (live elapsed time, Stop), the last 24 hours' failures grouped by their
// class (docs/review-service.md, "Failure classes"), and the configuration alarms
// (docs/review-service.md, "Settings in force").
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { useEffect, useState } from "react";
import { api, unwrap, type Review } from "../api/client";
import { q } from "../api/queries";
import { FAILURE, type FailureClass } from "./failure";
import { PrLink, StatusBadge, Time, count, duration } from "./ui";

/** The current time in epoch seconds, updated every `ms`. */
function useNow(ms = 1000): number {
  const [now, setNow] = useState(() => Date.now() / 1000);
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now() / 1000), ms);
    return () => window.clearInterval(timer);
  }, [ms]);
  return now;
}

/** Failed reviews grouped by class, the most frequent first. */
export function groupFailures(rows: Review[]): { cls: FailureClass; count: number; repos: string[]; last: number }[] {
  const groups = new Map<FailureClass, { cls: FailureClass; count: number; repos: Set<string>; last: number }>();
  for (const r of rows) {
    const cls = r.failure_class ?? "other";
    const g = groups.get(cls) ?? { cls, count: 0, repos: new Set<string>(), last: 0 };
    g.count += 1;
    g.repos.add(r.repo_full_name);
    g.last = Math.max(g.last, r.completed_at ?? r.created_at);
    groups.set(cls, g);
  }
  return [...groups.values()]
    .map((g) => ({ ...g, repos: [...g.repos].sort() }))
    .sort((a, b) => b.count - a.count || b.last - a.last);
}

export function TriageBand() {
  const running = useQuery(q.reviews({ status: "running", limit: "50" }));
  const pending = useQuery(q.reviews({ status: "pending", limit: "50" }));
  const failed = useQuery(q.reviews({ status: "failed", range: "24h", limit: "1000" }));
  const effective = useQuery(q.effective());
  const inFlight = [...(running.data ?? []), ...(pending.data ?? [])];
  const failures = groupFailures(failed.data ?? []);
  const alarms = effective.data?.alarms ?? [];
  const loading = running.isPending || pending.isPending || failed.isPending || effective.isPending;
  const calm = !loading && inFlight.length === 0 && failures.length === 0 && alarms.length === 0;
  return (
    <section className="triage card" aria-labelledby="triage-title" data-testid="triage">
      <h2 className="card-title" id="triage-title">
        Needs attention
      </h2>
      {calm && <p className="muted">Nothing is running, nothing failed in the last 24 hours, and the configuration is complete.</p>}
      {alarms.length > 0 && (
        <ul className="triage-list alarms" aria-label="Configuration alarms">
          {alarms.map((a) => (
            <li key={a.code + a.message} className="triage-row alarm" data-alarm={a.code}>
              <span className="badge warn-badge">configuration</span>
              <span>{a.message}</span>
              <Link to="/settings">Settings →</Link>
            </li>
          ))}
        </ul>
      )}
      {inFlight.length > 0 && <InFlight rows={inFlight} />}
      {failures.length > 0 && (
        <ul className="triage-list" aria-label="Failures in the last 24 hours">
          {failures.map((g) => (
            <li key={g.cls} className="triage-row failure" data-failure-class={g.cls}>
              <span className="badge status-failed">
                {count(g.count)} failed
              </span>
              <span>
                <strong>{FAILURE[g.cls].label}</strong>
                <span className="muted small"> in {g.repos.slice(0, 3).join(", ")}{g.repos.length > 3 ? ` and ${g.repos.length - 3} more` : ""}</span>
              </span>
              <span className="small muted">
                last <Time at={g.last} />
              </span>
              <Link to="/reviews" search={{ status: "failed", range: "24h" }}>
                See the failures →
              </Link>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function InFlight({ rows }: { rows: Review[] }) {
  const now = useNow();
  const client = useQueryClient();
  const stop = useMutation({
    mutationFn: async (id: number) => unwrap(await api.POST("/api/reviews/{id}/stop", { params: { path: { id: String(id) } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: ["reviews"] }),
  });
  return (
    <ul className="triage-list" aria-label="Running and waiting reviews">
      {rows.map((r) => (
        <li key={r.id} className="triage-row" data-review-id={r.id}>
          <StatusBadge status={r.status} />
          <span>
            <PrLink review={r} />{" "}
            <Link to="/reviews/$id" params={{ id: String(r.id) }} className="small">
              review #{r.id}
            </Link>
          </span>
          <span className="small mono" data-testid="elapsed">
            {duration(Math.max(0, now - r.created_at))}
          </span>
          <button type="button" className="btn small danger" onClick={() => stop.mutate(r.id)} disabled={stop.isPending && stop.variables === r.id}>
            Stop<span className="sr-only"> review #{r.id}</span>
          </button>
        </li>
      ))}
    </ul>
  );
}
