//! Many members with long paths: the superblock keeps a bounded path hint
//! per member, so `create` of 17 members named by 3900-byte paths works
//! (it panicked when the superblock outgrew its 64 KiB slot), and the
//! array serves and shows every member.

mod support;

use support::*;

#[test]
fn create_and_serve_seventeen_members_with_long_paths() {
    let scratch = scratch();
    let dir = scratch.path();
    let deep: String = (0..19)
        .map(|i| format!("{}{i}/", "d".repeat(200)))
        .collect();
    std::fs::create_dir_all(dir.join(&deep)).unwrap();
    let names: Vec<String> = (0..17).map(|i| format!("{deep}member-{i}")).collect();
    let members = strs(&names);
    let mut args = vec!["create", "--level", "6", "--size", "4M"];
    args.extend_from_slice(&members);
    eraid(dir, &args).expect_ok();
    let detail = detail_json(dir, &members);
    let listed = detail["members"].as_array().unwrap();
    assert_eq!(listed.len(), 17, "{detail:#}");
    assert!(listed.iter().all(|m| m["state"] == "active"), "{detail:#}");
    let server = Server::start(dir, &members);
    server.stop();
    // With one member gone, its slot is shown by the (shortened) hint.
    std::fs::remove_file(dir.join(&names[16])).unwrap();
    let detail = detail_json(dir, &members);
    let gone = &detail["members"][16];
    assert_eq!(gone["state"], "missing", "{detail:#}");
    assert!(
        gone["path"].as_str().unwrap().ends_with("/member-16"),
        "{detail:#}"
    );
}
