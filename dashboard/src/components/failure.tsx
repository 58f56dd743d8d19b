// Why a review failed, and what to do about it (docs/review-service.md, "Failure classes"): the
// server classes each failed row; the dashboard names the class and the next step.
import type { Review } from "../api/client";

export type FailureClass = NonNullable<Review["failure_class"]>;

/** Each class's name and what the operator should do, as the docs' table says. */
export const FAILURE: Record<FailureClass, { label: string; advice: string }> = {
  overloaded: { label: "Provider overloaded or rate-limited", advice: "The model provider is busy. Retry in a few minutes; if it keeps happening, lower concurrency or switch the model." },
  timeout: { label: "Timeout", advice: "The run took too long. Retry; if it repeats, the model or the provider is slow for pull requests this size." },
  configuration: { label: "Configuration", advice: "A key, model or the App's credentials are wrong. Fix them in Settings or the environment, then retry." },
  budget: { label: "Review budget", advice: "The review reached REVIEW_MAX_TOKENS or REVIEW_MAX_COST. Raise the budget in Settings if this pull request deserves more." },
  cancelled: { label: "Cancelled", advice: "Someone stopped it, or a newer push replaced it. Nothing to do." },
  interrupted: { label: "Interrupted", advice: "The server restarted or lost its lease during the run. Retry." },
  limit: { label: "Limit", advice: "An operator limit (steps or repository size) stopped it. Raise the limit if the pull request deserves it." },
  forge: { label: "GitHub", advice: "GitHub refused or could not be reached. Check the App's installation and GitHub's status, then retry." },
  other: { label: "Error", advice: "Read the error and the last turns of the transcript below." },
};

/** A short badge naming a failed row's class. */
export function FailureTag({ review }: { review: Review }) {
  if (review.status !== "failed" || !review.failure_class) return null;
  return (
    <span className={`badge failure failure-${review.failure_class}`} data-failure-class={review.failure_class}>
      {FAILURE[review.failure_class].label}
    </span>
  );
}

/** The box on a failed review's page: the class, the error, what to do, and the transcript's
 * last turns (what the agent was doing when it failed). */
export function FailureBox({ review, lastTurns }: { review: Review; lastTurns: string[] }) {
  if (review.status !== "failed") return null;
  const cls = review.failure_class ?? "other";
  return (
    <section className="failure-box" role="note" aria-label="Why it failed" data-testid="failure-box">
      <h2 className="card-title">
        Why it failed: <span data-failure-class={cls}>{FAILURE[cls].label}</span>
      </h2>
      {review.error && <p className="mono small failure-error">{review.error}</p>}
      <p>
        <strong>What to do:</strong> {FAILURE[cls].advice}
      </p>
      {lastTurns.length > 0 && (
        <>
          <h3 className="small">Last turns of the transcript</h3>
          <ol className="last-turns small mono" data-testid="last-turns">
            {lastTurns.map((t, i) => (
              <li key={i}>{t}</li>
            ))}
          </ol>
        </>
      )}
    </section>
  );
}
