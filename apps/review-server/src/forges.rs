//! What the server itself knows of each forge (docs/review-service.md, "GitLab"): where a
//! repository is cloned from and cached, and under which ref a pull request's head is
//! published. The forge calls live behind [`forge::Forge`].

use crate::config::Config;
use forge::{ForgeKind, RepoRef};
use git_cache::RepoKey;

/// Where a repository's bare clone lives and comes from, and the refspecs that fetch a pull
/// request's head and its base branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CloneTarget {
    /// `repos/<host>/<owner>/<name>.git`: the forge's host, then the owner (a GitLab
    /// namespace as nested folders).
    pub key: RepoKey,
    /// `{FORGE_GIT_URL}/{owner}/{name}.git`, or `{GITLAB_GIT_URL}/{namespace}/{project}.git`.
    pub url: String,
    /// The pull request's head ref (`refs/pull/<n>/head` on GitHub,
    /// `refs/merge-requests/<iid>/head` on GitLab) and the base branch, each fetched to the
    /// same name.
    pub refspecs: Vec<String>,
}

/// The ref a forge publishes pull request `number`'s head under.
pub(crate) fn head_ref(kind: ForgeKind, number: i64) -> String {
    match kind {
        ForgeKind::GitHub => format!("refs/pull/{number}/head"),
        ForgeKind::GitLab => format!("refs/merge-requests/{number}/head"),
    }
}

/// The clone target of `repo`'s pull request `number` with base branch `base_ref`.
///
/// Errors: a GitLab project while GITLAB_URL is unset, or one of another GitLab instance than
/// GITLAB_URL's.
pub(crate) fn clone_target(
    config: &Config,
    repo: &RepoRef,
    number: i64,
    base_ref: &str,
) -> anyhow::Result<CloneTarget> {
    let kind = repo.forge();
    let head = head_ref(kind, number);
    let refspecs = vec![
        format!("+{head}:{head}"),
        format!("+refs/heads/{base_ref}:refs/heads/{base_ref}"),
    ];
    match kind {
        ForgeKind::GitHub => Ok(CloneTarget {
            key: RepoKey {
                host: config.forge_host(),
                owner: repo.owner.clone(),
                name: repo.name.clone(),
            },
            url: format!(
                "{}/{}/{}.git",
                config.git_url().trim_end_matches('/'),
                repo.owner,
                repo.name
            ),
            refspecs,
        }),
        ForgeKind::GitLab => {
            let (host, namespace) = repo.owner.split_once('/').unwrap_or_default();
            let (Some(ours), Some(git_url)) = (config.gitlab_host(), config.gitlab_git_url())
            else {
                anyhow::bail!("GitLab is not configured: set GITLAB_URL and GITLAB_TOKEN");
            };
            if host != ours {
                anyhow::bail!(
                    "{} is a project of {host}, not of GITLAB_URL's instance {ours}",
                    repo.full_name()
                );
            }
            Ok(CloneTarget {
                key: RepoKey {
                    host: host.replace(':', "_"),
                    owner: namespace.to_owned(),
                    name: repo.name.clone(),
                },
                url: format!(
                    "{}/{namespace}/{}.git",
                    git_url.trim_end_matches('/'),
                    repo.name
                ),
                refspecs,
            })
        }
    }
}

/// The full name of a GitLab project, `<gitlab host>/<path_with_namespace>`; None when GitLab
/// is not configured.
pub(crate) fn gitlab_full_name(config: &Config, path_with_namespace: &str) -> Option<String> {
    Some(format!(
        "{}/{}",
        config.gitlab_host()?,
        path_with_namespace.trim_matches('/')
    ))
}

/// The RepoRef of a GitLab project `<host>/<namespace>/<project>` with its project id.
pub(crate) fn gitlab_repo(full_name: &str, project_id: i64) -> Option<RepoRef> {
    let (owner, name) = full_name.rsplit_once('/')?;
    (ForgeKind::of_owner(owner) == ForgeKind::GitLab).then(|| RepoRef {
        installation_id: project_id,
        owner: owner.to_owned(),
        name: name.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        let mut c = Config::defaults();
        c.gitlab_url = Some("https://gitlab.example.com".into());
        c
    }

    #[test]
    fn a_github_repository_clones_from_forge_git_url_with_its_pull_ref() {
        let repo = RepoRef {
            installation_id: 1,
            owner: "acme".into(),
            name: "widgets".into(),
        };
        let t = clone_target(&config(), &repo, 7, "main").unwrap();
        assert_eq!(t.url, "https://github.com/acme/widgets.git");
        assert_eq!(t.key.host, "github.com");
        assert_eq!(
            t.refspecs,
            [
                "+refs/pull/7/head:refs/pull/7/head",
                "+refs/heads/main:refs/heads/main"
            ]
        );
    }

    #[test]
    fn a_nested_gitlab_project_clones_from_gitlab_with_its_merge_request_ref() {
        let repo = gitlab_repo("gitlab.example.com/platform/backend/api", 42).unwrap();
        assert_eq!(repo.owner, "gitlab.example.com/platform/backend");
        let t = clone_target(&config(), &repo, 3, "main").unwrap();
        assert_eq!(t.url, "https://gitlab.example.com/platform/backend/api.git");
        assert_eq!(
            (
                t.key.host.as_str(),
                t.key.owner.as_str(),
                t.key.name.as_str()
            ),
            ("gitlab.example.com", "platform/backend", "api")
        );
        assert_eq!(
            t.refspecs[0],
            "+refs/merge-requests/3/head:refs/merge-requests/3/head"
        );
        let other = gitlab_repo("gitlab.other.org/g/p", 1).unwrap();
        assert!(clone_target(&config(), &other, 1, "main").is_err());
        assert!(clone_target(&Config::defaults(), &repo, 1, "main").is_err());
        assert!(gitlab_repo("acme/widgets", 1).is_none());
    }
}
