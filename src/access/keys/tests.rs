//! Tests of the key store: secrets, tiers, revocation, reloads across processes.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use super::record::{parse_digest, sha256, to_hex};
use super::*;

fn store(dir: &Path) -> KeyStore {
    KeyStore::open(dir).expect("open key store")
}

#[test]
fn sha256_matches_the_fips_180_2_test_vector() {
    // FIPS 180-2, appendix B.1: SHA-256("abc").
    assert_eq!(to_hex(&sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    let d = parse_digest("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD").unwrap();
    assert_eq!(d, sha256("abc"));
    assert!(parse_digest("ba78").is_none());
    assert!(parse_digest(&"g".repeat(64)).is_none());
    assert!(parse_digest(&"é".repeat(32)).is_none());
}

#[test]
fn tiers_parse_case_insensitively_and_serialize_lowercase() {
    assert_eq!("Professional".parse::<Tier>().unwrap(), Tier::Professional);
    assert_eq!("DEVELOPER".parse::<Tier>().unwrap(), Tier::Developer);
    assert_eq!(" enterprise ".parse::<Tier>().unwrap(), Tier::Enterprise);
    assert_eq!("testing".parse::<Tier>().unwrap(), Tier::Testing);
    assert!(matches!("gold".parse::<Tier>(), Err(KeyError::UnknownTier(t)) if t == "gold"));
    assert!("".parse::<Tier>().is_err());
    assert_eq!(serde_json::to_string(&Tier::Enterprise).unwrap(), "\"enterprise\"");
    assert_eq!(serde_json::from_str::<Tier>("\"Enterprise\"").unwrap(), Tier::Enterprise);
    assert!(serde_json::from_str::<Tier>("\"platinum\"").is_err());
    assert!(Tier::Developer.has_premium_endpoints() && Tier::Enterprise.has_premium_endpoints());
    assert!(!Tier::Professional.has_premium_endpoints() && !Tier::Testing.has_premium_endpoints());
}

#[test]
fn create_returns_a_secret_that_authenticates() {
    let dir = tempfile::tempdir().unwrap();
    let keys = store(dir.path());
    let (rec, secret) = keys.create(Tier::Developer, "alice", false, true).unwrap();
    assert!(secret.starts_with("wx_"));
    assert_eq!(secret.len(), 43);
    assert!(secret[3..].chars().all(|c| c.is_ascii_alphanumeric()));
    assert!(rec.id.starts_with("k_") && rec.id.len() == 10);
    assert!(rec.id[2..].chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(rec.prefix, &secret[..8]);
    assert_eq!(rec.hash, to_hex(&sha256(&secret)));
    assert_eq!((rec.tier, rec.user.as_str(), rec.admin, rec.stream), (Tier::Developer, "alice", false, true));
    let auth = keys.authenticate(&secret).expect("fresh key authenticates");
    assert_eq!(*auth, rec);
    assert!(keys.authenticate("").is_none());
    assert!(keys.authenticate("wx_nope").is_none());
    assert!(keys.authenticate(&secret[..42]).is_none());
    assert!(keys.authenticate(&format!("{secret} ")).is_none());
    assert!(keys.authenticate(&"x".repeat(10_000)).is_none());
}

#[test]
fn two_keys_get_distinct_secrets_ids_and_list_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let keys = store(dir.path());
    let (a, sa) = keys.create(Tier::Professional, "a", false, false).unwrap();
    let (b, sb) = keys.create(Tier::Enterprise, "b", true, false).unwrap();
    assert_ne!(sa, sb);
    assert_ne!(a.id, b.id);
    assert_eq!(keys.list(), vec![a.clone(), b.clone()]);
    assert_eq!(keys.authenticate(&sb).unwrap().id, b.id);
    assert_eq!(keys.authenticate(&sa).unwrap().id, a.id);
}

#[test]
fn invalid_users_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let keys = store(dir.path());
    assert!(matches!(keys.create(Tier::Testing, "  ", false, false), Err(KeyError::InvalidUser(_))));
    assert!(matches!(keys.create(Tier::Testing, "a\nb", false, false), Err(KeyError::InvalidUser(_))));
    assert!(matches!(keys.create(Tier::Testing, &"u".repeat(129), false, false), Err(KeyError::InvalidUser(_))));
    assert!(keys.list().is_empty());
    assert!(!keys.path().exists(), "a refused create writes nothing");
}

#[test]
fn revoke_by_id_keeps_the_record_and_stops_authentication() {
    let dir = tempfile::tempdir().unwrap();
    let keys = store(dir.path());
    let (rec, secret) = keys.create(Tier::Professional, "bob", false, false).unwrap();
    let revoked = keys.revoke(&rec.id).unwrap();
    assert_eq!(revoked.id, rec.id);
    let at = revoked.revoked_at.expect("revocation time set");
    assert!(keys.authenticate(&secret).is_none());
    let listed = keys.list();
    assert_eq!(listed.len(), 1);
    assert!(!listed[0].is_active());
    // Repeating is harmless and keeps the first revocation time.
    assert_eq!(keys.revoke(&rec.id).unwrap().revoked_at, Some(at));
}

#[test]
fn revoke_by_secret_or_secret_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let keys = store(dir.path());
    let (a, sa) = keys.create(Tier::Professional, "a", false, false).unwrap();
    let (b, sb) = keys.create(Tier::Professional, "b", false, false).unwrap();
    assert_eq!(keys.revoke(&sa).unwrap().id, a.id);
    assert!(keys.authenticate(&sa).is_none());
    assert!(keys.authenticate(&sb).is_some());
    // A prefix longer than the stored one compares the stored part.
    assert_eq!(keys.revoke(&sb[..12]).unwrap().id, b.id);
    assert!(keys.authenticate(&sb).is_none());
}

#[test]
fn revoke_reports_unknown_short_and_ambiguous_queries() {
    let dir = tempfile::tempdir().unwrap();
    let keys = store(dir.path());
    let (_, secret) = keys.create(Tier::Professional, "a", false, false).unwrap();
    assert!(matches!(keys.revoke("k_00000000"), Err(KeyError::NotFound(_))));
    assert!(matches!(keys.revoke(&secret[..6]), Err(KeyError::NotFound(_))), "prefix too short");
    assert!(keys.authenticate(&secret).is_some());
    // Error messages never carry a whole secret.
    let wrong = format!("wx_{}", "Z".repeat(40));
    let msg = keys.revoke(&wrong).unwrap_err().to_string();
    assert!(!msg.contains(&wrong), "{msg}");

    // Two keys sharing a prefix: the prefix is ambiguous, the ids are not.
    let text = std::fs::read_to_string(keys.path()).unwrap();
    drop(keys);
    let mut file: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut second = file["keys"][0].clone();
    second["id"] = "k_deadbeef".into();
    second["hash"] = to_hex(&sha256("other")).into();
    file["keys"].as_array_mut().unwrap().push(second);
    std::fs::write(dir.path().join(KEYS_FILE), file.to_string()).unwrap();
    let keys = store(dir.path());
    assert!(matches!(keys.revoke(&secret[..8]), Err(KeyError::Ambiguous(_))));
    assert_eq!(keys.revoke("k_deadbeef").unwrap().id, "k_deadbeef");
    assert!(keys.authenticate(&secret).is_some());
}

#[test]
fn enable_stream_persists_and_refuses_revoked_keys() {
    let dir = tempfile::tempdir().unwrap();
    let keys = store(dir.path());
    let (rec, secret) = keys.create(Tier::Enterprise, "carol", false, false).unwrap();
    assert!(!keys.authenticate(&secret).unwrap().stream);
    assert!(keys.enable_stream(&rec.id).unwrap().stream);
    assert!(keys.authenticate(&secret).unwrap().stream);
    drop(keys);
    let keys = store(dir.path());
    assert!(keys.authenticate(&secret).unwrap().stream);
    assert!(!keys.set_stream(&rec.id, false).unwrap().stream);
    keys.revoke(&rec.id).unwrap();
    assert!(matches!(keys.enable_stream(&rec.id), Err(KeyError::Revoked(id)) if id == rec.id));
    assert!(matches!(keys.enable_stream("k_nothere"), Err(KeyError::NotFound(_))));
}

#[test]
fn keys_persist_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (a, sa, b) = {
        let keys = store(dir.path());
        let (a, sa) = keys.create(Tier::Developer, "dave", true, true).unwrap();
        let (b, _) = keys.create(Tier::Testing, "erin", false, false).unwrap();
        keys.revoke(&b.id).unwrap();
        (a, sa, b)
    };
    let keys = store(dir.path());
    let listed = keys.list();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0], a);
    assert_eq!(listed[1].id, b.id);
    assert!(listed[1].revoked_at.is_some());
    assert_eq!(*keys.authenticate(&sa).unwrap(), a);
}

#[test]
fn secrets_are_not_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let keys = store(dir.path());
    let secrets: Vec<String> =
        (0..3).map(|i| keys.create(Tier::Professional, &format!("u{i}"), false, false).unwrap().1).collect();
    let text = std::fs::read_to_string(keys.path()).unwrap();
    for s in &secrets {
        assert!(!text.contains(s.as_str()));
        assert!(!text.contains(&s[8..]), "only the 8-character prefix may be stored");
        assert!(text.contains(&to_hex(&sha256(s))));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(keys.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left behind: {leftovers:?}");
}

#[test]
fn corrupt_files_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(KEYS_FILE);
    let hash = to_hex(&sha256("s"));
    let record = |id: &str, hash: &str| {
        format!(r#"{{"id":"{id}","user":"u","tier":"developer","created_at":"2024-01-01T00:00:00Z","hash":"{hash}"}}"#)
    };
    let cases = [
        ("{not json".to_string(), "key"),
        (String::new(), "empty"),
        ("\u{0}\u{1}binary\u{ff}".to_string(), "key"),
        (r#"{"version":2,"keys":[]}"#.to_string(), "version 2"),
        (format!(r#"{{"version":1,"keys":[{}]}}"#, record("k_1", "abc")), "hash is not 64 hex"),
        (
            format!(r#"{{"version":1,"keys":[{},{}]}}"#, record("k_1", &hash), record("k_1", &to_hex(&[7; 32]))),
            "duplicate id",
        ),
        (format!(r#"{{"version":1,"keys":[{},{}]}}"#, record("k_1", &hash), record("k_2", &hash)), "same hash"),
        (
            format!(r#"{{"version":1,"keys":[{}]}}"#, record("k_1", &hash).replace("developer", "gold")),
            "unknown tier 'gold'",
        ),
    ];
    for (text, expected) in cases {
        std::fs::write(&path, &text).unwrap();
        let err = KeyStore::open(dir.path()).err().unwrap_or_else(|| panic!("{text:?} opened"));
        assert!(matches!(err, KeyError::Corrupt { .. }), "{text:?}: {err:?}");
        let msg = err.to_string();
        assert!(msg.contains("keys.json") && msg.contains(expected), "{text:?}: {msg}");
    }
    // A well-formed record in any tier case loads.
    std::fs::write(
        &path,
        format!(r#"{{"version":1,"keys":[{}]}}"#, record("k_1", &hash).replace("developer", "Developer")),
    )
    .unwrap();
    let keys = store(dir.path());
    assert_eq!(keys.authenticate("s").unwrap().tier, Tier::Developer);
}

#[test]
fn a_file_corrupted_while_running_keeps_the_old_keys_and_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let keys = store(dir.path()).with_check_interval(Duration::ZERO);
    let (_, secret) = keys.create(Tier::Professional, "a", false, false).unwrap();
    std::fs::write(keys.path(), "{\"version\":1,\"keys\":[").unwrap();
    assert!(keys.authenticate(&secret).is_some(), "previous keys stay in force");
    assert!(keys.last_reload_error().unwrap().contains("keys.json"));
    assert!(matches!(keys.reload_now(), Err(KeyError::Corrupt { .. })));
    assert!(matches!(keys.create(Tier::Professional, "b", false, false), Err(KeyError::Corrupt { .. })));
    assert_eq!(std::fs::read_to_string(keys.path()).unwrap(), "{\"version\":1,\"keys\":[");
}

#[test]
fn another_process_revoking_is_seen_after_reload() {
    let dir = tempfile::tempdir().unwrap();
    let server = store(dir.path());
    let (rec, secret) = server.create(Tier::Developer, "a", false, false).unwrap();
    assert!(server.authenticate(&secret).is_some());
    let cli = store(dir.path());
    cli.revoke(&rec.id).unwrap();
    // Within the check interval the server still uses its snapshot...
    assert!(server.authenticate(&secret).is_some());
    // ...and the next check picks the change up.
    assert!(server.reload_now().unwrap());
    assert!(server.authenticate(&secret).is_none());
    assert!(!server.reload_now().unwrap(), "unchanged file is not reloaded");
}

#[test]
fn checks_on_the_authentication_path_see_other_processes_changes() {
    let dir = tempfile::tempdir().unwrap();
    let server = store(dir.path()).with_check_interval(Duration::ZERO);
    let cli = store(dir.path());
    let (rec, secret) = cli.create(Tier::Enterprise, "a", false, false).unwrap();
    assert!(server.authenticate(&secret).is_some(), "new keys appear");
    cli.revoke(&rec.id).unwrap();
    assert!(server.authenticate(&secret).is_none(), "revoked keys disappear");
}

#[test]
fn revocation_reaches_a_running_store_within_two_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let server = store(dir.path());
    let (rec, secret) = server.create(Tier::Professional, "a", false, false).unwrap();
    assert!(server.authenticate(&secret).is_some());
    let start = Instant::now();
    store(dir.path()).revoke(&rec.id).unwrap();
    while server.authenticate(&secret).is_some() {
        assert!(start.elapsed() < Duration::from_secs(2), "revocation not seen after 2 s");
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn concurrent_writers_in_separate_stores_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let a = store(dir.path());
    let b = store(dir.path());
    // b's snapshot is stale when it writes; its write must keep a's key.
    let (ka, _) = a.create(Tier::Professional, "a", false, false).unwrap();
    let (kb, _) = b.create(Tier::Professional, "b", false, false).unwrap();
    a.revoke(&kb.id).unwrap();
    let ids: Vec<String> = store(dir.path()).list().into_iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![ka.id.clone(), kb.id.clone()]);

    let handles: Vec<_> = (0..4)
        .map(|t| {
            let dir = dir.path().to_path_buf();
            thread::spawn(move || {
                let keys = KeyStore::open(&dir).unwrap();
                (0..5)
                    .map(|i| keys.create(Tier::Developer, &format!("t{t}-{i}"), false, false).unwrap().1)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let secrets: Vec<String> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let keys = store(dir.path());
    assert_eq!(keys.list().len(), 2 + 20);
    assert!(secrets.iter().all(|s| keys.authenticate(s).is_some()));
    assert!(keys.list()[1].revoked_at.is_some(), "the earlier revocation survived");
}

#[test]
fn deleting_the_file_empties_a_running_store() {
    let dir = tempfile::tempdir().unwrap();
    let keys = store(dir.path()).with_check_interval(Duration::ZERO);
    let (_, secret) = keys.create(Tier::Professional, "a", false, false).unwrap();
    std::fs::remove_file(keys.path()).unwrap();
    assert!(keys.authenticate(&secret).is_none());
    assert!(keys.list().is_empty());
}
