//! What the benchmark writes to disk: static pod manifests and the KubeletConfiguration
//! (pure; unit-tested). Both are emitted as JSON, which every kubelet reads as YAML (JSON is a
//! subset of YAML; upstream decodes both through `sigs.k8s.io/yaml`), so no quoting can go
//! wrong.

use std::path::Path;

use serde_json::{Value, json};

/// Namespace of every pod the benchmark creates (floor sandboxes and static pods). Cleanup
/// only ever touches sandboxes in this namespace.
pub const NAMESPACE: &str = "krsbench";
/// Prefix of every pod and sandbox name the benchmark creates.
pub const NAME_PREFIX: &str = "krsbench-";
/// `--hostname-override` given to the kubelets: static pod `foo` becomes `foo-krsbench-node`.
pub const NODE_NAME: &str = "krsbench-node";
/// Name of the one container in each pod.
pub const CONTAINER_NAME: &str = "sleeper";
/// Name of the one container in each [`PodTemplate::Web`] pod.
pub const WEB_CONTAINER_NAME: &str = "web";

/// Name of pod `index` of a batch: `krsbench-<tag>-<index:03>` (tag: variant, N, repeat).
pub fn pod_name(tag: &str, index: usize) -> String {
    format!("{NAME_PREFIX}{tag}-{index:03}")
}

/// The name a kubelet gives the static pod of manifest `name` (`<name>-<nodeName>`,
/// upstream `pkg/kubelet/config/common.go` `applyDefaults`).
pub fn static_pod_full_name(name: &str) -> String {
    format!("{name}-{NODE_NAME}")
}

/// Port the web pods' `httpd` listens on.
pub const WEB_PORT: u16 = 8080;
/// Path the web pods' `httpd` serves (a file with `ok`).
pub const WEB_HEALTHZ: &str = "/healthz";

/// What each static pod of a batch runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PodTemplate {
    /// One busybox `sleep 3600` container (B4, stats scrapes).
    #[default]
    Sleep,
    /// [`PodTemplate::Sleep`] with `restartPolicy: Never` (B9, event detection: a killed
    /// container stays terminated, no restart overtakes the observation).
    SleepNoRestart,
    /// One busybox `httpd` container serving [`WEB_HEALTHZ`] on [`WEB_PORT`] (issue 9's
    /// prober cost); with `probes`, an exec readiness probe (`cat /tmp/ready`) and an
    /// httpGet liveness probe on that port, both every second.
    Web {
        /// Whether the container has the two probes.
        probes: bool,
    },
}

/// A static pod manifest of `template`, `imagePullPolicy: Never`, `restartPolicy: Always`
/// (`Never` for [`PodTemplate::SleepNoRestart`]), `terminationGracePeriodSeconds: 1`.
pub fn static_pod_manifest(name: &str, image: &str, template: PodTemplate) -> String {
    match template {
        PodTemplate::Sleep => sleep_pod(name, image, "Always"),
        PodTemplate::SleepNoRestart => sleep_pod(name, image, "Never"),
        PodTemplate::Web { probes } => web_pod(name, image, probes),
    }
}

fn web_pod(name: &str, image: &str, probes: bool) -> String {
    let serve = format!(
        "mkdir -p /www && echo ok > /www{WEB_HEALTHZ} && touch /tmp/ready && \
         exec httpd -f -p {WEB_PORT} -h /www"
    );
    let mut container = json!({
        "name": WEB_CONTAINER_NAME,
        "image": image,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", serve],
        "ports": [{ "containerPort": WEB_PORT, "protocol": "TCP" }],
    });
    if probes {
        container["readinessProbe"] = json!({
            "exec": { "command": ["cat", "/tmp/ready"] },
            "periodSeconds": 1,
        });
        container["livenessProbe"] = json!({
            "httpGet": { "path": WEB_HEALTHZ, "port": WEB_PORT },
            "periodSeconds": 1,
        });
    }
    pod_of(name, container, "Always")
}

fn sleep_pod(name: &str, image: &str, restart_policy: &str) -> String {
    pod_of(
        name,
        json!({
            "name": CONTAINER_NAME,
            "image": image,
            "imagePullPolicy": "Never",
            "command": ["sleep", "3600"],
        }),
        restart_policy,
    )
}

/// A pod of the benchmark's namespace with one `container`.
fn pod_of(name: &str, container: Value, restart_policy: &str) -> String {
    pretty(&json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": { "app": "krsbench" },
        },
        "spec": {
            "containers": [container],
            "restartPolicy": restart_policy,
            "terminationGracePeriodSeconds": 1,
        },
    }))
}

/// Paths and ports of one kubelet run.
#[derive(Clone, Debug)]
pub struct KubeletSettings<'a> {
    /// `containerRuntimeEndpoint` (`unix:///...`).
    pub runtime_endpoint: &'a str,
    /// `staticPodPath`.
    pub static_pod_path: &'a Path,
    /// `podLogsDir`.
    pub pod_logs_dir: &'a Path,
    /// `volumePluginDir` (kept inside the run directory rather than under /usr/libexec).
    pub volume_plugin_dir: &'a Path,
    /// `healthzPort` (bound on 127.0.0.1).
    pub healthz_port: u16,
    /// `port`: the kubelet API server (bound on 127.0.0.1).
    pub port: u16,
    /// `readOnlyPort` (0: off; the stats scrapes use it).
    pub read_only_port: u16,
}

/// The KubeletConfiguration both kubelets run with (standalone: no API server).
pub fn kubelet_config(s: &KubeletSettings<'_>) -> String {
    let cfg = json!({
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        // cgroup v1 host: kubelet >= 1.35 refuses cgroup v1 unless told otherwise.
        "failCgroupV1": false,
        "cgroupDriver": "cgroupfs",
        "cgroupsPerQOS": true,
        "containerRuntimeEndpoint": s.runtime_endpoint,
        "staticPodPath": s.static_pod_path.display().to_string(),
        "fileCheckFrequency": "20s",
        "podLogsDir": s.pod_logs_dir.display().to_string(),
        "volumePluginDir": s.volume_plugin_dir.display().to_string(),
        "address": "127.0.0.1",
        "port": s.port,
        "readOnlyPort": s.read_only_port,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": s.healthz_port,
        "authentication": {
            "anonymous": { "enabled": false },
            "webhook": { "enabled": false },
        },
        "authorization": { "mode": "AlwaysAllow" },
        "failSwapOn": false,
        // No CAP_SYS_RESOURCE on the benchmark host: the kubelet cannot lower its own score.
        "oomScoreAdj": 0,
        "resolvConf": "/etc/resolv.conf",
        // As the cluster nodes (`hack/lib/cluster-node.sh`): this machine's disk has about 10 %
        // available to non-root users, under the default nodefs 10 % / imagefs 15 % signals, so
        // both kubelets would sit under DiskPressure and reclaim every 10 s (upstream deletes
        // the pause image, which no registry gives back). Absolute thresholds, every signal
        // listed; 100 turns image GC off. The same on both kubelets.
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1Gi",
            "nodefs.inodesFree": "5%",
            "imagefs.available": "1Gi",
            "imagefs.inodesFree": "5%",
        },
        "imageGCHighThresholdPercent": 100,
    });
    pretty(&cfg)
}

fn pretty(v: &Value) -> String {
    // Serialising a `Value` cannot fail; fall back to the compact form just in case.
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string()) + "\n"
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        serde_saphyr::from_str(text).unwrap()
    }

    #[test]
    fn names() {
        assert_eq!(pod_name("k30r1", 7), "krsbench-k30r1-007");
        assert_eq!(
            static_pod_full_name("krsbench-k30r1-007"),
            "krsbench-k30r1-007-krsbench-node"
        );
    }

    #[test]
    fn manifest_is_a_busybox_sleep_pod() {
        let text = static_pod_manifest(
            "krsbench-a-001",
            "docker.io/library/busybox:1.36",
            PodTemplate::Sleep,
        );
        let pod = yaml(&text);
        assert_eq!(pod["kind"], "Pod");
        assert_eq!(pod["metadata"]["name"], "krsbench-a-001");
        assert_eq!(pod["metadata"]["namespace"], NAMESPACE);
        let spec = &pod["spec"];
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["terminationGracePeriodSeconds"], 1);
        let c = &spec["containers"][0];
        assert_eq!(c["name"], CONTAINER_NAME);
        assert_eq!(c["image"], "docker.io/library/busybox:1.36");
        assert_eq!(c["imagePullPolicy"], "Never");
        assert_eq!(c["command"], json!(["sleep", "3600"]));
        assert_eq!(spec["containers"].as_array().unwrap().len(), 1);
        // B9's pods differ in the restart policy only.
        let never = yaml(&static_pod_manifest(
            "krsbench-a-001",
            "docker.io/library/busybox:1.36",
            PodTemplate::SleepNoRestart,
        ));
        assert_eq!(never["spec"]["restartPolicy"], "Never");
        let mut same = never.clone();
        same["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(same, pod);
    }

    #[test]
    fn web_pod_with_and_without_probes() {
        let img = "docker.io/library/busybox:1.36";
        let with = yaml(&static_pod_manifest(
            "w",
            img,
            PodTemplate::Web { probes: true },
        ));
        let c = &with["spec"]["containers"][0];
        assert_eq!(c["name"], WEB_CONTAINER_NAME);
        assert_eq!(c["command"][0], "sh");
        let serve = c["command"][2].as_str().unwrap();
        assert!(serve.contains("touch /tmp/ready"), "{serve}");
        assert!(serve.ends_with("exec httpd -f -p 8080 -h /www"), "{serve}");
        assert!(serve.contains("echo ok > /www/healthz"), "{serve}");
        let r = &c["readinessProbe"];
        assert_eq!(r["exec"]["command"], json!(["cat", "/tmp/ready"]));
        assert_eq!(r["periodSeconds"], 1);
        let l = &c["livenessProbe"];
        assert_eq!(l["httpGet"]["path"], "/healthz");
        assert_eq!(l["httpGet"]["port"], 8080);
        assert_eq!(l["periodSeconds"], 1);
        let without = yaml(&static_pod_manifest(
            "w",
            img,
            PodTemplate::Web { probes: false },
        ));
        let c0 = &without["spec"]["containers"][0];
        assert!(c0.get("readinessProbe").is_none() && c0.get("livenessProbe").is_none());
        // The control differs from the probed pod in the probes only.
        let mut stripped = c.clone();
        let obj = stripped.as_object_mut().unwrap();
        obj.remove("readinessProbe");
        obj.remove("livenessProbe");
        assert_eq!(&stripped, c0);
        assert_eq!(with["spec"]["terminationGracePeriodSeconds"], 1);
    }

    #[test]
    fn kubelet_config_fields() {
        let text = kubelet_config(&KubeletSettings {
            runtime_endpoint: "unix:///run/c.sock",
            static_pod_path: Path::new("/tmp/x/manifests"),
            pod_logs_dir: Path::new("/tmp/x/logs"),
            volume_plugin_dir: Path::new("/tmp/x/plugins"),
            healthz_port: 40001,
            port: 40002,
            read_only_port: 0,
        });
        let c = yaml(&text);
        assert_eq!(c["kind"], "KubeletConfiguration");
        assert_eq!(c["apiVersion"], "kubelet.config.k8s.io/v1beta1");
        assert_eq!(c["failCgroupV1"], false);
        assert_eq!(c["cgroupsPerQOS"], true);
        assert_eq!(c["containerRuntimeEndpoint"], "unix:///run/c.sock");
        assert_eq!(c["staticPodPath"], "/tmp/x/manifests");
        assert_eq!(c["podLogsDir"], "/tmp/x/logs");
        assert_eq!(c["fileCheckFrequency"], "20s");
        assert_eq!(c["healthzPort"], 40001);
        assert_eq!(c["healthzBindAddress"], "127.0.0.1");
        assert_eq!(c["port"], 40002);
        assert_eq!(c["address"], "127.0.0.1");
        assert_eq!(c["readOnlyPort"], 0);
        assert_eq!(c["authentication"]["webhook"]["enabled"], false);
        assert_eq!(c["authorization"]["mode"], "AlwaysAllow");
        assert_eq!(c["imageGCHighThresholdPercent"], 100);
        assert_eq!(c["evictionHard"]["imagefs.available"], "1Gi");
        assert_eq!(c["evictionHard"]["memory.available"], "100Mi");
    }

    #[test]
    fn paths_with_quotes_stay_intact() {
        let text = static_pod_manifest("n", "img:\"odd\": yes", PodTemplate::Sleep);
        assert_eq!(
            yaml(&text)["spec"]["containers"][0]["image"],
            "img:\"odd\": yes"
        );
    }
}
