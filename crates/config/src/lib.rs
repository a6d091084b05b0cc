//! KubeletConfiguration v1beta1 and KubeletFlags: flags, config file, drop-ins, defaults, precedence and validation (cmd/kubelet/app/options, pkg/kubelet/apis/config).
