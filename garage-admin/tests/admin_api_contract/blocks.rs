//! Workers, repairs and block errors.

use std::path::{Path, PathBuf};
use std::time::Duration;

use garage_admin::{
    NodeTarget, RepairType, RetrySelection, ScrubCommand, WorkerFilter, WorkerState,
};

use crate::common::{S3Access, client, eventually, incompressible, single_node};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_worker_runs_to_completion_and_corruption_shows_as_block_errors() {
    let cluster = single_node();
    let admin = client(&cluster, 0);
    let s3 = S3Access::create(&cluster, &admin, "blocks").await;
    s3.put("big-object", incompressible(256 * 1024)).await;

    // Worker variables: read all, set one, read it back.
    let vars = admin
        .worker_variables(&NodeTarget::Local, None)
        .await
        .unwrap()
        .into_single()
        .unwrap()
        .1;
    assert!(vars.contains_key("resync-tranquility"), "{vars:?}");
    let set = admin
        .set_worker_variable(&NodeTarget::All, "resync-tranquility", "3")
        .await
        .unwrap()
        .into_complete()
        .unwrap();
    assert!(set.values().all(|v| v.value == "3"));
    let one = admin
        .worker_variables(&NodeTarget::Local, Some("resync-tranquility"))
        .await
        .unwrap()
        .into_single()
        .unwrap()
        .1;
    assert_eq!(one.get("resync-tranquility").map(String::as_str), Some("3"));

    // A blocks repair starts a "Block repair worker" that ends in state done.
    let before = max_worker_id(&admin).await;
    admin
        .launch_repair(&NodeTarget::All, RepairType::Blocks)
        .await
        .unwrap()
        .into_complete()
        .unwrap();
    let repair = eventually(
        "the block repair worker to finish",
        Duration::from_secs(60),
        || async {
            let (_, workers) = admin
                .list_workers(&NodeTarget::Local, WorkerFilter::default())
                .await
                .ok()?
                .into_single()
                .ok()?;
            workers.into_iter().find(|w| {
                w.name == "Block repair worker" && w.id > before && w.state == WorkerState::Done
            })
        },
    )
    .await;
    let (_, info) = admin
        .worker_info(&NodeTarget::Local, repair.id)
        .await
        .unwrap()
        .into_single()
        .unwrap();
    assert_eq!(info.name, "Block repair worker");
    assert_eq!(info.state, WorkerState::Done);
    let (_, workers) = admin
        .list_workers(&NodeTarget::Local, WorkerFilter::default())
        .await
        .unwrap()
        .into_single()
        .unwrap();
    assert!(
        workers
            .iter()
            .any(|w| w.name.starts_with("Block resync worker #") && w.queue_length.is_some()),
        "{workers:?}"
    );

    // Corrupt the object's data block on disk; a scrub finds it, moves it aside and queues
    // a resync that cannot succeed with one replica: the block is listed in error.
    let blocks = block_files(&cluster.data_dir(0));
    assert!(
        !blocks.is_empty(),
        "no block file under {}",
        cluster.data_dir(0).display()
    );
    for path in &blocks {
        let len = std::fs::metadata(path).unwrap().len() as usize;
        std::fs::write(path, vec![0x5a; len]).unwrap();
    }
    admin
        .launch_repair(&NodeTarget::Local, RepairType::Scrub(ScrubCommand::Start))
        .await
        .unwrap()
        .into_single()
        .unwrap();
    let errors = eventually("a block error", Duration::from_secs(90), || async {
        let (_, errors) = admin
            .list_block_errors(&NodeTarget::Local)
            .await
            .ok()?
            .into_single()
            .ok()?;
        (!errors.is_empty()).then_some(errors)
    })
    .await;
    let corrupted: Vec<String> = blocks
        .iter()
        .filter_map(|p| p.file_name()?.to_str()?.split('.').next().map(String::from))
        .collect();
    assert!(
        errors.iter().any(|e| corrupted.contains(&e.block_hash)),
        "errors {errors:?} do not name a corrupted block {corrupted:?}"
    );
    let hash = errors[0].block_hash.clone();
    assert!(errors[0].refcount >= 1 && errors[0].error_count >= 1);

    let (_, block) = admin
        .block_info(&NodeTarget::Local, &hash)
        .await
        .unwrap()
        .into_single()
        .unwrap();
    assert_eq!(block.block_hash, hash);
    assert!(!block.versions.is_empty());

    let retried = admin
        .retry_block_resync(&NodeTarget::All, &RetrySelection::all())
        .await
        .unwrap()
        .into_complete()
        .unwrap();
    assert!(retried.values().map(|c| c.count).sum::<u64>() >= 1);
    let (_, stats) = admin
        .node_statistics(&NodeTarget::Local)
        .await
        .unwrap()
        .into_single()
        .unwrap();
    assert!(stats.block_manager_stats.is_some());
    // Reading the corrupted object fails (the status line may already say 200 when the
    // block read fails, so the whole body must be read).
    assert_eq!(
        s3.get("big-object").await,
        None,
        "a corrupted object was served"
    );
}

async fn max_worker_id(admin: &garage_admin::AdminClient) -> u64 {
    let (_, workers) = admin
        .list_workers(&NodeTarget::Local, WorkerFilter::default())
        .await
        .unwrap()
        .into_single()
        .unwrap();
    workers.iter().map(|w| w.id).max().unwrap_or(0)
}

/// Data block files: every regular file under the data directory except Garage's own state.
fn block_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.len() >= 64 && n[..64].bytes().all(|b| b.is_ascii_hexdigit()))
            {
                out.push(path);
            }
        }
    }
    out
}
