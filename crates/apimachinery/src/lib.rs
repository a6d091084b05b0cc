//! Value types with upstream apimachinery semantics: resource.Quantity, Go durations, cpusets, eviction thresholds, reserved resources, label/taint validation helpers.
