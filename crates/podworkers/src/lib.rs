//! PodWorkers: one worker per pod UID driving the sync -> terminating -> terminated lifecycle (pkg/kubelet/pod_workers.go).
