//! Which model and which focus a run uses: the settings cascades of docs/review-service.md §4
//! (Settings, rule 4) and §1 step 6, as pure functions over the values already read, so the
//! review pipeline, the improver, the chat, the model list and the CLI all choose the same way.

/// The model cascade of docs/review-service.md §4 (Settings rule 4), most specific first: the
/// repo's own override (`RepoRow.model`), then the purpose's global setting (`improver_model`
/// for the improver; none for reviews), then the global review default (the `agent_model`
/// setting), then `built_in` (AGENT_MODEL). A blank level counts as unset; the chosen text is
/// trimmed. Not parsed: callers report a bad spec their way.
pub fn model_cascade(
    repo_model: Option<&str>,
    purpose_setting: Option<&str>,
    agent_model: Option<&str>,
    built_in: &str,
) -> String {
    [repo_model, purpose_setting, agent_model]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|m| !m.is_empty())
        .unwrap_or(built_in)
        .to_owned()
}

/// The focus of a review (docs/review-service.md §1 step 6, "the default prompt or the
/// per-repo prompt"): the repo's own prompt when it is not blank, else the `default_prompt`
/// setting as stored, else empty, which the agent reads as its built-in focus.
pub fn review_focus(repo_prompt: Option<&str>, default_prompt: Option<&str>) -> String {
    repo_prompt
        .filter(|p| !p.trim().is_empty())
        .or(default_prompt)
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn model_cascade_takes_the_most_specific_level_that_is_set() {
        // (repo, purpose, agent_model, built-in, chosen)
        type Case = (
            Option<&'static str>,
            Option<&'static str>,
            Option<&'static str>,
            &'static str,
            &'static str,
        );
        let table: &[Case] = &[
            (Some("a/r"), Some("a/p"), Some("a/g"), "a/d", "a/r"),
            (None, Some("a/p"), Some("a/g"), "a/d", "a/p"),
            (None, None, Some("a/g"), "a/d", "a/g"),
            (None, None, None, "a/d", "a/d"),
            (Some(""), None, Some("a/g"), "a/d", "a/g"),
            (Some("  "), Some(" "), None, "a/d", "a/d"),
            (Some(" a/r "), None, None, "a/d", "a/r"),
            (None, Some("a/p"), None, "a/d", "a/p"),
            (Some("a/r"), None, None, "a/d", "a/r"),
            (None, Some(""), Some(" a/g"), "a/d", "a/g"),
        ];
        for &(repo, purpose, agent, built_in, want) in table {
            assert_eq!(
                model_cascade(repo, purpose, agent, built_in),
                want,
                "{repo:?} {purpose:?} {agent:?} {built_in:?}"
            );
        }
    }

    #[test]
    fn focus_is_the_repo_prompt_else_the_default_prompt_else_empty() {
        let table: &[(Option<&str>, Option<&str>, &str)] = &[
            (Some("repo"), Some("global"), "repo"),
            (None, Some("global"), "global"),
            (Some("  \n"), Some("global"), "global"),
            (Some(""), None, ""),
            (None, None, ""),
            (Some(" repo "), None, " repo "),
        ];
        for &(repo, default, want) in table {
            assert_eq!(review_focus(repo, default), want, "{repo:?} {default:?}");
        }
    }
}
