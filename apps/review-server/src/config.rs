//! Configuration: every setting is a clap flag with an environment fallback
//! (docs/configuration.md). Secrets are `SecretString` and never printed.

use clap::{Args, Parser, Subcommand};
use secrecy::{ExposeSecret, SecretString};
use std::net::SocketAddr;
use std::path::PathBuf;

/// The command line of `review-server`.
#[derive(Debug, Parser)]
#[command(
    name = "review-server",
    version,
    about = "Reviews pull requests with an LLM agent"
)]
pub struct Cli {
    #[command(flatten)]
    pub config: Config,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands; none means `serve`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server (the default).
    Serve,
    /// Agent session transcripts.
    Session {
        #[command(subcommand)]
        command: SessionCommand,
    },
    /// Review a range of a local repository with the same agent, tools and checks, no forge:
    /// prints the summary and inline comments as markdown, with tokens and cost.
    Review(ReviewArgs),
    /// Score the reviewer on labelled cases: replays each through the same agent,
    /// verification and budget with nothing posted, asks a judge model which golden comments
    /// the posted findings match, and writes precision, recall and F1 per case and in total
    /// (docs/review-service.md, "Measuring the reviewer").
    Eval(EvalArgs),
    /// The database.
    Db {
        #[command(subcommand)]
        command: DbCommand,
    },
}

/// `review-server db ...`
#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Copy every repo, review, finding, skill, setting, delivery id and transcript of the
    /// database (DATABASE_URL, by default the SQLite file in DATA_DIR) into an empty database,
    /// e.g. a new PostgreSQL one: how an install moves from SQLite to PostgreSQL (README, "SQLite
    /// or PostgreSQL"). Stop the server first.
    Copy {
        /// The target: `postgres://user:password@host/db` (or `sqlite://path`); created schema
        /// and all, it must hold no repo, review or setting yet.
        #[arg(long)]
        to: String,
    },
}

/// `review-server session ...`
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Print the transcript of a session as JSON.
    Export {
        /// The session id (ReviewRow.session_id).
        session_id: String,
    },
}

/// `review-server review --repo PATH --base REV --head REV [--model SPEC]`
#[derive(Debug, Clone, Args)]
pub struct ReviewArgs {
    /// A local git repository (working copy or bare).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// The base revision (the diff is base...head, as `git diff base...head`).
    #[arg(long)]
    pub base: String,
    /// The head revision.
    #[arg(long, default_value = "HEAD")]
    pub head: String,
    #[command(flatten)]
    pub choices: ReviewChoices,
}

/// What a review run outside the server varies, one flag per setting the server reads from
/// its settings table (docs/review-service.md §2, Settings); a flag left out leaves the
/// setting's default. Shared by `review` and `eval`.
#[derive(Debug, Clone, Default, Args)]
pub struct ReviewChoices {
    /// Model spec `<provider>/<model>`; default: the AGENT_MODEL env var, else the built-in default.
    #[arg(long)]
    pub model: Option<String>,
    /// Instructions to focus on (the `default_prompt` setting's text); default: the built-in focus.
    #[arg(long)]
    pub prompt: Option<String>,
    /// Independent passes over the diff, 1 to 5 (the `review_passes` setting); default 1.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=5))]
    pub passes: Option<u32>,
    /// Verify findings before posting (the `review_verify` setting); default true.
    #[arg(long)]
    pub verify: Option<bool>,
    /// The verifier's model (the `verify_model` setting); default: the review's model.
    #[arg(long)]
    pub verify_model: Option<String>,
    /// Post no inline finding under this severity (the `review_min_severity` setting); default nit.
    #[arg(long, value_parser = ["nit", "question", "blocking"])]
    pub min_severity: Option<String>,
}

/// `review-server eval CASES.json... [--out DIR] [--judge-model SPEC] [choices]`, or
/// `review-server eval --compare A.json B.json` (docs/review-service.md, "Measuring the
/// reviewer").
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// Case files: JSON arrays in the Martian benchmark's golden format (`pr_title`, `url`,
    /// `comments: [{comment, severity}]`), each case optionally with `id`, `repo` (a git
    /// repository or bundle, relative to the file), `base` and `head`.
    #[arg(required_unless_present = "compare")]
    pub cases: Vec<PathBuf>,
    /// The repository of cases that name none (a Martian golden file as published): a local
    /// clone holding each pull request's head as `refs/pull/<n>/head`.
    #[arg(long)]
    pub repo: Option<PathBuf>,
    /// For cases without `base`: the base is the merge base of the head and this revision.
    #[arg(long, default_value = "HEAD")]
    pub base_ref: String,
    /// Only the cases with these ids (repeatable).
    #[arg(long = "case")]
    pub only: Vec<String>,
    /// Where results.json and results.md are written; default `eval-results/<UTC time>`.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The judge's model `<provider>/<model>`; default: the cascade of `--model`, AGENT_MODEL
    /// and the built-in default.
    #[arg(long)]
    pub judge_model: Option<String>,
    /// Print two results.json files side by side instead of running cases.
    #[arg(long, num_args = 2, value_names = ["A_JSON", "B_JSON"], conflicts_with = "cases")]
    pub compare: Option<Vec<PathBuf>>,
    #[command(flatten)]
    pub choices: ReviewChoices,
}

/// Server settings (docs/configuration.md, review-server).
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Bind address.
    #[arg(long, env = "LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Holds review.db, repos/, sessions/, worktrees/ and skills/.
    #[arg(long, env = "DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Database URL: sqlite://path (default sqlite://$DATA_DIR/review.db) or
    /// postgres://user:password@host:port/db (docs/configuration.md).
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// HMAC secret of webhook deliveries; unset: every delivery is rejected 401.
    #[arg(long, env = "FORGE_WEBHOOK_SECRET", hide_env_values = true)]
    pub webhook_secret: Option<SecretString>,
    /// GitHub App id.
    #[arg(long, env = "FORGE_APP_ID")]
    pub app_id: Option<String>,
    /// GitHub App private key, PEM text (PKCS#1).
    #[arg(long, env = "FORGE_APP_PRIVATE_KEY", hide_env_values = true)]
    pub app_private_key: Option<SecretString>,
    /// GitHub App private key, path to the PEM file.
    #[arg(long, env = "FORGE_APP_PRIVATE_KEY_PATH")]
    pub app_private_key_path: Option<PathBuf>,
    /// REST base URL.
    #[arg(long, env = "FORGE_API_URL", default_value = "https://api.github.com")]
    pub forge_api_url: String,
    /// Web base URL; its host names the cache folder under repos/.
    #[arg(long, env = "FORGE_URL", default_value = "https://github.com")]
    pub forge_url: String,
    /// Clone base: `{FORGE_GIT_URL}/{owner}/{repo}.git`; file:// allowed. Default FORGE_URL.
    #[arg(long, env = "FORGE_GIT_URL")]
    pub forge_git_url: Option<String>,
    /// GitLab's web base (`https://gitlab.com` or a self-managed instance, maybe with a path
    /// prefix); the API is `{GITLAB_URL}/api/v4`. Unset: GitLab is off (docs/review-service.md,
    /// "GitLab").
    #[arg(long, env = "GITLAB_URL")]
    pub gitlab_url: Option<String>,
    /// A GitLab project, group or bot user's access token with the `api` scope, for API calls
    /// and clones.
    #[arg(long, env = "GITLAB_TOKEN", hide_env_values = true)]
    pub gitlab_token: Option<SecretString>,
    /// The secret token of the GitLab webhook (sent back as `X-Gitlab-Token`); unset: every
    /// delivery to /webhook/gitlab is rejected 401.
    #[arg(long, env = "GITLAB_WEBHOOK_SECRET", hide_env_values = true)]
    pub gitlab_webhook_secret: Option<SecretString>,
    /// GitLab clone base: `{GITLAB_GIT_URL}/{namespace}/{project}.git`; file:// allowed.
    /// Default GITLAB_URL.
    #[arg(long, env = "GITLAB_GIT_URL")]
    pub gitlab_git_url: Option<String>,
    /// The client id of a GitLab OAuth application (scope `read_user`), for sign-in with
    /// GitLab.
    #[arg(long, env = "GITLAB_OAUTH_CLIENT_ID")]
    pub gitlab_oauth_client_id: Option<String>,
    /// The secret of that GitLab OAuth application.
    #[arg(long, env = "GITLAB_OAUTH_CLIENT_SECRET", hide_env_values = true)]
    pub gitlab_oauth_client_secret: Option<SecretString>,
    /// Fallback for the agent_api_key setting (unlocks the anthropic provider).
    #[arg(long, env = "AGENT_API_KEY", hide_env_values = true)]
    pub agent_api_key: Option<SecretString>,
    /// Fallback for the second_api_key setting (unlocks zai-coding-plan).
    #[arg(long, env = "SECOND_API_KEY", hide_env_values = true)]
    pub second_api_key: Option<SecretString>,
    /// Fallback for the third_api_key setting (unlocks openai).
    #[arg(long, env = "THIRD_API_KEY", hide_env_values = true)]
    pub third_api_key: Option<SecretString>,
    /// Anthropic endpoint, without /v1.
    #[arg(
        long,
        env = "ANTHROPIC_BASE_URL",
        default_value = "https://api.anthropic.com"
    )]
    pub anthropic_base_url: String,
    /// OpenAI endpoint, ending in /v1.
    #[arg(
        long,
        env = "OPENAI_BASE_URL",
        default_value = "https://api.openai.com/v1"
    )]
    pub openai_base_url: String,
    /// Z.ai coding plan endpoint, ending in /api/coding/paas/v4.
    #[arg(
        long,
        env = "ZAI_CODING_PLAN_BASE_URL",
        default_value = "https://api.z.ai/api/coding/paas/v4"
    )]
    pub zai_base_url: String,
    /// Default review model when neither the repo nor the agent_model setting names one.
    #[arg(
        long,
        env = "AGENT_MODEL",
        default_value = BUILT_IN_MODEL
    )]
    pub agent_model: String,
    /// Public model catalog (models.dev format).
    #[arg(
        long,
        env = "MODELS_CATALOG_URL",
        default_value = "https://models.dev/api.json"
    )]
    pub models_catalog_url: String,
    /// Automatic retry delay, seconds.
    #[arg(long, env = "RETRY_DELAY_SECS", default_value_t = 60)]
    pub retry_delay_secs: u64,
    /// Event-stream heartbeat, seconds of silence.
    #[arg(long, env = "HEARTBEAT_SECS", default_value_t = 25)]
    pub heartbeat_secs: u64,
    /// Most entries (files, symlinks, submodules and directories, counted recursively) of a
    /// tree a review diffs or checks out; a larger tree (a "git bomb") fails the review before
    /// any diff or checkout. Default 1000000.
    #[arg(long, env = "REVIEW_MAX_TREE_ENTRIES", default_value_t = git_cache::Limits::DEFAULT_MAX_ENTRIES)]
    pub review_max_tree_entries: u64,
    /// Most bytes of the files of a tree a review diffs or checks out, counted recursively.
    /// Default 8589934592 (8 GiB).
    #[arg(long, env = "REVIEW_MAX_TREE_BYTES", default_value_t = git_cache::Limits::DEFAULT_MAX_BYTES)]
    pub review_max_tree_bytes: u64,
    /// Agent runs at once in this replica; the rest wait as pending, in order, for any replica.
    #[arg(long, env = "MAX_CONCURRENT_REVIEWS", default_value_t = 4)]
    pub max_concurrent_reviews: usize,
    /// How long a replica's claim on a running review lasts without renewal, seconds; renewed
    /// every third of it. A replica that dies has its reviews failed as interrupted by another
    /// one once it lapses (docs/architecture.md, "Many replicas").
    #[arg(long, env = "LEASE_SECS", default_value_t = 30)]
    pub lease_secs: u64,
    /// Milliseconds between two looks at the queue when nothing woke the replica (PostgreSQL
    /// wakes it at once through LISTEN/NOTIFY; the poll is the fallback).
    #[arg(long, env = "QUEUE_POLL_MS", default_value_t = 1000)]
    pub queue_poll_ms: u64,
    /// Stream model responses (server-sent events); false uses plain JSON responses.
    #[arg(long, env = "AGENT_STREAM", default_value_t = true, action = clap::ArgAction::Set)]
    pub agent_stream: bool,
    /// Signs dashboard session cookies; with the two App OAuth credentials it turns the OAuth
    /// gate on (docs/review-service.md §5 rule 1).
    #[arg(long, env = "AUTH_SECRET", hide_env_values = true)]
    pub auth_secret: Option<SecretString>,
    /// The forge App's OAuth client id.
    #[arg(long, env = "FORGE_APP_CLIENT_ID")]
    pub app_client_id: Option<String>,
    /// The forge App's OAuth client secret.
    #[arg(long, env = "FORGE_APP_CLIENT_SECRET", hide_env_values = true)]
    pub app_client_secret: Option<SecretString>,
    /// Forge logins allowed to sign in, comma-separated, case-insensitive. Empty while OAuth is
    /// on: nobody can sign in (a warning is logged at boot).
    #[arg(long, env = "ALLOWED_FORGE_USERS", value_delimiter = ',')]
    pub allowed_forge_users: Vec<String>,
    /// The dashboard's public base URL (e.g. `https://reviews.example.com`), for the OAuth
    /// callback URL; default: the request's Host (and X-Forwarded-Proto/-Host) headers.
    #[arg(long, env = "AUTH_URL")]
    pub auth_url: Option<String>,
    /// Chat turns (POST /api/chat) running at once; more are answered 429.
    #[arg(long, env = "CHAT_MAX_CONCURRENT", default_value_t = 4)]
    pub chat_max_concurrent: usize,
    /// Most input plus output tokens one review may use; the review_max_tokens setting
    /// overrides it. Unset: no limit (docs/security.md, "Review budget").
    #[arg(long, env = "REVIEW_MAX_TOKENS")]
    pub review_max_tokens: Option<i64>,
    /// Most cost one review may reach, in the units of ReviewRow.cost (USD); the
    /// review_max_cost setting overrides it. Unset: no limit.
    #[arg(long, env = "REVIEW_MAX_COST")]
    pub review_max_cost: Option<f64>,
    /// Most answers the App posts in one review thread; the thread_max_answers setting
    /// overrides it (docs/review-service.md, "Answers in review threads").
    #[arg(long, env = "THREAD_MAX_ANSWERS", default_value_t = 3)]
    pub thread_max_answers: u32,
    /// Most answers (in threads and to `/ask`) the App posts on one pull request; the
    /// pr_max_answers setting overrides it.
    #[arg(long, env = "PR_MAX_ANSWERS", default_value_t = 20)]
    pub pr_max_answers: u32,
    /// Most the whole service may spend on reviews in a calendar month (UTC), in the units of
    /// ReviewRow.cost (USD); the monthly_budget setting overrides it, and a repository's own
    /// monthly_budget replaces it for that repository. Unset: no limit
    /// (docs/review-service.md, "Monthly budget").
    #[arg(long, env = "MONTHLY_BUDGET")]
    pub monthly_budget: Option<f64>,
    /// Host names the API answers besides IP literals, `localhost` and AUTH_URL's host,
    /// comma-separated (`*`: any, when a proxy in front checks Host). Other Host headers get
    /// 403, which stops DNS rebinding (docs/security.md, HTTP).
    #[arg(long, env = "ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,
    /// Serve `/api` without the OAuth gate on a LISTEN address that is not loopback. Default
    /// false: with the gate off and LISTEN on a non-loopback address, every `/api` request is
    /// answered 403 `open_api_refused` (docs/security.md, "Sign-in"). Set it only when a proxy
    /// in front authenticates every request.
    #[arg(long, env = "ALLOW_OPEN_API", default_value_t = false, action = clap::ArgAction::Set)]
    pub allow_open_api: bool,
    /// Seconds a request body may take to arrive once the headers are in; a body still
    /// arriving after it is answered 408 `body_timeout` and its connection closed. Default 10.
    #[arg(long, env = "BODY_TIMEOUT_SECS", default_value_t = 10)]
    pub body_timeout_secs: u64,
    /// Webhook bodies over 1 MiB (or without a Content-Length) read at once, each up to 25 MiB;
    /// one more is answered 503 `webhook_busy` with Retry-After, so concurrent large deliveries
    /// cannot grow memory without bound. Smaller bodies are not counted. Default 4.
    #[arg(long, env = "WEBHOOK_MAX_CONCURRENT_BODIES", default_value_t = 4)]
    pub webhook_max_concurrent_bodies: usize,
}

/// The review model when neither a repository, the `agent_model` setting nor AGENT_MODEL names
/// one (docs/configuration.md).
pub const BUILT_IN_MODEL: &str = "anthropic/claude-sonnet-4-5";

/// How the dashboard API is exposed, decided once at start (docs/security.md, "Sign-in").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiExposure {
    /// The OAuth gate is on: every `/api` request but sign-in needs a session.
    Gated,
    /// The gate is off and LISTEN is a loopback address: only this machine can reach `/api`.
    OpenOnLoopback,
    /// The gate is off on a non-loopback LISTEN and ALLOW_OPEN_API=true: open by opt-in.
    OpenByOptIn,
    /// The gate is off on a non-loopback LISTEN without the opt-in: `/api` answers 403.
    Refused,
}

impl Config {
    /// The database URL: DATABASE_URL, else `sqlite://$DATA_DIR/review.db`.
    pub fn database_url(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}/review.db", self.data_dir.display()))
    }

    /// The clone base: FORGE_GIT_URL, else FORGE_URL.
    pub fn git_url(&self) -> &str {
        self.forge_git_url.as_deref().unwrap_or(&self.forge_url)
    }

    /// The host part of FORGE_URL, naming the cache folder (`repos/<forge_host>/...`).
    pub fn forge_host(&self) -> String {
        authority(&self.forge_url).replace(':', "_")
    }

    /// GitLab's host (with its port when GITLAB_URL names one), lowercase: the first part of a
    /// GitLab project's full name, `<gitlab host>/<namespace>/<project>`
    /// (docs/review-service.md, "GitLab"). None when GITLAB_URL is unset.
    pub fn gitlab_host(&self) -> Option<String> {
        let url = self.gitlab_url.as_deref()?;
        Some(authority(url).to_ascii_lowercase())
    }

    /// GitLab's clone base: GITLAB_GIT_URL, else GITLAB_URL.
    pub fn gitlab_git_url(&self) -> Option<&str> {
        self.gitlab_git_url
            .as_deref()
            .or(self.gitlab_url.as_deref())
    }

    /// REVIEW_MAX_TREE_ENTRIES and REVIEW_MAX_TREE_BYTES as git-cache's limits.
    pub fn tree_limits(&self) -> git_cache::Limits {
        git_cache::Limits {
            max_entries: self.review_max_tree_entries,
            max_bytes: self.review_max_tree_bytes,
        }
    }

    /// The sign-in variables that are set (non-empty) and those missing: the OAuth gate needs
    /// AUTH_SECRET, FORGE_APP_CLIENT_ID and FORGE_APP_CLIENT_SECRET together
    /// (docs/review-service.md §5 rule 1), or, for sign-in with GitLab, AUTH_SECRET,
    /// GITLAB_OAUTH_CLIENT_ID and GITLAB_OAUTH_CLIENT_SECRET (docs/review-service.md,
    /// "GitLab"), with GitHub's pair then both set or neither. Some but not all is a start-up
    /// error naming the missing ones, never a silently open API.
    pub fn check_sign_in(&self) -> anyhow::Result<()> {
        let given = |v: Option<&str>| v.is_some_and(|s| !s.trim().is_empty());
        let auth_secret = (
            "AUTH_SECRET",
            given(self.auth_secret.as_ref().map(|s| s.expose_secret())),
        );
        let github = [
            auth_secret,
            ("FORGE_APP_CLIENT_ID", given(self.app_client_id.as_deref())),
            (
                "FORGE_APP_CLIENT_SECRET",
                given(self.app_client_secret.as_ref().map(|s| s.expose_secret())),
            ),
        ];
        let gitlab = [
            auth_secret,
            (
                "GITLAB_OAUTH_CLIENT_ID",
                given(self.gitlab_oauth_client_id.as_deref()),
            ),
            (
                "GITLAB_OAUTH_CLIENT_SECRET",
                given(
                    self.gitlab_oauth_client_secret
                        .as_ref()
                        .map(|s| s.expose_secret()),
                ),
            ),
        ];
        if !(gitlab[1].1 || gitlab[2].1) {
            return all_or_none(&github, "");
        }
        all_or_none(&gitlab, " for sign-in with GitLab")?;
        if github[1].1 != github[2].1 {
            all_or_none(&github, "")?;
        }
        Ok(())
    }

    /// How `/api` is exposed, given whether the OAuth gate is on.
    pub fn api_exposure(&self, gate_on: bool) -> ApiExposure {
        if gate_on {
            ApiExposure::Gated
        } else if self.listen.ip().is_loopback() {
            ApiExposure::OpenOnLoopback
        } else if self.allow_open_api {
            ApiExposure::OpenByOptIn
        } else {
            ApiExposure::Refused
        }
    }

    /// A configuration with every default, for tests and embedding.
    pub fn defaults() -> Self {
        Cli::parse_from(["review-server"]).config
    }
}

/// Ok when every variable of `set` is set or none is; else the start-up error naming those set
/// and those missing (names only, never values).
fn all_or_none(set: &[(&str, bool)], purpose: &str) -> anyhow::Result<()> {
    let missing: Vec<&str> = set.iter().filter(|(_, on)| !on).map(|(n, _)| *n).collect();
    if missing.is_empty() || missing.len() == set.len() {
        return Ok(());
    }
    let given: Vec<&str> = set.iter().filter(|(_, on)| *on).map(|(n, _)| *n).collect();
    let names: Vec<&str> = set.iter().map(|(n, _)| *n).collect();
    let names = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    };
    anyhow::bail!(
        "incomplete sign-in configuration: {} set but {} missing; the OAuth gate{purpose} needs \
         all three of {} (or none, with LISTEN on loopback or ALLOW_OPEN_API=true)",
        given.join(" and "),
        missing.join(" and "),
        names
    )
}

/// The host (and port) of a URL, without user info; `forge` for a URL without one.
fn authority(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split('/').next().unwrap_or_default();
    let host = host.rsplit('@').next().unwrap_or(host);
    if host.is_empty() {
        "forge".to_owned()
    } else {
        host.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn sign_in_with_gitlab_needs_its_pair_and_the_auth_secret() {
        let secret = |v: &str| Some(SecretString::from(v.to_owned()));
        let mut c = Config::defaults();
        c.auth_secret = secret("s");
        c.gitlab_oauth_client_id = Some("id".into());
        c.gitlab_oauth_client_secret = secret("x");
        c.check_sign_in().unwrap();
        c.app_client_id = Some("gh".into());
        let e = c.check_sign_in().unwrap_err().to_string();
        assert!(e.contains("but FORGE_APP_CLIENT_SECRET missing"), "{e}");
        c.app_client_secret = secret("y");
        c.check_sign_in().unwrap();
        c.auth_secret = None;
        let e = c.check_sign_in().unwrap_err().to_string();
        assert!(
            e.contains(
                "GITLAB_OAUTH_CLIENT_ID and GITLAB_OAUTH_CLIENT_SECRET set but AUTH_SECRET missing"
            ),
            "{e}"
        );
        c.gitlab_oauth_client_secret = None;
        let e = c.check_sign_in().unwrap_err().to_string();
        assert!(e.contains("GITLAB_OAUTH_CLIENT_SECRET missing"), "{e}");
    }

    #[test]
    fn forge_host_names_the_cache_folder() {
        let mut c = Config::defaults();
        assert_eq!(c.forge_host(), "github.com");
        c.forge_url = "http://127.0.0.1:4000/".into();
        assert_eq!(c.forge_host(), "127.0.0.1_4000");
        assert_eq!(c.database_url(), "sqlite://./data/review.db");
        assert_eq!(c.gitlab_host(), None);
        c.gitlab_url = Some("https://GitLab.Example.com:8443/gitlab/".into());
        assert_eq!(c.gitlab_host().as_deref(), Some("gitlab.example.com:8443"));
    }
}
