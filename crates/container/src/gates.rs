//! The feature gates the kubelet's pod logic consults deep in pure code (upstream reads
//! `utilfeature.DefaultFeatureGate` there): set once at start from the kubelet's
//! `--feature-gates`; until then the 1.35 defaults.

use std::sync::atomic::{AtomicBool, Ordering};

static CONTAINER_RESTART_RULES: AtomicBool = AtomicBool::new(true);

#[cfg(any(test, feature = "fake"))]
thread_local! {
    static CONTAINER_RESTART_RULES_OVERRIDE: std::cell::Cell<Option<bool>> =
        const { std::cell::Cell::new(None) };
}

/// `ContainerRestartRules` (beta, on by default in 1.35): container-level `restartPolicy`
/// and `restartPolicyRules` decide restarts and the pod phase.
pub fn container_restart_rules() -> bool {
    #[cfg(any(test, feature = "fake"))]
    if let Some(v) = CONTAINER_RESTART_RULES_OVERRIDE.with(std::cell::Cell::get) {
        return v;
    }
    CONTAINER_RESTART_RULES.load(Ordering::Relaxed)
}

/// Sets [`container_restart_rules`] (the kubelet, at start).
pub fn set_container_restart_rules(enabled: bool) {
    CONTAINER_RESTART_RULES.store(enabled, Ordering::Relaxed);
}

/// Overrides [`container_restart_rules`] on the current thread until the guard drops
/// (tests; upstream `featuregatetesting.SetFeatureGateDuringTest`).
#[cfg(any(test, feature = "fake"))]
pub fn set_container_restart_rules_during_test(enabled: bool) -> TestGateGuard {
    let previous = CONTAINER_RESTART_RULES_OVERRIDE.with(|c| c.replace(Some(enabled)));
    TestGateGuard { previous }
}

/// Restores the previous override when dropped.
#[cfg(any(test, feature = "fake"))]
#[must_use = "the override ends when the guard drops"]
pub struct TestGateGuard {
    previous: Option<bool>,
}

#[cfg(any(test, feature = "fake"))]
impl Drop for TestGateGuard {
    fn drop(&mut self) {
        CONTAINER_RESTART_RULES_OVERRIDE.with(|c| c.set(self.previous));
    }
}

static RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS: AtomicBool = AtomicBool::new(false);

#[cfg(any(test, feature = "fake"))]
thread_local! {
    static RESTART_ALL_CONTAINERS_OVERRIDE: std::cell::Cell<Option<bool>> =
        const { std::cell::Cell::new(None) };
}

/// `RestartAllContainersOnContainerExits` (alpha, off by default in 1.35): restart rules
/// may use the action `RestartAllContainers`. Off, a matching rule with that action falls
/// back to the container-level policy (upstream `ContainerShouldRestart`).
pub fn restart_all_containers_on_container_exits() -> bool {
    #[cfg(any(test, feature = "fake"))]
    if let Some(v) = RESTART_ALL_CONTAINERS_OVERRIDE.with(std::cell::Cell::get) {
        return v;
    }
    RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS.load(Ordering::Relaxed)
}

/// Sets [`restart_all_containers_on_container_exits`] (the kubelet, at start).
pub fn set_restart_all_containers_on_container_exits(enabled: bool) {
    RESTART_ALL_CONTAINERS_ON_CONTAINER_EXITS.store(enabled, Ordering::Relaxed);
}

/// Overrides [`restart_all_containers_on_container_exits`] on the current thread until
/// the guard drops (tests).
#[cfg(any(test, feature = "fake"))]
pub fn set_restart_all_containers_during_test(enabled: bool) -> RestartAllGateGuard {
    let previous = RESTART_ALL_CONTAINERS_OVERRIDE.with(|c| c.replace(Some(enabled)));
    RestartAllGateGuard { previous }
}

/// Restores the previous override when dropped.
#[cfg(any(test, feature = "fake"))]
#[must_use = "the override ends when the guard drops"]
pub struct RestartAllGateGuard {
    previous: Option<bool>,
}

#[cfg(any(test, feature = "fake"))]
impl Drop for RestartAllGateGuard {
    fn drop(&mut self) {
        RESTART_ALL_CONTAINERS_OVERRIDE.with(|c| c.set(self.previous));
    }
}

static IMAGE_VOLUME: AtomicBool = AtomicBool::new(true);

#[cfg(any(test, feature = "fake"))]
thread_local! {
    static IMAGE_VOLUME_OVERRIDE: std::cell::Cell<Option<bool>> =
        const { std::cell::Cell::new(None) };
}

/// `ImageVolume` (beta, on by default in 1.35): `spec.volumes[*].image` volumes are pulled
/// and handed to the runtime as CRI image mounts.
pub fn image_volume() -> bool {
    #[cfg(any(test, feature = "fake"))]
    if let Some(v) = IMAGE_VOLUME_OVERRIDE.with(std::cell::Cell::get) {
        return v;
    }
    IMAGE_VOLUME.load(Ordering::Relaxed)
}

/// Sets [`image_volume`] (the kubelet, at start).
pub fn set_image_volume(enabled: bool) {
    IMAGE_VOLUME.store(enabled, Ordering::Relaxed);
}

/// Overrides [`image_volume`] on the current thread until the guard drops (tests).
#[cfg(any(test, feature = "fake"))]
pub fn set_image_volume_during_test(enabled: bool) -> ImageVolumeGateGuard {
    let previous = IMAGE_VOLUME_OVERRIDE.with(|c| c.replace(Some(enabled)));
    ImageVolumeGateGuard { previous }
}

/// Restores the previous [`image_volume`] override when dropped.
#[cfg(any(test, feature = "fake"))]
#[must_use = "the override ends when the guard drops"]
pub struct ImageVolumeGateGuard {
    previous: Option<bool>,
}

#[cfg(any(test, feature = "fake"))]
impl Drop for ImageVolumeGateGuard {
    fn drop(&mut self) {
        IMAGE_VOLUME_OVERRIDE.with(|c| c.set(self.previous));
    }
}
