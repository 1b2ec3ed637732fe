//! Tests of the event log: ids, replay, retention, memory budget, torn writes.

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::io::{BufReader, Write};

use super::*;
use serde_json::json;

fn stations(list: &[&str]) -> HashSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn ids(replay: Replay) -> Vec<u64> {
    match replay {
        Replay::Events { events, more: false } => events.iter().map(|e| e.id).collect(),
        other => panic!("expected all events, got {other:?}"),
    }
}

fn events(replay: Replay) -> Vec<Arc<Event>> {
    match replay {
        Replay::Events { events, more: false } => events,
        other => panic!("expected all events, got {other:?}"),
    }
}

fn segment_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(SEGMENT_PREFIX))
        .collect();
    names.sort();
    names
}

#[test]
fn append_assigns_increasing_ids_and_stamps_the_payload() {
    let dir = tempfile::tempdir().unwrap();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    let at = Utc::now();
    let a = log.append("KNYC", "new_high", json!({"value_f": 71}), at).unwrap();
    let b = log.append("KMDW", "observation", json!({}), at).unwrap();
    assert_eq!(a.id, 1);
    assert_eq!(b.id, 2);
    let data = a.data().unwrap();
    assert_eq!(data["id"], "1");
    assert_eq!(data["value_f"], 71);
    assert_eq!(data["timestamp"], json!(crate::stream::frame::iso_timestamp(at)));
    assert_eq!(log.last_id(), 2);
    assert_eq!(log.len(), 2);
}

#[test]
fn non_object_payload_is_refused_without_using_an_id() {
    let dir = tempfile::tempdir().unwrap();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    let err = log.append("KNYC", "x", json!([1, 2]), Utc::now()).unwrap_err();
    assert!(matches!(err, EventLogError::NotAnObject { found: "an array" }), "{err}");
    assert_eq!(log.append("KNYC", "x", json!({}), Utc::now()).unwrap().id, 1);
}

#[test]
fn replay_filters_stations_in_id_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    let now = Utc::now();
    for station in ["KNYC", "KMDW", "KNYC", "KAUS", "KNYC"] {
        log.append(station, "observation", json!({}), now).unwrap();
    }
    assert_eq!(ids(log.replay_after("0", &stations(&["KNYC"]))), vec![1, 3, 5]);
    assert_eq!(ids(log.replay_after("1", &stations(&["KNYC", "KAUS"]))), vec![3, 4, 5]);
    assert_eq!(ids(log.replay_after(" 5 ", &stations(&["KNYC"]))), Vec::<u64>::new());
}

#[test]
fn replay_of_garbage_or_future_id_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    log.append("KNYC", "observation", json!({}), Utc::now()).unwrap();
    for bad in ["abc", "", "-1", "1.5", "2", "18446744073709551616"] {
        assert!(matches!(log.replay_after(bad, &stations(&["KNYC"])), Replay::Unknown), "{bad:?}");
    }
}

#[test]
fn reopen_keeps_events_and_ids_stay_monotonic() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let before = {
        let log = EventLog::open(dir.path(), default_retention()).unwrap();
        for _ in 0..3 {
            log.append("KNYC", "observation", json!({"n": 1}), now).unwrap();
        }
        log.last_id()
    };
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    assert_eq!(ids(log.replay_after("0", &stations(&["KNYC"]))), vec![1, 2, 3]);
    let next = log.append("KNYC", "observation", json!({}), now).unwrap();
    assert!(next.id > before, "id {} after restart must exceed {before}", next.id);
    // The restart skipped the rest of the reserved block: ids are ordered, not contiguous.
    assert_eq!(next.id, ID_BLOCK + 1);
    // A client at 3 missed exactly the new event; the skipped ids were never issued, but a
    // client claiming one of them is told to resync rather than silently given nothing.
    assert_eq!(ids(log.replay_after("3", &stations(&["KNYC"]))), vec![next.id]);
    assert!(matches!(log.replay_after("500", &stations(&["KNYC"])), Replay::Expired));
    // The head right after the restart (what a fresh client was told) replays fine.
    assert_eq!(ids(log.replay_after(&ID_BLOCK.to_string(), &stations(&["KNYC"]))), vec![next.id]);
    // Survives a second restart too, with the replayed payload intact.
    drop(log);
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    let v = events(log.replay_after("3", &stations(&["KNYC"])));
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].data().unwrap()["id"], json!(next.id.to_string()));
    assert_eq!(v[0].sse_frame(), next.sse_frame(), "read back from disk, byte for byte");
    assert!(log.append("KNYC", "observation", json!({}), now).unwrap().id > next.id);
}

#[test]
fn events_older_than_retention_are_dropped_and_replay_from_them_is_expired() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    log.append("KNYC", "observation", json!({}), now - Duration::hours(30)).unwrap();
    log.append("KNYC", "observation", json!({}), now - Duration::hours(25)).unwrap();
    log.append("KNYC", "observation", json!({}), now - Duration::hours(2)).unwrap();
    log.append("KNYC", "observation", json!({}), now).unwrap();
    assert_eq!(log.len(), 2);
    assert!(matches!(log.replay_after("0", &stations(&["KNYC"])), Replay::Expired));
    assert!(matches!(log.replay_after("1", &stations(&["KNYC"])), Replay::Expired));
    assert_eq!(ids(log.replay_after("2", &stations(&["KNYC"]))), vec![3, 4]);
    drop(log);
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    assert_eq!(log.len(), 2);
    assert!(matches!(log.replay_after("1", &stations(&["KNYC"])), Replay::Expired));
    assert_eq!(ids(log.replay_after("2", &stations(&["KNYC"]))), vec![3, 4]);
}

#[test]
fn segments_rotate_and_expired_ones_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    // 48 hours of events, one per hour; rotation every 3 h (retention / 8).
    for h in (0..48).rev() {
        log.append("KNYC", "observation", json!({}), now - Duration::hours(h)).unwrap();
    }
    let files = segment_files(dir.path());
    // 16 three-hour segments were written (starting 47 h, 44 h, ... 2 h ago); only those
    // whose newest event is younger than 24 h survive: the 8 starting 23 h ago or later.
    assert_eq!(files.len(), 8, "{files:?}");
    assert_eq!(log.len(), 24);
    drop(log);
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    assert_eq!(log.len(), 24);
    assert_eq!(log.last_id(), ID_BLOCK, "reopen continues after the reserved block");
}

#[test]
fn torn_and_garbage_lines_are_skipped_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    {
        let log = EventLog::open(dir.path(), default_retention()).unwrap();
        log.append("KNYC", "observation", json!({"a": 1}), now).unwrap();
        log.append("KNYC", "observation", json!({"a": 2}), now).unwrap();
    }
    let file = dir.path().join(&segment_files(dir.path())[0]);
    let mut f = OpenOptions::new().append(true).open(&file).unwrap();
    f.write_all(b"\xff\x00garbage\n{\"id\":3,\"station\":\"KNYC\",\"na").unwrap();
    drop(f);
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    assert_eq!(ids(log.replay_after("0", &stations(&["KNYC"]))), vec![1, 2]);
    let next = log.append("KNYC", "observation", json!({}), now).unwrap();
    assert!(next.id > 2);
    // The new event went to a fresh segment, so it reads back after another reopen.
    drop(log);
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    assert_eq!(ids(log.replay_after("0", &stations(&["KNYC"]))), vec![1, 2, next.id]);
}

#[test]
fn lost_tail_after_a_crash_means_expired_not_silence() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    {
        let log = EventLog::open(dir.path(), default_retention()).unwrap();
        log.append("KNYC", "observation", json!({}), now).unwrap();
    }
    // Simulate ids 2..=5000 having been reserved (and some issued) before a power loss.
    fs::write(dir.path().join(NEXT_ID_FILE), "5000\n").unwrap();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    assert_eq!(ids(log.replay_after("1", &stations(&["KNYC"]))), Vec::<u64>::new());
    assert!(matches!(log.replay_after("42", &stations(&["KNYC"])), Replay::Expired));
    assert_eq!(log.last_id(), 5000);
    assert_eq!(ids(log.replay_after("5000", &stations(&["KNYC"]))), Vec::<u64>::new());
    assert!(matches!(log.replay_after("5001", &stations(&["KNYC"])), Replay::Unknown));
    assert_eq!(log.append("KNYC", "observation", json!({}), now).unwrap().id, 5001);
}

#[test]
fn a_lost_range_is_remembered_across_later_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    {
        let log = EventLog::open(dir.path(), default_retention()).unwrap();
        log.append("KNYC", "observation", json!({}), now).unwrap();
    }
    // A power loss after ids 2..=5000 were reserved (and some issued).
    fs::write(dir.path().join(NEXT_ID_FILE), "5000\n").unwrap();
    let second_run = {
        let log = EventLog::open(dir.path(), default_retention()).unwrap();
        log.append("KNYC", "observation", json!({}), now).unwrap().id
    };
    assert_eq!(second_run, 5001);
    // Two more restarts: the first run's lost ids must still resync, not replay from 5001 on.
    for _ in 0..2 {
        let log = EventLog::open(dir.path(), default_retention()).unwrap();
        assert!(matches!(log.replay_after("42", &stations(&["KNYC"])), Replay::Expired));
        assert_eq!(ids(log.replay_after("1", &stations(&["KNYC"]))), vec![5001]);
        assert_eq!(ids(log.replay_after("5000", &stations(&["KNYC"]))), vec![5001]);
        assert_eq!(ids(log.replay_after("5001", &stations(&["KNYC"]))), Vec::<u64>::new());
    }
}

#[test]
fn corrupt_reservation_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(NEXT_ID_FILE), "not a number").unwrap();
    let err = EventLog::open(dir.path(), default_retention()).unwrap_err();
    assert!(matches!(err, EventLogError::BadReservation { .. }), "{err}");
}

#[test]
fn sse_frame_is_encoded_once_in_field_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    let e = log.append("KNYC", "new_high", json!({"v": 1}), Utc::now()).unwrap();
    let frame = e.sse_frame();
    let text = std::str::from_utf8(&frame).unwrap();
    assert!(text.starts_with("event: new_high\nid: 1\ndata: {"), "{text}");
    assert!(text.ends_with("}\n\n"));
    assert_eq!(frame.as_ptr(), e.sse_frame().as_ptr(), "frame must be shared, not re-encoded");
}

/// Appends `count` events of about 1 KB, cycling through KNYC, KMDW and KAUS; returns
/// them as published.
fn fill(log: &EventLog, count: usize) -> Vec<Arc<Event>> {
    let pad = "x".repeat(1000);
    (0..count)
        .map(|n| {
            let station = ["KNYC", "KMDW", "KAUS"][n % 3];
            log.append(station, "observation", json!({"n": n, "pad": pad}), Utc::now()).unwrap()
        })
        .collect()
}

/// Frames and payloads of a replay equal the published ones, in the same order.
fn assert_same_events(replayed: &[Arc<Event>], published: &[&Arc<Event>]) {
    assert_eq!(replayed.iter().map(|e| e.id).collect::<Vec<_>>(), published.iter().map(|e| e.id).collect::<Vec<_>>());
    for (r, p) in replayed.iter().zip(published) {
        assert_eq!(r.sse_frame(), p.sse_frame(), "event {}", p.id);
        assert_eq!((&*r.station, &*r.name), (&*p.station, &*p.name));
        assert_eq!(r.data().unwrap(), p.data().unwrap());
    }
}

#[test]
fn index_entries_stay_small() {
    // The index holds one entry per retained event: keep it a few words.
    assert!(size_of::<Entry>() <= 40, "{}", size_of::<Entry>());
}

#[test]
fn memory_stays_within_the_budget_and_replay_reads_the_rest_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let budget = 64 * 1024;
    let options = EventLogOptions { memory_budget: budget, ..EventLogOptions::default() };
    let log = EventLog::open_with(dir.path(), options).unwrap();
    let mut published = Vec::new();
    for _ in 0..6 {
        published.extend(fill(&log, 100));
        let stats = log.stats();
        assert!(stats.memory_bytes <= budget, "{stats:?}");
    }
    let stats = log.stats();
    assert_eq!(stats.retained, 600);
    // About 1 KB per frame: a few dozen fit, the rest is on disk only.
    assert!(stats.cached > 10 && stats.cached < 100, "{stats:?}");
    let knyc: Vec<&Arc<Event>> = published.iter().filter(|e| &*e.station == "KNYC").collect();
    assert_same_events(&events(log.replay_after("0", &stations(&["KNYC"]))), &knyc);
    // The cached tail is served from memory, the same allocation the hub got.
    let tail = events(log.replay_after(&published[598].id.to_string(), &stations(&["KNYC", "KMDW", "KAUS"])));
    assert_eq!(tail.len(), 1);
    assert_eq!(tail[0].sse_frame().as_ptr(), published[599].sse_frame().as_ptr());
    assert!(log.replay_page_cached(&published[598].id.to_string(), &stations(&["KNYC"]), usize::MAX).is_some());
    assert!(log.replay_page_cached("0", &stations(&["KNYC"]), usize::MAX).is_none(), "needs the disk");

    // Page by page: the same events, each page near the size asked for.
    let mut paged = Vec::new();
    let mut after = "0".to_string();
    loop {
        match log.replay_page(&after, &stations(&["KNYC"]), 8 * 1024) {
            Replay::Events { events, more } => {
                assert!(events.len() <= 8, "{} events for 8 KiB", events.len());
                paged.extend(events);
                if !more {
                    break;
                }
                after = paged.last().unwrap().id.to_string();
            }
            other => panic!("{other:?}"),
        }
    }
    assert_same_events(&paged, &knyc);

    // A restart indexes the lines without keeping their payloads.
    drop(log);
    let log = EventLog::open_with(dir.path(), options).unwrap();
    let stats = log.stats();
    assert_eq!((stats.retained, stats.cached), (600, 0));
    assert!(stats.memory_bytes <= 2 * 600 * size_of::<Entry>(), "{stats:?}");
    let all: Vec<&Arc<Event>> = published.iter().collect();
    assert_same_events(&events(log.replay_after("0", &stations(&["KNYC", "KMDW", "KAUS"]))), &all);
    let next = log.append("KNYC", "observation", json!({}), Utc::now()).unwrap();
    assert!(next.id > published[599].id);
}

#[test]
fn an_index_over_its_share_of_the_budget_expires_the_oldest_events() {
    let dir = tempfile::tempdir().unwrap();
    let options = EventLogOptions { memory_budget: 8 * 1024, ..EventLogOptions::default() };
    let max_entries = 8 * 1024 / 2 / size_of::<Entry>();
    let log = EventLog::open_with(dir.path(), options).unwrap();
    let published = fill(&log, 300);
    assert_eq!(log.len(), max_entries);
    assert!(log.stats().memory_bytes <= 8 * 1024, "{:?}", log.stats());
    let first_kept = published.len() - max_entries;
    let all = stations(&["KNYC", "KMDW", "KAUS"]);
    assert!(matches!(log.replay_after("0", &all), Replay::Expired));
    assert!(matches!(log.replay_after(&published[first_kept - 2].id.to_string(), &all), Replay::Expired));
    let kept: Vec<&Arc<Event>> = published[first_kept..].iter().collect();
    assert_same_events(&events(log.replay_after(&published[first_kept - 1].id.to_string(), &all)), &kept);
    drop(log);
    let log = EventLog::open_with(dir.path(), options).unwrap();
    assert_eq!(log.len(), max_entries);
    assert!(matches!(log.replay_after("0", &all), Replay::Expired));
    assert_same_events(&events(log.replay_after(&published[first_kept - 1].id.to_string(), &all)), &kept);
}

#[test]
fn a_segment_lost_under_the_log_means_expired_not_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let options = EventLogOptions { memory_budget: 16 * 1024, ..EventLogOptions::default() };
    let log = EventLog::open_with(dir.path(), options).unwrap();
    fill(&log, 30);
    assert!(log.stats().cached < 30);
    for name in segment_files(dir.path()) {
        fs::remove_file(dir.path().join(name)).unwrap();
    }
    assert!(matches!(log.replay_after("0", &stations(&["KNYC"])), Replay::Expired));
}

#[test]
fn oversized_events_are_refused_without_using_an_id() {
    let dir = tempfile::tempdir().unwrap();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    let huge = "x".repeat(MAX_EVENT_BYTES);
    let err = log.append("KNYC", "observation", json!({"pad": huge}), Utc::now()).unwrap_err();
    assert!(matches!(err, EventLogError::TooLarge { .. }), "{err}");
    assert_eq!(log.append("KNYC", "observation", json!({}), Utc::now()).unwrap().id, 1);
}

#[test]
fn lines_written_by_the_previous_format_are_read_back() {
    // Segments written before the index existed: serde's field order, `data` last.
    let dir = tempfile::tempdir().unwrap();
    let at = Utc::now();
    let at = serde_json::to_string(&at).unwrap();
    let text = format!(
        "{{\"id\":7,\"station\":\"KNYC\",\"name\":\"new_high\",\"at\":{at},\"data\":{{\"id\":\"7\",\"v\":1}}}}\n"
    );
    fs::write(dir.path().join(format!("{SEGMENT_PREFIX}{:020}{SEGMENT_SUFFIX}", 7)), text).unwrap();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    let v = events(log.replay_after("6", &stations(&["KNYC"])));
    assert_eq!(v.len(), 1);
    let frame = v[0].sse_frame();
    assert_eq!(std::str::from_utf8(&frame).unwrap(), "event: new_high\nid: 7\ndata: {\"id\":\"7\",\"v\":1}\n\n");
}

/// A write that fails halfway (ENOSPC) on the first line of a new segment: the file
/// is cut back and stays the active segment, the id is not issued, and the next append
/// writes a clean line there. Before, the segment was retired with no event, recreated
/// under the same name (appending after the torn bytes) and then deleted by `prune` as
/// an expired segment while it was the active file.
#[test]
fn a_failed_first_write_neither_tears_nor_deletes_the_active_segment() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    log.inner.lock().fault = Some(WriteFault { torn: 20, truncate_fails: false });
    let err = log.append("KNYC", "observation", json!({"n": 0}), now).unwrap_err();
    assert!(matches!(err, EventLogError::Io { action: "write", .. }), "{err}");
    assert_eq!(log.last_id(), 0, "a failed append issues no id");
    let a = log.append("KNYC", "observation", json!({"n": 1}), now).unwrap();
    let b = log.append("KNYC", "observation", json!({"n": 2}), now).unwrap();
    assert_eq!((a.id, b.id), (1, 2));
    assert_eq!(segment_files(dir.path()).len(), 1, "the active segment is still on disk");
    // A failure in the middle of a segment: the same, the torn bytes are cut.
    log.inner.lock().fault = Some(WriteFault { torn: 7, truncate_fails: false });
    assert!(log.append("KNYC", "observation", json!({"n": 3}), now).is_err());
    let c = log.append("KNYC", "observation", json!({"n": 4}), now).unwrap();
    assert_eq!(c.id, 3);
    assert_eq!(ids(log.replay_after("0", &stations(&["KNYC"]))), vec![1, 2, 3]);
    drop(log);
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    let back = events(log.replay_after("0", &stations(&["KNYC"])));
    assert_eq!(back.iter().map(|e| e.data().unwrap()["n"].as_i64()).collect::<Vec<_>>(), [Some(1), Some(2), Some(4)]);
}

/// When the torn bytes cannot be cut, the segment is retired, its id skipped, and the
/// next segment is a new file: nothing is appended after a torn line, nothing live is
/// deleted.
#[test]
fn a_torn_write_that_cannot_be_cut_retires_the_segment_under_its_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    let a = log.append("KNYC", "observation", json!({"n": 1}), now).unwrap();
    log.inner.lock().fault = Some(WriteFault { torn: 20, truncate_fails: true });
    assert!(log.append("KNYC", "observation", json!({"n": 2}), now).is_err());
    let b = log.append("KNYC", "observation", json!({"n": 3}), now).unwrap();
    assert!(b.id > a.id + 1, "the torn line's id is skipped: {}", b.id);
    assert_eq!(segment_files(dir.path()).len(), 2);
    // The first line of a fresh segment, torn and not cut: retired and removed (it has
    // no event), and the next append gets a file of its own.
    drop(log);
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    log.inner.lock().fault = Some(WriteFault { torn: 20, truncate_fails: true });
    assert!(log.append("KNYC", "observation", json!({"n": 4}), now).is_err());
    let c = log.append("KNYC", "observation", json!({"n": 5}), now).unwrap();
    let d = log.append("KNYC", "observation", json!({"n": 6}), now).unwrap();
    drop(log);
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    assert_eq!(ids(log.replay_after("0", &stations(&["KNYC"]))), vec![a.id, b.id, c.id, d.id]);
}

/// A segment that cannot be read (here a directory where a file should be: every read
/// fails) no longer stops the log from opening. Its ids, and the ones before them,
/// replay as Expired; the segments after it replay as before.
#[test]
fn an_unreadable_segment_is_skipped_and_its_ids_expire() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    {
        let log = EventLog::open(dir.path(), default_retention()).unwrap();
        for _ in 0..3 {
            log.append("KNYC", "observation", json!({}), now).unwrap();
        }
    }
    let after: Vec<u64> = {
        let log = EventLog::open(dir.path(), default_retention()).unwrap();
        (0..3).map(|_| log.append("KNYC", "observation", json!({}), now).unwrap().id).collect()
    };
    assert_eq!(after[0], ID_BLOCK + 1);
    fs::create_dir(dir.path().join(format!("{SEGMENT_PREFIX}{:020}{SEGMENT_SUFFIX}", 500))).unwrap();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    let knyc = stations(&["KNYC"]);
    assert!(matches!(log.replay_after("0", &knyc), Replay::Expired));
    assert!(matches!(log.replay_after("3", &knyc), Replay::Expired));
    assert!(matches!(log.replay_after("700", &knyc), Replay::Expired));
    assert_eq!(ids(log.replay_after(&ID_BLOCK.to_string(), &knyc)), after);
    drop(log);

    // The newest segment unreadable: everything up to the reservation is expired and a
    // fresh client starts after it.
    let dir = tempfile::tempdir().unwrap();
    {
        let log = EventLog::open(dir.path(), default_retention()).unwrap();
        log.append("KNYC", "observation", json!({}), now).unwrap();
    }
    fs::create_dir(dir.path().join(format!("{SEGMENT_PREFIX}{:020}{SEGMENT_SUFFIX}", 2))).unwrap();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    assert!(matches!(log.replay_after("1", &knyc), Replay::Expired));
    assert_eq!(log.last_id(), ID_BLOCK);
    let next = log.append("KNYC", "observation", json!({}), now).unwrap();
    assert_eq!(ids(log.replay_after(&ID_BLOCK.to_string(), &knyc)), vec![next.id]);
}

/// A line longer than an event may be (a garbage file without line ends) is read
/// through a bounded buffer and skipped; the lines after it are indexed at their offsets.
#[test]
fn an_overlong_line_is_skipped_without_reading_it_into_memory() {
    let mut input = vec![b'x'; MAX_EVENT_BYTES + 100];
    input.extend_from_slice(b"\nab\n");
    let mut reader = BufReader::with_capacity(64 * 1024, &input[..]);
    let mut buf = Vec::new();
    let limit = 1024;
    assert_eq!(read_line_limited(&mut reader, &mut buf, limit).unwrap(), MAX_EVENT_BYTES as u64 + 101);
    assert_eq!(buf.len(), limit);
    assert!(buf.capacity() < 4 * limit, "{}", buf.capacity());
    buf.clear();
    assert_eq!(read_line_limited(&mut reader, &mut buf, limit).unwrap(), 3);
    assert_eq!(buf, b"ab\n");
    buf.clear();
    assert_eq!(read_line_limited(&mut reader, &mut buf, limit).unwrap(), 0);

    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let good = {
        let log = EventLog::open(dir.path(), default_retention()).unwrap();
        log.append("KNYC", "observation", json!({"v": 1}), now).unwrap()
    };
    let path = dir.path().join(segment_files(dir.path())[0].clone());
    let line = fs::read(&path).unwrap();
    let mut text = vec![b'y'; MAX_EVENT_BYTES + 10];
    text.push(b'\n');
    text.extend_from_slice(&line);
    fs::write(&path, text).unwrap();
    let log = EventLog::open(dir.path(), default_retention()).unwrap();
    assert_same_events(&events(log.replay_after("0", &stations(&["KNYC"]))), &[&good]);
}
