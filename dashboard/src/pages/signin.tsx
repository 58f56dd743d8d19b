// The sign-in page, shown when the OAuth gate is on and there is no session (docs/review-service.md §5).
export function SignInPage() {
  const back = window.location.pathname + window.location.search;
  const href = `/api/auth/signin?callbackUrl=${encodeURIComponent(back)}`;
  return (
    <main className="signin" id="main">
      <div className="card">
        <h1>review-server</h1>
        <p>This dashboard is private. Sign in with your GitHub account to continue.</p>
        <a className="btn primary" href={href}>
          Sign in with GitHub
        </a>
        <p className="muted small">Only the accounts listed in ALLOWED_FORGE_USERS can sign in.</p>
      </div>
    </main>
  );
}
