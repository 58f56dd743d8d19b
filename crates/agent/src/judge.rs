//! The judge of `review-server eval` (docs/review-service.md, "Measuring the reviewer"): decides
//! whether one posted finding identifies the same underlying issue as one golden comment, one
//! pair per call with a JSON answer `{"reasoning", "match", "confidence"}`, as the judge step of
//! the Martian code-review benchmark does, so scores on its golden files compare with the ones
//! it publishes. The eval keeps every prompt and answer with its results.

use review_domain::ModelSpec;
use serde::{Deserialize, Serialize};

use crate::error::AgentError;
use crate::provider::{ProviderSettings, Usage, complete};

/// The judge's system prompt. The marker phrase "code review evaluator" names the role.
pub const JUDGE_SYSTEM: &str =
    "You are a careful code review evaluator. Answer with one JSON object and nothing else.";

/// The judge's question for one golden comment and one candidate finding.
pub fn judge_prompt(golden: &str, candidate: &str) -> String {
    format!(
        "You compare the findings of an automated code reviewer with the issues a human found in \
the same change.\n\n\
Golden comment (an issue known to be in the change):\n<golden>\n{golden}\n</golden>\n\n\
Candidate finding (posted by the reviewer):\n<candidate>\n{candidate}\n</candidate>\n\n\
Does the candidate point at the same underlying issue as the golden comment: the same bug, \
defect or concern in the same code? Different wording is fine; a different problem in the same \
code is not a match.\n\n\
Answer with only this JSON object: {{\"reasoning\": \"<one or two sentences>\", \"match\": \
true or false, \"confidence\": <0.0 to 1.0>}}"
    )
}

/// The judge's decision on one pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The candidate identifies the golden comment's issue.
    #[serde(rename = "match")]
    pub matched: bool,
    /// 0.0 to 1.0; 1.0 when the answer leaves it out.
    #[serde(default = "full_confidence")]
    pub confidence: f64,
    /// The judge's explanation; empty when left out.
    #[serde(default)]
    pub reasoning: String,
}

fn full_confidence() -> f64 {
    1.0
}

/// Reads the judge's answer: the first `{` to the last `}` of the text (so a fenced or
/// prefaced answer is accepted), as a [`Verdict`]. Errors: a message naming what is missing.
pub fn parse_verdict(answer: &str) -> Result<Verdict, String> {
    let start = answer.find('{');
    let end = answer.rfind('}');
    let (Some(start), Some(end)) = (start, end) else {
        return Err("the judge's answer holds no JSON object".into());
    };
    if end < start {
        return Err("the judge's answer holds no JSON object".into());
    }
    serde_json::from_str(&answer[start..=end])
        .map_err(|e| format!("the judge's answer is not the expected JSON object: {e}"))
}

/// One judged pair, kept with the eval's results.
#[derive(Debug, Clone, Serialize)]
pub struct Judgement {
    /// The prompt sent (after [`JUDGE_SYSTEM`]).
    pub prompt: String,
    /// The judge's reply text; empty when the call failed.
    pub answer: String,
    /// The decision; `None` when the call failed or the answer did not parse (counted as no
    /// match, with `error` saying why).
    pub verdict: Option<Verdict>,
    /// Why there is no verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Tokens of the call.
    #[serde(skip)]
    pub usage: Usage,
}

impl Judgement {
    /// The judge said the pair matches.
    pub fn matched(&self) -> bool {
        self.verdict.as_ref().is_some_and(|v| v.matched)
    }
}

/// Asks `spec` whether `candidate` identifies the issue of `golden`. A failed call or an
/// answer that does not parse is not an error here: it is a [`Judgement`] without a verdict,
/// so one bad answer costs one pair, not the run. Errors: only the registry's
/// ([`AgentError::MissingKey`], [`AgentError::UnknownProvider`]), which no later call would
/// escape either.
pub async fn judge(
    providers: &ProviderSettings,
    spec: &ModelSpec,
    golden: &str,
    candidate: &str,
) -> Result<Judgement, AgentError> {
    providers.client(&spec.provider)?;
    let prompt = judge_prompt(golden, candidate);
    let (answer, usage, verdict, error) =
        match complete(providers, spec, JUDGE_SYSTEM, &prompt).await {
            Ok((answer, usage)) => match parse_verdict(&answer) {
                Ok(v) => (answer, usage, Some(v), None),
                Err(e) => (answer, usage, None, Some(e)),
            },
            Err(e) => (String::new(), Usage::default(), None, Some(e.to_string())),
        };
    Ok(Judgement {
        prompt,
        answer,
        verdict,
        error,
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_fenced_or_bare_parse_and_others_say_why() {
        let v = parse_verdict(
            "```json\n{\"reasoning\": \"same bug\", \"match\": true, \"confidence\": 0.8}\n```",
        )
        .unwrap();
        assert!(v.matched && (v.confidence - 0.8).abs() < 1e-9 && v.reasoning == "same bug");
        let v = parse_verdict("{\"match\": false}").unwrap();
        assert!(!v.matched && v.confidence == 1.0);
        assert!(parse_verdict("no idea").unwrap_err().contains("no JSON"));
        assert!(
            parse_verdict("{\"verdict\": 1}")
                .unwrap_err()
                .contains("expected JSON")
        );
        assert!(parse_verdict("} {").is_err());
    }

    #[test]
    fn the_prompt_holds_both_texts_in_their_blocks() {
        let p = judge_prompt("G text", "C text");
        assert!(p.contains("<golden>\nG text\n</golden>"));
        assert!(p.contains("<candidate>\nC text\n</candidate>"));
    }
}
