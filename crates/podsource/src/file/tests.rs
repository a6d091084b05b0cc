#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;
use k8s_openapi::api::core::v1::Pod;
use tokio::time::Instant;

const DIR: &str = "/manifests";
const PERIOD: Duration = Duration::from_secs(20);

fn pod_yaml(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: c\n    image: i\n"
    )
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

struct Harness {
    fs: Arc<FakeFs>,
    rx: mpsc::Receiver<SourceUpdate>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn start(fs: Arc<FakeFs>) -> Harness {
    let (tx, rx) = mpsc::channel(4);
    let cancel = CancellationToken::new();
    let source = SourceFile::new(DIR, "n", StaticPodOptions::default(), fs.clone());
    let task = tokio::spawn(run_file_source(source, PERIOD, tx, cancel.clone()));
    Harness {
        fs,
        rx,
        cancel,
        task,
    }
}

fn dir_with(pods: &[&str]) -> Arc<FakeFs> {
    let fs = Arc::new(FakeFs::default());
    fs.set(DIR, FakeEntry::Dir);
    for p in pods {
        fs.write(format!("{DIR}/{p}.yaml"), pod_yaml(p));
    }
    fs
}

async fn next(h: &mut Harness) -> Vec<String> {
    names(&h.rx.recv().await.unwrap().pods)
}

#[tokio::test(start_paused = true)]
async fn scans_at_start_then_on_changes_before_the_period() {
    let mut h = start(dir_with(&["a"]));
    assert_eq!(next(&mut h).await, ["a-n"]);
    assert_eq!(h.fs.watches(), [(PathBuf::from(DIR), None)]);

    let t0 = Instant::now();
    h.fs.write(format!("{DIR}/b.yaml"), pod_yaml("b"));
    h.fs.notify();
    h.fs.notify();
    assert_eq!(next(&mut h).await, ["a-n", "b-n"]);
    assert!(
        Instant::now() - t0 < PERIOD,
        "the change, not the timer, triggered the scan"
    );
    let extra = tokio::time::timeout(Duration::from_secs(5), h.rx.recv()).await;
    assert!(
        extra.is_err(),
        "two notifications coalesced into one scan: {extra:?}"
    );
    h.cancel.cancel();
    h.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn rescans_every_period_without_events() {
    let mut h = start(dir_with(&["a"]));
    let t0 = Instant::now();
    assert_eq!(next(&mut h).await, ["a-n"]);
    h.fs.remove(format!("{DIR}/a.yaml"));
    assert_eq!(next(&mut h).await, Vec::<String>::new());
    assert!(
        Instant::now() - t0 >= PERIOD,
        "picked up by the periodic re-scan"
    );
    h.cancel.cancel();
    h.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn watch_failures_fall_back_to_periodic_scans_and_are_retried() {
    let fs = dir_with(&["a"]);
    fs.fail_watch(true);
    let mut h = start(fs);
    assert_eq!(next(&mut h).await, ["a-n"]);
    assert!(h.fs.watches().is_empty());
    h.fs.fail_watch(false);
    assert_eq!(next(&mut h).await, ["a-n"], "periodic scan");
    assert_eq!(h.fs.watches().len(), 1, "watch retried on the next scan");

    h.fs.write(format!("{DIR}/b.yaml"), pod_yaml("b"));
    h.fs.break_watches();
    assert_eq!(
        next(&mut h).await,
        ["a-n", "b-n"],
        "a lost watch triggers a scan"
    );
    assert_eq!(h.fs.watches().len(), 2, "and is re-created");
    h.cancel.cancel();
    h.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn path_becoming_a_directory_moves_the_watch() {
    let fs = Arc::new(FakeFs::default());
    fs.set("/", FakeEntry::Dir);
    let mut h = start(fs);
    assert_eq!(
        next(&mut h).await,
        Vec::<String>::new(),
        "missing path: empty set"
    );
    assert_eq!(
        h.fs.watches(),
        [(PathBuf::from("/"), Some("manifests".into()))]
    );
    h.fs.set(DIR, FakeEntry::Dir);
    h.fs.write(format!("{DIR}/a.yaml"), pod_yaml("a"));
    h.fs.notify();
    assert_eq!(next(&mut h).await, ["a-n"]);
    assert_eq!(h.fs.watches().last().unwrap(), &(PathBuf::from(DIR), None));
    h.cancel.cancel();
    h.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn stops_when_the_receiver_is_dropped() {
    let h = start(dir_with(&["a"]));
    drop(h.rx);
    let done = tokio::time::timeout(PERIOD * 10, h.task).await;
    assert!(matches!(done, Ok(Ok(()))), "{done:?}");
}
