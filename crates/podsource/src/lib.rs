//! Pod sources: static pod files and URL, merged into one stream of pod updates (pkg/kubelet/config).
