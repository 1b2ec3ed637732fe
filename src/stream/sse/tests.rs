//! Tests of the stream endpoint, end to end over HTTPS where it matters.

use super::*;
use crate::stream::testkit::{self, SseClient, TestServer};
use serde_json::Value;
use std::time::Instant;

#[test]
fn stations_are_trimmed_upper_cased_and_deduplicated() {
    assert_eq!(parse_stations(" KNYC, kmdw,,KNYC ,"), vec!["KNYC", "KMDW"]);
    assert!(parse_stations("").is_empty());
}

#[test]
fn header_wins_over_stale_query_id() {
    let mut headers = HeaderMap::new();
    assert_eq!(resume_id(&headers, Some(" 7 ")), Some("7".into()));
    assert_eq!(resume_id(&headers, Some("")), None);
    headers.insert("last-event-id", HeaderValue::from_static("9"));
    assert_eq!(resume_id(&headers, Some("7")), Some("9".into()));
    headers.insert("last-event-id", HeaderValue::from_static(""));
    assert_eq!(resume_id(&headers, Some("7")), Some("7".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connected_first_then_live_event_in_line_order() {
    let server = TestServer::start(testkit::Options::default()).await;
    let mut client = server.open("alice", "KNYC,KMDW", None).await;
    assert_eq!(client.status, 200);
    assert_eq!(client.header("content-type"), Some("text/event-stream"));
    let connected = client.next_event().await.expect("connected");
    assert_eq!(connected.lines[0], "event: connected");
    assert_eq!(connected.id, None, "connected carries no id");
    assert_eq!(connected.data["stations"], json!(["KNYC", "KMDW"]));
    assert_eq!(connected.data["user"], "alice");
    assert!(connected.data["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));

    let published = server.publish("KNYC", "new_high", json!({"value_f": 75}));
    let event = client.next_event().await.expect("event");
    let id = published.to_string();
    assert_eq!(event.lines.len(), 3);
    assert_eq!(event.lines[0], "event: new_high");
    assert_eq!(event.lines[1], format!("id: {id}"));
    assert!(event.lines[2].starts_with("data: {"));
    assert_eq!(event.data["id"], json!(id));
    assert_eq!(event.data["value_f"], 75);
    assert!(event.data["timestamp"].is_string());
    // The live delivery's lag was recorded (the `connected` frame is not a delivery), and
    // it is at most the time this test has run.
    let lag = server.hub.delivery_lag().snapshot();
    assert_eq!(lag.count(), 1);
    assert!(lag.quantile(1.0).unwrap() < std::time::Duration::from_secs(10));
}

/// A chunk of one frame is that frame's bytes (no copy); more frames are joined in order.
#[test]
fn a_single_frame_goes_out_uncopied() {
    let (a, b) = (Bytes::from_static(b"event: a\n\n"), Bytes::from_static(b"event: b\n\n"));
    let mut one = Chunk::default();
    assert!(one.is_empty());
    one.push(a.clone());
    assert_eq!(one.len(), a.len());
    assert_eq!(one.freeze().as_ptr(), a.as_ptr());
    let mut two = Chunk::default();
    for f in [a.clone(), b.clone(), a.clone()] {
        two.push(f);
    }
    assert_eq!(&two.freeze()[..], b"event: a\n\nevent: b\n\nevent: a\n\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeat_every_interval_without_id() {
    let server = TestServer::start(testkit::Options { heartbeat: Duration::from_secs(1), ..Default::default() }).await;
    let mut client = server.open("alice", "KNYC", None).await;
    client.next_event().await.expect("connected");
    let start = Instant::now();
    for _ in 0..2 {
        let hb = client.next_event().await.expect("heartbeat");
        assert_eq!(hb.lines.len(), 2, "{:?}", hb.lines);
        assert_eq!(hb.lines[0], "event: heartbeat");
        assert!(hb.lines[1].starts_with("data: "));
        assert!(hb.data["timestamp"].is_string());
    }
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_millis(1900) && elapsed < Duration::from_secs(5), "{elapsed:?}");
}

/// Publishes a stream of events across two stations while a client disconnects and
/// reconnects, and checks the client's view: every KNYC event exactly once, in order.
async fn reconnect_replays_exactly(via_header: bool) {
    let server = TestServer::start(testkit::Options::default()).await;
    let mut first = server.open("alice", "KNYC", None).await;
    first.next_event().await.expect("connected");
    let mut expected = Vec::new();
    for i in 0..6u64 {
        let station = if i % 2 == 0 { "KNYC" } else { "KMDW" };
        let id = server.publish(station, "observation", json!({"n": i}));
        if station == "KNYC" {
            expected.push(id);
        }
    }
    let mut seen = Vec::new();
    while seen.len() < 3 {
        seen.push(first.next_event().await.expect("event").id_u64());
    }
    assert_eq!(seen, expected);
    let last_seen = *seen.last().unwrap();
    drop(first);

    // Events missed while disconnected, then a publisher that keeps going during the
    // reconnect (the race replay + live must survive).
    for i in 0..10u64 {
        let station = if i % 2 == 0 { "KNYC" } else { "KMDW" };
        let id = server.publish(station, "observation", json!({"n": i}));
        if station == "KNYC" {
            expected.push(id);
        }
    }
    let publisher = server.spawn_publisher(200, Duration::from_millis(2));
    let mut second = if via_header {
        server.open_with_header("alice", "KNYC", &last_seen.to_string()).await
    } else {
        server.open("alice", "KNYC", Some(&last_seen.to_string())).await
    };
    assert_eq!(second.next_event().await.expect("connected").name, "connected");
    let live_ids = publisher.await.unwrap();
    expected.extend(live_ids);
    let tail = server.publish("KNYC", "observation", json!({"final": true}));
    expected.push(tail);
    loop {
        let e = second.next_event().await.expect("event");
        assert_eq!(e.name, "observation");
        seen.push(e.id_u64());
        if e.id_u64() == tail {
            break;
        }
    }
    assert_eq!(seen, expected, "replay + live must have no gap and no duplicate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_with_last_event_id_query_replays_then_goes_live() {
    reconnect_replays_exactly(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_with_last_event_id_header_replays_then_goes_live() {
    reconnect_replays_exactly(true).await;
}

/// The deterministic form of the replay/live race: an event already in the log (so in the
/// replay) is published to the hub only after the client subscribed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_both_replayed_and_published_late_is_sent_once() {
    let server = TestServer::start(testkit::Options::default()).await;
    let seen = server.publish("KNYC", "observation", json!({}));
    let late = server.log.append("KNYC", "observation", json!({"late": true}), Utc::now()).unwrap();
    let mut client = server.open("alice", "KNYC", Some(&seen.to_string())).await;
    assert_eq!(client.next_event().await.expect("connected").name, "connected");
    assert_eq!(client.next_event().await.expect("replayed").id_u64(), late.id);
    server.hub.publish(Arc::clone(&late));
    let next = server.publish("KNYC", "observation", json!({}));
    assert_eq!(client.next_event().await.expect("live").id_u64(), next, "late duplicate must be skipped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_or_expired_id_gets_resync_then_live() {
    let server = TestServer::start(testkit::Options::default()).await;
    let old = chrono::Utc::now() - chrono::Duration::hours(30);
    let expired = server.log.append("KNYC", "observation", json!({}), old).unwrap().id;
    server.publish("KNYC", "observation", json!({}));
    let before_window = (expired - 1).to_string();
    for (last, reason) in [
        ("bogus", "unknown_last_event_id"),
        ("999999", "unknown_last_event_id"),
        (before_window.as_str(), "last_event_id_expired"),
    ] {
        let mut client = server.open("alice", "KNYC", Some(last)).await;
        assert_eq!(client.next_event().await.expect("connected").name, "connected");
        let resync = client.next_event().await.expect("resync");
        assert_eq!(resync.name, "resync");
        assert_eq!(resync.id, None);
        assert_eq!(resync.data["reason"], reason, "for {last}");
        assert_eq!(resync.data["last_event_id"], last);
        let live = server.publish("KNYC", "new_low", json!({}));
        let e = client.next_event().await.expect("live after resync");
        assert_eq!((e.name.as_str(), e.id_u64()), ("new_low", live));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_connection_displaces_the_first() {
    let server = TestServer::start(testkit::Options::default()).await;
    let mut first = server.open("alice", "KNYC", None).await;
    first.next_event().await.expect("connected");
    let id = server.publish("KNYC", "observation", json!({}));
    assert_eq!(first.next_event().await.expect("event").id_u64(), id);
    let mut second = server.open("alice", "KNYC", None).await;
    second.next_event().await.expect("connected");
    let displaced = first.next_event().await.expect("displaced");
    assert_eq!(displaced.name, "displaced");
    assert_eq!(displaced.data["last_event_id"], id.to_string());
    assert_eq!(displaced.retry, Some(ReconnectPolicy::default().displaced_retry.as_millis() as u64));
    assert!(first.next_event().await.is_none(), "displaced connection must reach EOF");
    assert!(first.reaches_eof().await);
    let next = server.publish("KNYC", "observation", json!({}));
    assert_eq!(second.next_event().await.expect("event").id_u64(), next);
    assert_eq!(server.hub.stats().displaced, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn displaced_client_is_told_how_long_to_wait() {
    let reconnect = ReconnectPolicy { displaced_retry: Duration::from_millis(7500), ..Default::default() };
    let server = TestServer::start(testkit::Options { reconnect, ..Default::default() }).await;
    let mut first = server.open("alice", "KNYC", None).await;
    first.next_event().await.expect("connected");
    let mut second = server.open("alice", "KNYC", None).await;
    second.next_event().await.expect("connected");
    let displaced = first.next_event().await.expect("displaced");
    // `retry:` after `event:` (clients start an event there), before `data:`.
    assert_eq!(displaced.lines[0], "event: displaced");
    assert_eq!(displaced.lines[1], "retry: 7500");
    assert!(displaced.lines[2].starts_with("data: {"), "{:?}", displaced.lines);
    assert_eq!(displaced.retry, Some(7500));
    assert_eq!(displaced.data["retry_after_ms"], 7500);
    assert!(first.reaches_eof().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_reconnects_get_429_with_retry_after_and_displace_nobody() {
    let reconnect = ReconnectPolicy { burst: 3, interval: Duration::from_secs(10), ..Default::default() };
    let server = TestServer::start(testkit::Options { reconnect, ..Default::default() }).await;
    let mut clients = Vec::new();
    for _ in 0..3 {
        let mut c = server.open("bob", "KNYC", None).await;
        assert_eq!(c.status, 200);
        c.next_event().await.expect("connected");
        clients.push(c);
    }
    let mut refused = server.open("bob", "KNYC", None).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.header("content-type"), Some("application/json"));
    let retry_after: u64 = refused.header("retry-after").expect("Retry-After").parse().unwrap();
    assert!((1..=10).contains(&retry_after), "{retry_after}");
    let body: Value = serde_json::from_slice(&refused.read_body().await).unwrap();
    assert_eq!(body["error"], "Too many stream connections");
    assert!(body["details"].as_str().unwrap().contains(&format!("retry after {retry_after} s")), "{body}");
    // The refused attempt displaced nobody: the newest admitted connection stays live.
    let id = server.publish("KNYC", "observation", json!({}));
    let live = clients.last_mut().unwrap();
    assert_eq!(live.next_event().await.expect("event").id_u64(), id);
    let stats = server.hub.stats();
    assert_eq!((stats.displaced, stats.throttled, stats.clients), (2, 1, 1));
    // Other users have their own allowance.
    let mut other = server.open("carol", "KNYC", None).await;
    assert_eq!(other.status, 200);
    assert_eq!(other.next_event().await.expect("connected").name, "connected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_user_is_admitted_once_retry_after_has_passed() {
    let reconnect = ReconnectPolicy { burst: 1, interval: Duration::from_secs(2), ..Default::default() };
    let server = TestServer::start(testkit::Options { reconnect, ..Default::default() }).await;
    let mut first = server.open("bob", "KNYC", None).await;
    first.next_event().await.expect("connected");
    let refused = server.open("bob", "KNYC", None).await;
    assert_eq!(refused.status, 429);
    let retry_after: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    tokio::time::sleep(Duration::from_secs(retry_after)).await;
    let mut again = server.open("bob", "KNYC", None).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.next_event().await.expect("connected").name, "connected");
    assert_eq!(first.next_event().await.expect("displaced").name, "displaced");
}

/// A backlog larger than the log's memory and than one replay page: read back from the
/// segment files page by page, still every event once and in order, then live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_from_disk_spans_pages_exactly() {
    let server = TestServer::start(testkit::Options { log_budget: 64 * 1024, ..Default::default() }).await;
    let pad = "x".repeat(1000);
    let mut expected = Vec::new();
    for i in 0..800u64 {
        let station = if i % 4 == 3 { "KMDW" } else { "KNYC" };
        let id = server.publish(station, "observation", json!({"n": i, "pad": pad}));
        if station == "KNYC" {
            expected.push(id);
        }
    }
    let stats = server.log.stats();
    assert!(stats.cached < 100 && stats.memory_bytes <= 64 * 1024, "{stats:?}");
    assert!(expected.len() * 1000 > 2 * REPLAY_PAGE_BYTES, "spans pages");
    let mut client = server.open("alice", "KNYC", Some("0")).await;
    assert_eq!(client.next_event().await.expect("connected").name, "connected");
    let mut seen = Vec::new();
    while seen.len() < expected.len() {
        let e = client.next_event().await.expect("replayed");
        assert_eq!(e.name, "observation");
        assert_eq!(e.data["pad"], pad.as_str());
        seen.push(e.id_u64());
    }
    assert_eq!(seen, expected);
    let live = server.publish("KNYC", "new_high", json!({}));
    assert_eq!(client.next_event().await.expect("live").id_u64(), live);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_client_is_dropped_with_resync_while_fast_one_keeps_up() {
    // The queue and pacing leave a busy CI machine's scheduler ample slack: only a socket
    // that stopped draining, never a briefly starved task, overflows 16 events 5 ms apart.
    let server = TestServer::start(testkit::Options { queue: 16, ..Default::default() }).await;
    let mut slow = server.open_slow("slow", "KNYC").await;
    let mut fast = server.open("fast", "KNYC", None).await;
    fast.next_event().await.expect("connected");
    let collector = tokio::spawn(async move {
        let mut ids = Vec::new();
        while let Some(e) = fast.next_event().await {
            ids.push(e.id_u64());
            if e.data.get("last").is_some() {
                break;
            }
        }
        ids
    });
    // Large events fill the slow client's socket quickly; stop as soon as it is dropped.
    let padding = "x".repeat(64 * 1024);
    let mut published = Vec::new();
    for _ in 0..1000 {
        published.push(server.publish("KNYC", "observation", json!({"pad": padding})));
        tokio::time::sleep(Duration::from_millis(5)).await;
        if server.hub.stats().dropped_slow > 0 {
            break;
        }
    }
    assert_eq!(server.hub.stats().dropped_slow, 1, "slow client not detected in {} events", published.len());
    published.push(server.publish("KNYC", "observation", json!({"last": true})));
    let fast_ids = tokio::time::timeout(Duration::from_secs(20), collector).await.unwrap().unwrap();
    assert_eq!(fast_ids, published, "the fast client must get every event, in order");

    // Now the slow client reads: a gapless prefix, then resync naming its last id, then EOF.
    let mut ids = Vec::new();
    let mut last = None;
    while let Some(e) = slow.next_event().await {
        match e.name.as_str() {
            "connected" => {}
            "observation" => ids.push(e.id_u64()),
            _ => last = Some(e),
        }
    }
    let resync = last.expect("final event");
    assert_eq!(resync.name, "resync");
    assert_eq!(resync.data["reason"], "slow_consumer");
    assert_eq!(ids, published[..ids.len()].to_vec(), "delivered part is a gapless prefix");
    assert!(ids.len() < published.len());
    // Nothing existed when it connected, so its resume point is its last event (or 0).
    let resume = ids.last().map_or(0, |id| *id);
    assert_eq!(resync.data["last_event_id"], resume.to_string());
    assert!(slow.reaches_eof().await);
}

/// A dropped client that never drains cannot take its final event: after the grace period
/// the server cuts the connection instead of holding it (and its buffers) forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_client_that_never_reads_is_cut_after_the_grace_period() {
    let options = testkit::Options { queue: 16, close_grace: Duration::from_millis(500), ..Default::default() };
    let server = TestServer::start(options).await;
    let mut slow = server.open_slow("slow", "KNYC").await;
    let padding = "x".repeat(64 * 1024);
    let mut published = 0;
    while server.hub.stats().dropped_slow == 0 && published < 1000 {
        server.publish("KNYC", "observation", json!({"pad": padding}));
        published += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(server.hub.stats().dropped_slow, 1);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut names = Vec::new();
    while let Some(e) = slow.next_event().await {
        names.push(e.name);
    }
    assert!(slow.reaches_eof().await);
    assert!(!names.iter().any(|n| n == "resync"), "the cut connection never drained its final event");
    assert!(names.len() < published + 1, "only what was already in the socket buffers arrives");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_render_json_with_the_status() {
    let server = TestServer::start(testkit::Options::default()).await;
    for (query, status) in [
        ("stations=KNYC", 401),
        ("stations=KNYC&api_key=nope", 401),
        ("stations=KNYC&api_key=nostream", 403),
        ("api_key=key-alice", 400),
        ("stations=KNYC,KMDW,KAUS,KDFW,KMIA,KBOS&api_key=key-alice", 403),
    ] {
        let mut client = SseClient::get(&server, &format!("{STREAM_PATH}?{query}"), &[]).await;
        assert_eq!(client.status, status, "{query}");
        assert_eq!(client.header("content-type"), Some("application/json"));
        let body: Value = serde_json::from_slice(&client.read_body().await).unwrap();
        assert!(body["error"].is_string() && body["details"].is_string(), "{body}");
    }
    let mut other = SseClient::get(&server, "/api/v2/observations.php", &[]).await;
    assert_eq!(other.status, 404);
    let body: Value = serde_json::from_slice(&other.read_body().await).unwrap();
    assert_eq!(body["error"], "not found");
}
