//! Reads a server-sent-events body with an idle timeout per event.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;

use crate::error::AgentError;

/// Feeds each event's `data` to `on_data` until the stream ends or `on_data` returns
/// `Ok(true)` (done). Waiting longer than `idle` for the next event is a [`AgentError::Timeout`].
pub(crate) async fn drive(
    response: reqwest::Response,
    idle: Duration,
    mut on_data: impl FnMut(&str) -> Result<bool, AgentError>,
) -> Result<(), AgentError> {
    let mut events = response.bytes_stream().eventsource();
    loop {
        let next = tokio::time::timeout(idle, events.next())
            .await
            .map_err(|_| {
                AgentError::Timeout(format!(
                    "no event from the model stream for {} s",
                    idle.as_secs()
                ))
            })?;
        match next {
            None => return Ok(()),
            Some(Err(e)) => return Err(AgentError::transport("reading the stream", e)),
            Some(Ok(event)) => {
                if event.data.is_empty() {
                    continue;
                }
                if on_data(&event.data)? {
                    return Ok(());
                }
            }
        }
    }
}
