//! GET /api/openapi.json: the OpenAPI 3.1 document, generated from the handlers' annotations
//! (utoipa), so it cannot drift from the code.

use crate::state::AppState;
use axum::routing::get;
use axum::{Json, Router};
use utoipa::openapi::path::Operation;
use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi};

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "review-server",
        description = "Pull request review service (docs/review-service.md)"
    ),
    paths(
        super::health::health,
        super::auth::auth_status,
        super::webhook::receive,
        super::webhook_gitlab::receive,
        super::repos::list,
        super::repos::one,
        super::repos::upsert,
        super::repos::update,
        super::repos::remove,
        super::repos::improve,
        super::repos::repo_reviews,
        super::repos::pr_reviews,
        super::reviews::one,
        super::reviews::findings,
        super::reviews::dropped,
        super::reviews::session,
        super::reviews::retry,
        super::reviews::stop,
        super::events::stream,
        super::stats::stats,
        super::stats::charts,
        super::stats::outcomes,
        super::stats::repo_scores,
        super::stats::list_reviews,
        super::budget::budget,
        super::settings::get_settings,
        super::settings::put_settings,
        super::settings::test_settings,
        super::effective::effective,
        super::models::list_models,
        super::skills::list_skills,
        super::skills::install_skill,
        super::skills::set_skill_enabled,
        super::skills::delete_skill,
        super::chat::chat,
    ),
    modifiers(&BodyLimit, &LiveEventName)
)]
pub struct ApiDoc;

/// The schema of a live event's payload is generated from `events::Payload<ReviewRow,
/// RepoRow>`, which utoipa names `Payload_ReviewRow_RepoRow`; clients know it as `LiveEvent`
/// (docs/review-service.md §6), so the component is renamed and its reference follows.
struct LiveEventName;

/// The name utoipa gives the generic payload.
const GENERATED_LIVE_EVENT: &str = "Payload_ReviewRow_RepoRow";

impl Modify for LiveEventName {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        let Some(schema) = components.schemas.remove(GENERATED_LIVE_EVENT) else {
            return;
        };
        components.schemas.insert("LiveEvent".to_owned(), schema);
        let Some(get) = openapi
            .paths
            .paths
            .get_mut("/api/events")
            .and_then(|item| item.get.as_mut())
        else {
            return;
        };
        if let Some(RefOr::T(ok)) = get.responses.responses.get_mut("200") {
            for content in ok.content.values_mut() {
                content.schema = Some(Ref::from_schema_name("LiveEvent").into());
            }
        }
    }
}

/// Adds the request guard's 413 `payload_too_large` and 408 `body_timeout` to every operation
/// that takes a body: the guard refuses an over-limit or stalled body before any handler runs
/// (1 MiB, 25 MiB for the webhook; BODY_TIMEOUT_SECS; docs/review-service.md §7), so no
/// handler annotation can name them.
struct BodyLimit;

impl Modify for BodyLimit {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ];
            for operation in operations.into_iter().flatten() {
                add_payload_too_large(operation);
            }
        }
    }
}

fn add_payload_too_large(operation: &mut Operation) {
    if operation.request_body.is_none() {
        return;
    }
    for (status, description) in [
        (
            "413",
            "the body is over the route's limit (`payload_too_large`)",
        ),
        (
            "408",
            "the body did not arrive within BODY_TIMEOUT_SECS (`body_timeout`)",
        ),
    ] {
        let response = ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build();
        operation
            .responses
            .responses
            .entry(status.to_string())
            .or_insert_with(|| response.into());
    }
}

pub fn router() -> Router<AppState> {
    Router::new().route(
        "/api/openapi.json",
        get(|| async { Json(ApiDoc::openapi()) }),
    )
}
