//! The WAL's tests: round trips, damage of every kind, trimming, concurrency and kill -9.

use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;

use super::record::MAGIC;
use super::segment::segment_name;
use super::*;

fn tiny(segment_bytes: u64) -> WalOptions {
    WalOptions { segment_bytes }
}

fn reopen(dir: &Path) -> (Wal, Vec<WalEntry>) {
    Wal::open(dir).expect("reopen")
}

fn segment_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("wal-"))
        .collect();
    names.sort();
    names
}

fn only_segment(dir: &Path) -> PathBuf {
    let names = segment_files(dir);
    assert_eq!(names.len(), 1, "{names:?}");
    dir.join(&names[0])
}

fn seqs(entries: &[WalEntry]) -> Vec<u64> {
    entries.iter().map(|e| e.seq).collect()
}

/// Appends `n` records "metar" / `{"i":k}` / 50 bytes and returns the record lengths.
fn append_n(wal: &Wal, n: u64) -> Vec<usize> {
    (1..=n)
        .map(|k| {
            let options = format!("{{\"i\":{k}}}");
            let payload = vec![b'a' + (k % 26) as u8; 50];
            wal.append("metar", &options, &payload).unwrap();
            34 + 5 + options.len() + 50
        })
        .collect()
}

#[test]
fn round_trip_keeps_every_field_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let before = Utc::now();
    let binary: Vec<u8> = (0..=255u8).chain([0, 0, 0xff]).collect();
    {
        let (wal, entries) = Wal::open(dir.path()).unwrap();
        assert!(entries.is_empty());
        assert_eq!(wal.append("metar", "{}", b"KJFK 011251Z").unwrap(), 1);
        assert_eq!(wal.append("onemin", r#"{"month":"2024-07"}"#, &binary).unwrap(), 2);
        assert_eq!(wal.append("cli", "{}", b"").unwrap(), 3);
        assert_eq!(wal.last_seq(), 3);
        // 34 + format + options + payload: 34+5+2+12, 34+6+19+259, 34+3+2+0.
        assert_eq!(wal.pending(), Pending { records: 3, bytes: 53 + 318 + 39 });
        assert_eq!(fs::metadata(only_segment(dir.path())).unwrap().len(), 53 + 318 + 39);
    }
    let (wal, entries) = reopen(dir.path());
    assert!(wal.replay_issues().is_empty());
    assert_eq!(seqs(&entries), [1, 2, 3]);
    assert_eq!(entries[0].format, "metar");
    assert_eq!(entries[0].options_json, "{}");
    assert_eq!(entries[0].payload, b"KJFK 011251Z");
    assert_eq!(entries[1].format, "onemin");
    assert_eq!(entries[1].options_json, r#"{"month":"2024-07"}"#);
    assert_eq!(entries[1].payload, binary);
    assert_eq!(entries[2].format, "cli");
    assert!(entries[2].payload.is_empty());
    let after = Utc::now();
    for e in &entries {
        assert!(e.timestamp >= before - chrono::Duration::seconds(1) && e.timestamp <= after);
    }
    assert_eq!(wal.pending(), Pending { records: 3, bytes: 410 });
    assert_eq!(wal.append("dsm", "{}", b"x").unwrap(), 4);
}

#[test]
fn torn_tail_is_truncated_and_earlier_records_survive() {
    let dir = tempfile::tempdir().unwrap();
    let lens = {
        let (wal, _) = Wal::open(dir.path()).unwrap();
        append_n(&wal, 5)
    };
    let path = only_segment(dir.path());
    let full: usize = lens.iter().sum();
    let four: usize = lens[..4].iter().sum();
    // Cut record 5 in its payload.
    OpenOptions::new().write(true).open(&path).unwrap().set_len(full as u64 - 7).unwrap();

    let (wal, entries) = reopen(dir.path());
    assert_eq!(seqs(&entries), [1, 2, 3, 4]);
    let issues = wal.replay_issues();
    assert_eq!(issues.len(), 1);
    assert!(issues[0].torn_tail);
    assert_eq!(issues[0].offset, four as u64);
    assert_eq!(issues[0].len, (lens[4] - 7) as u64);
    assert_eq!(fs::metadata(&path).unwrap().len(), four as u64);
    // Appends resume right after record 4; seq 5 was never durable, so it is reused.
    assert_eq!(wal.append("metar", "{}", b"again").unwrap(), 5);
    drop(wal);
    let (wal, entries) = reopen(dir.path());
    assert!(wal.replay_issues().is_empty());
    assert_eq!(seqs(&entries), [1, 2, 3, 4, 5]);
    assert_eq!(entries[4].payload, b"again");
}

#[test]
fn every_cut_point_keeps_exactly_the_complete_records() {
    let dir = tempfile::tempdir().unwrap();
    let lens = {
        let (wal, _) = Wal::open(dir.path()).unwrap();
        append_n(&wal, 3)
    };
    let path = only_segment(dir.path());
    let original = fs::read(&path).unwrap();
    let ends = [lens[0], lens[0] + lens[1], lens[0] + lens[1] + lens[2]];
    for cut in 0..=original.len() {
        fs::write(&path, &original[..cut]).unwrap();
        let (wal, entries) = reopen(dir.path());
        let complete = ends.iter().filter(|&&end| end <= cut).count();
        assert_eq!(entries.len(), complete, "cut at {cut}");
        let torn = !ends.contains(&cut) && cut != 0;
        assert_eq!(wal.replay_issues().len(), usize::from(torn), "cut at {cut}");
    }
}

#[test]
fn garbage_tail_is_dropped_without_panic() {
    let dir = tempfile::tempdir().unwrap();
    let lens = {
        let (wal, _) = Wal::open(dir.path()).unwrap();
        append_n(&wal, 3)
    };
    let path = only_segment(dir.path());
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    // Zeros (an extended but unwritten tail), a fake magic with a huge length, and junk.
    file.write_all(&[0u8; 100]).unwrap();
    file.write_all(b"WXW1\xff\xff\xff\x7f\0\0\0\0junk").unwrap();
    drop(file);

    let (wal, entries) = reopen(dir.path());
    assert_eq!(seqs(&entries), [1, 2, 3]);
    assert_eq!(wal.replay_issues().len(), 1);
    assert!(wal.replay_issues()[0].torn_tail);
    assert_eq!(wal.replay_issues()[0].len, 100 + 16);
    let total: usize = lens.iter().sum();
    assert_eq!(fs::metadata(&path).unwrap().len(), total as u64);
    assert_eq!(wal.append("metar", "{}", b"next").unwrap(), 4);
    drop(wal);
    let (wal, entries) = reopen(dir.path());
    assert!(wal.replay_issues().is_empty());
    assert_eq!(seqs(&entries), [1, 2, 3, 4]);
}

#[test]
fn flipped_bit_mid_file_skips_only_that_record() {
    let dir = tempfile::tempdir().unwrap();
    let lens = {
        let (wal, _) = Wal::open(dir.path()).unwrap();
        append_n(&wal, 5)
    };
    let path = only_segment(dir.path());
    let original = fs::read(&path).unwrap();
    let third = lens[0] + lens[1];
    // A payload bit, a length bit and a magic bit of record 3 each lose only record 3.
    for (what, at) in [("payload", third + lens[2] - 3), ("length", third + 5), ("magic", third)] {
        let mut damaged = original.clone();
        damaged[at] ^= 0x10;
        fs::write(&path, &damaged).unwrap();
        let (wal, entries) = reopen(dir.path());
        assert_eq!(seqs(&entries), [1, 2, 4, 5], "{what}");
        let issues = wal.replay_issues();
        assert_eq!(issues.len(), 1, "{what}");
        assert_eq!(issues[0].offset, third as u64, "{what}");
        assert_eq!(issues[0].len, lens[2] as u64, "{what}");
        assert!(!issues[0].torn_tail, "{what}");
        assert_eq!(issues[0].segment, path, "{what}");
        // Damage in the middle is kept on disk for inspection, not truncated.
        assert_eq!(fs::metadata(&path).unwrap().len(), original.len() as u64);
    }
    let mut damaged = original.clone();
    damaged[third + lens[2] - 3] ^= 1;
    fs::write(&path, &damaged).unwrap();
    let (wal, _) = reopen(dir.path());
    assert!(wal.replay_issues()[0].reason.contains("CRC mismatch"));
}

#[test]
fn random_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(segment_name(1));
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..50 {
        let len = (round * 37) % 700;
        let mut bytes = Vec::with_capacity(len);
        for _ in 0..len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            bytes.push(state as u8);
        }
        if round % 3 == 0 && len > 8 {
            bytes[len / 2..len / 2 + 4].copy_from_slice(&MAGIC);
        }
        fs::write(&path, &bytes).unwrap();
        let (wal, entries) = reopen(dir.path());
        assert!(entries.is_empty());
        assert_eq!(wal.replay_issues().len(), usize::from(len > 0));
        assert_eq!(fs::metadata(&path).unwrap().len(), 0);
    }
}

#[test]
fn segments_roll_after_the_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    // Each record is 34 + 5 + 2 + 200 = 241 bytes: a segment fills after 5 (1205 bytes).
    {
        let (wal, _) = Wal::open_with(dir.path(), tiny(1000)).unwrap();
        for _ in 0..12 {
            wal.append("metar", "{}", &[7u8; 200]).unwrap();
        }
    }
    assert_eq!(segment_files(dir.path()), [segment_name(1), segment_name(6), segment_name(11)]);
    assert_eq!(segment_name(6), "wal-00000000000000000006.log");
    let (wal, entries) = Wal::open_with(dir.path(), tiny(1000)).unwrap();
    assert_eq!(seqs(&entries), (1..=12).collect::<Vec<_>>());
    // The reopened log keeps appending to the last, unfilled segment.
    assert_eq!(wal.append("metar", "{}", &[7u8; 200]).unwrap(), 13);
    assert_eq!(segment_files(dir.path()).len(), 3);
    assert_eq!(fs::metadata(dir.path().join(segment_name(11))).unwrap().len(), 3 * 241);
}

#[test]
fn release_trims_only_a_released_prefix() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _) = Wal::open_with(dir.path(), tiny(1)).unwrap();
        append_n(&wal, 6);
        // 2, 3 and 5 are stored, 1 is not yet: nothing may be trimmed.
        assert_eq!(wal.release([2, 3, 5]).unwrap(), 0);
        assert_eq!(wal.pending().records, 6);
        // 1 arrives: the run 1..=3 goes, 4 holds 5 back.
        assert_eq!(wal.release([1]).unwrap(), 3);
        assert_eq!(wal.pending().records, 3);
        // Unknown, repeated and trimmed seqs change nothing.
        assert_eq!(wal.release([1, 2, 99]).unwrap(), 3);
        assert_eq!(wal.release([4]).unwrap(), 5);
    }
    let (_wal, entries) = reopen(dir.path());
    assert_eq!(seqs(&entries), [6], "only the unreleased record is replayed");
}

#[test]
fn trim_deletes_whole_segments_and_checkpoint_hides_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    {
        // segment_bytes 1: every (single-threaded) append starts its own segment.
        let (wal, _) = Wal::open_with(dir.path(), tiny(1)).unwrap();
        append_n(&wal, 10);
        assert_eq!(segment_files(dir.path()).len(), 10);
        wal.trim_through(4).unwrap();
        assert_eq!(segment_files(dir.path()), (5..=10).map(segment_name).collect::<Vec<_>>());
        assert_eq!(fs::read_to_string(dir.path().join("checkpoint")).unwrap(), "4\n");
        assert_eq!(wal.pending().records, 6);
        assert_eq!(wal.pending().bytes, 5 * (34 + 5 + 7 + 50) + (34 + 5 + 8 + 50));
        // Going backwards or repeating is a no-op; going past the end is refused.
        wal.trim_through(2).unwrap();
        assert_eq!(fs::read_to_string(dir.path().join("checkpoint")).unwrap(), "4\n");
        assert!(matches!(wal.trim_through(11), Err(WalError::TrimBeyondEnd { requested: 11, last: 10 })));
    }
    let (wal, entries) = Wal::open_with(dir.path(), tiny(1)).unwrap();
    assert_eq!(seqs(&entries), [5, 6, 7, 8, 9, 10]);
    // Trim everything: the last segment stays (it is appended to) but is hidden.
    wal.trim_through(10).unwrap();
    assert_eq!(segment_files(dir.path()), [segment_name(10)]);
    assert_eq!(wal.pending(), Pending::default());
    drop(wal);
    let (wal, entries) = Wal::open_with(dir.path(), tiny(1)).unwrap();
    assert!(entries.is_empty());
    assert_eq!(wal.last_seq(), 10);
    assert_eq!(wal.append("metar", "{}", b"after").unwrap(), 11);
}

#[test]
fn checkpoint_hides_trimmed_part_of_the_active_segment() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _) = Wal::open(dir.path()).unwrap();
        append_n(&wal, 5);
        wal.trim_through(3).unwrap();
        assert_eq!(wal.pending().records, 2);
    }
    assert_eq!(segment_files(dir.path()).len(), 1);
    let (wal, entries) = reopen(dir.path());
    assert_eq!(seqs(&entries), [4, 5]);
    assert_eq!(wal.pending().records, 2);
}

#[test]
fn interrupted_trim_is_finished_at_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _) = Wal::open_with(dir.path(), tiny(1)).unwrap();
        append_n(&wal, 4);
    }
    // As if the process died after persisting the checkpoint but before deleting.
    fs::write(dir.path().join("checkpoint"), "2\n").unwrap();
    fs::write(dir.path().join("checkpoint.tmp"), "3").unwrap();
    let (_wal, entries) = reopen(dir.path());
    assert_eq!(seqs(&entries), [3, 4]);
    assert_eq!(segment_files(dir.path()), [segment_name(3), segment_name(4)]);
    assert!(!dir.path().join("checkpoint.tmp").exists());
}

#[test]
fn second_open_of_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(dir.path()).unwrap();
    assert!(matches!(Wal::open(dir.path()), Err(WalError::Locked(_))));
    drop(wal);
    assert!(Wal::open(dir.path()).is_ok());
}

#[test]
fn oversized_inputs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(dir.path()).unwrap();
    let long = "x".repeat(70_000);
    assert!(matches!(wal.append(&long, "{}", b""), Err(WalError::FormatTooLong(70_000))));
    assert_eq!(wal.last_seq(), 0);
    assert_eq!(wal.append("metar", "{}", b"ok").unwrap(), 1);
}

/// A failed write (ENOSPC from /dev/full standing in for the segment) fails only the
/// appends of that batch; the log moves to a new segment and keeps working.
#[cfg(target_os = "linux")]
#[test]
fn failed_write_is_reported_and_the_log_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(dir.path()).unwrap();
    let trap = dir.path().join(segment_name(1));
    std::os::unix::fs::symlink("/dev/full", &trap).unwrap();
    let err = wal.append("metar", "{}", b"lost").unwrap_err();
    assert!(matches!(err, WalError::WriteFailed(_)), "{err}");
    assert_eq!(wal.pending().records, 0);
    assert_eq!(wal.append("metar", "{}", b"kept").unwrap(), 2);
    assert_eq!(wal.pending().records, 1);
    assert_eq!(wal.last_seq(), 2);
    drop(wal);
    let (_wal, entries) = reopen(dir.path());
    assert_eq!(seqs(&entries), [2]);
    assert_eq!(entries[0].payload, b"kept");
    fs::remove_file(&trap).unwrap();
}

#[test]
fn concurrent_appends_are_replayed_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut acked = Vec::new();
    {
        let (wal, _) = Wal::open_with(dir.path(), tiny(64 << 10)).unwrap();
        let wal = Arc::new(wal);
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let wal = Arc::clone(&wal);
                std::thread::spawn(move || {
                    (0..500)
                        .map(|i| {
                            let payload = format!("t{t}-i{i}");
                            (wal.append("metar", "{}", payload.as_bytes()).unwrap(), payload)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            acked.extend(h.join().unwrap());
        }
        assert_eq!(wal.last_seq(), 4000);
        assert_eq!(wal.pending().records, 4000);
        assert!(wal.commits() <= 4000);
    }
    let unique: HashSet<u64> = acked.iter().map(|(s, _)| *s).collect();
    assert_eq!(unique.len(), 4000);
    let (wal, entries) = Wal::open_with(dir.path(), tiny(64 << 10)).unwrap();
    assert!(wal.replay_issues().is_empty());
    assert_eq!(seqs(&entries), (1..=4000).collect::<Vec<_>>());
    for (seq, payload) in &acked {
        let entry = &entries[(*seq - 1) as usize];
        assert_eq!(entry.payload, payload.as_bytes(), "seq {seq}");
    }
    assert!(segment_files(dir.path()).len() > 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_async_from_many_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(dir.path()).unwrap();
    let wal = Arc::new(wal);
    let tasks: Vec<_> = (0..16)
        .map(|t| {
            let wal = Arc::clone(&wal);
            tokio::spawn(async move {
                let mut got = Vec::new();
                for i in 0..20 {
                    let payload = format!("{t}:{i}").into_bytes();
                    got.push(wal.append_async(chrono::Utc::now(), "metar".into(), "{}".into(), payload).await);
                }
                got
            })
        })
        .collect();
    let mut all = HashSet::new();
    for task in tasks {
        for seq in task.await.unwrap() {
            assert!(all.insert(seq.unwrap()));
        }
    }
    assert_eq!(all.len(), 320);
    assert_eq!(wal.last_seq(), 320);
}

const CRASH_CHILD_ENV: &str = "WXLAKE_WAL_CRASH_CHILD_DIR";

/// Body of the child process of `kill9_keeps_every_acknowledged_record`: appends from 4
/// threads and prints "ack <seq>" after each append returns, until killed (or 30 s).
#[test]
#[ignore = "child process of kill9_keeps_every_acknowledged_record"]
fn crash_child() {
    let Some(dir) = std::env::var_os(CRASH_CHILD_ENV) else {
        return;
    };
    let (wal, _) = Wal::open_with(Path::new(&dir), tiny(256 << 10)).unwrap();
    let wal = Arc::new(wal);
    let started = Instant::now();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                let payload = vec![b'0' + t; 300];
                while started.elapsed() < Duration::from_secs(30) {
                    let seq = wal.append("metar", "{}", &payload).unwrap();
                    println!("ack {seq}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn kill9_keeps_every_acknowledged_record() {
    let dir = tempfile::tempdir().unwrap();
    let this_module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &format!("{this_module}::crash_child")])
        .args(["--ignored", "--nocapture", "--test-threads=1"])
        .env(CRASH_CHILD_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (first_tx, first_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut acked = Vec::new();
        let mut reader = BufReader::new(stdout);
        let mut line = Vec::new();
        // Only newline-terminated lines count: a line cut by the kill is not an ack.
        while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
            let text = String::from_utf8_lossy(&line);
            if let Some(seq) = text.strip_suffix('\n').and_then(|l| l.strip_prefix("ack ")) {
                acked.push(seq.parse::<u64>().unwrap());
                if acked.len() == 1 {
                    let _ = first_tx.send(());
                }
            }
            line.clear();
        }
        acked
    });
    let started = first_rx.recv_timeout(Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    let acked = reader.join().unwrap();
    assert!(started.is_ok(), "child never acknowledged an append");
    assert!(acked.len() >= 10, "only {} acks", acked.len());

    let (wal, entries) = Wal::open(dir.path()).unwrap();
    let replayed: HashSet<u64> = entries.iter().map(|e| e.seq).collect();
    assert_eq!(replayed.len(), entries.len(), "a seq replayed twice");
    for seq in &acked {
        assert!(replayed.contains(seq), "acknowledged seq {seq} lost");
    }
    assert!(entries.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(entries.iter().all(|e| e.format == "metar" && e.payload.len() == 300));
    assert!(wal.replay_issues().iter().all(|i| i.torn_tail));
}
