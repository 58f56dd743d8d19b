import { useQuery } from "@tanstack/react-query";
import { q } from "../api/queries";

const NAMES: Record<string, string> = { github: "GitHub", gitlab: "GitLab" };

// The sign-in page, shown when the OAuth gate is on and there is no session (docs/review-service.md
// §5): one button per forge the server signs in with (GitHub, GitLab: docs/review-service.md, "GitLab").
export function SignInPage() {
  const status = useQuery(q.authStatus());
  const back = window.location.pathname + window.location.search;
  const providers = status.data?.providers?.length ? status.data.providers : ["github"];
  const names = providers.map((p) => NAMES[p] ?? p).join(" or ");
  return (
    <main className="signin" id="main">
      <div className="card">
        <h1>review-server</h1>
        <p>This dashboard is private. Sign in with your {names} account to continue.</p>
        {providers.map((p) => (
          <a
            key={p}
            className="btn primary"
            href={`/api/auth/signin?provider=${p}&callbackUrl=${encodeURIComponent(back)}`}
          >
            Sign in with {NAMES[p] ?? p}
          </a>
        ))}
        <p className="muted small">Only the accounts listed in ALLOWED_FORGE_USERS can sign in.</p>
      </div>
    </main>
  );
}
