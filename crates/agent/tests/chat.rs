//! The chat loop against the scripted model server over loopback HTTP, with a recording
//! stand-in for the database: the part sequence, the step cap and cancellation. The route's
//! end-to-end behaviour (real SQLite, HTTP stream) is tested in apps/review-server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;
use std::time::Duration;

use agent::chat::{CHAT_MAX_STEPS, STEP_LIMIT_NOTE};
use agent::{CancellationToken, Chat, ChatDatabase, ChatEnd, ProviderSettings, UiPart};
use pretty_assertions::assert_eq;
use review_domain::ModelSpec;
use serde_json::{Value, json};
use test_doubles::scripted_model::{Behavior, CHAT_COUNT_SQL, ChatScript, ScriptedModel};

/// Answers every SELECT with a count of 3 and refuses the rest, recording each statement.
#[derive(Default)]
struct FakeDb {
    statements: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl ChatDatabase for FakeDb {
    async fn query(&self, sql: &str) -> Result<Value, String> {
        self.statements.lock().unwrap().push(sql.to_owned());
        if sql.starts_with("SELECT") {
            Ok(json!({"columns": ["reviews"], "rows": [[3]], "truncated": false}))
        } else {
            Err("query refused: only reads".into())
        }
    }
}

fn settings(model: &ScriptedModel, stream: bool) -> ProviderSettings {
    ProviderSettings {
        anthropic_base_url: model.base_url(),
        openai_base_url: model.openai_base_url(),
        agent_api_key: Some("k".into()),
        third_api_key: Some("k".into()),
        stream,
        ..Default::default()
    }
}

async fn run(
    behavior: Behavior,
    spec: &str,
    stream: bool,
) -> (Vec<UiPart>, ChatEnd, ScriptedModel, FakeDb) {
    let model = ScriptedModel::start(behavior);
    let db = FakeDb::default();
    let chat = Chat::new(
        &settings(&model, stream),
        spec.parse::<ModelSpec>().unwrap(),
        vec!["How many reviews are there?".into()],
    )
    .unwrap();
    let mut parts = Vec::new();
    let outcome = chat
        .run(&db, &mut |p| parts.push(p), CancellationToken::new())
        .await;
    (parts, outcome.end, model, db)
}

/// Text deltas folded per block, so the sequence does not depend on how the text was split.
fn folded(parts: &[UiPart]) -> Vec<UiPart> {
    let mut out: Vec<UiPart> = Vec::new();
    for p in parts {
        if let (
            UiPart::TextDelta { id, delta },
            Some(UiPart::TextDelta {
                id: last_id,
                delta: last,
            }),
        ) = (p, out.last_mut())
            && id == last_id
        {
            last.push_str(delta);
            continue;
        }
        out.push(p.clone());
    }
    out
}

#[tokio::test]
async fn parts_follow_the_ui_message_stream_order_on_every_wire_format() {
    for (spec, stream) in [
        ("anthropic/claude-test", true),
        ("anthropic/claude-test", false),
        ("openai/gpt-test", true),
        ("openai/gpt-test", false),
    ] {
        let (parts, end, _model, db) =
            run(Behavior::Chat(ChatScript::CountReviews), spec, stream).await;
        assert_eq!(end, ChatEnd::Answered, "{spec} {stream}");
        assert_eq!(*db.statements.lock().unwrap(), vec![CHAT_COUNT_SQL]);
        let call_id = parts
            .iter()
            .find_map(|p| match p {
                UiPart::ToolInputStart { tool_call_id, .. } => Some(tool_call_id.clone()),
                _ => None,
            })
            .unwrap();
        let input = json!({ "sql": CHAT_COUNT_SQL });
        let mut want = vec![UiPart::Start, UiPart::StartStep];
        let mut answer_id = "text-1";
        if spec.starts_with("anthropic") {
            // The Anthropic double says a word before its tool call.
            want.extend([
                UiPart::TextStart {
                    id: "text-1".into(),
                },
                UiPart::TextDelta {
                    id: "text-1".into(),
                    delta: "Let me check.".into(),
                },
                UiPart::TextEnd {
                    id: "text-1".into(),
                },
            ]);
            answer_id = "text-2";
        }
        want.extend([
            UiPart::ToolInputStart {
                tool_call_id: call_id.clone(),
                tool_name: "query_database".into(),
            },
            UiPart::ToolInputDelta {
                tool_call_id: call_id.clone(),
                input_text_delta: input.to_string(),
            },
            UiPart::ToolInputAvailable {
                tool_call_id: call_id.clone(),
                tool_name: "query_database".into(),
                input,
            },
        ]);
        want.extend([
            UiPart::ToolOutputAvailable {
                tool_call_id: call_id,
                output: json!({"columns": ["reviews"], "rows": [[3]], "truncated": false}),
            },
            UiPart::FinishStep,
            UiPart::StartStep,
            UiPart::TextStart {
                id: answer_id.into(),
            },
            UiPart::TextDelta {
                id: answer_id.into(),
                delta: "There are 3 reviews in the database.".into(),
            },
            UiPart::TextEnd {
                id: answer_id.into(),
            },
            UiPart::FinishStep,
            UiPart::Finish,
        ]);
        assert_eq!(folded(&parts), want, "{spec} stream={stream}");
    }
}

#[tokio::test]
async fn a_turn_stops_after_six_model_calls() {
    let (parts, end, model, db) = run(
        Behavior::Chat(ChatScript::KeepQuerying),
        "openai/gpt-test",
        true,
    )
    .await;
    assert_eq!(end, ChatEnd::StepLimit);
    assert_eq!(model.requests().len(), CHAT_MAX_STEPS as usize);
    assert_eq!(db.statements.lock().unwrap().len(), CHAT_MAX_STEPS as usize);
    let steps = parts.iter().filter(|p| **p == UiPart::StartStep).count();
    assert_eq!(steps, CHAT_MAX_STEPS as usize);
    let tail: Vec<UiPart> = parts[parts.len() - 5..].to_vec();
    assert_eq!(
        tail,
        vec![
            UiPart::TextStart {
                id: "text-1".into()
            },
            UiPart::TextDelta {
                id: "text-1".into(),
                delta: STEP_LIMIT_NOTE.into()
            },
            UiPart::TextEnd {
                id: "text-1".into()
            },
            UiPart::FinishStep,
            UiPart::Finish,
        ]
    );
}

#[tokio::test]
async fn a_provider_failure_is_an_error_part_not_a_failed_call() {
    let (parts, end, _model, _db) = run(Behavior::Fail500, "anthropic/claude-test", true).await;
    let ChatEnd::Failed(message) = end else {
        panic!("{end:?}")
    };
    assert!(message.contains("scripted failure"), "{message}");
    assert_eq!(
        parts,
        vec![
            UiPart::Start,
            UiPart::StartStep,
            UiPart::Error {
                error_text: message
            },
            UiPart::Finish,
        ]
    );
}

#[tokio::test]
async fn cancelling_drops_the_model_request_in_flight() {
    let model = ScriptedModel::start(Behavior::Slow(Duration::from_secs(30)));
    let chat = Chat::new(
        &settings(&model, true),
        "anthropic/claude-test".parse().unwrap(),
        vec!["q".into()],
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        canceller.cancel();
    });
    let db = FakeDb::default();
    let mut parts = Vec::new();
    let started = std::time::Instant::now();
    let outcome = chat.run(&db, &mut |p| parts.push(p), cancel).await;
    assert_eq!(outcome.end, ChatEnd::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(parts, vec![UiPart::Start, UiPart::StartStep]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while model.abandoned_requests() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the model never saw the request dropped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(model.abandoned_requests(), 1);
}
