//! Token renewal at 80 % of the lifetime and after 24 h on a fake clock, the cache key,
//! failed renewals, forgetting a pod's tokens, cleanup of expired ones.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequestSpec, TokenRequestStatus};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubelet_apipods::ApiError;
use kubelet_container::clock::{Clock, FakeClock};

use super::*;
use crate::api::{FakeCall, FakeObjects};

fn request(audience: &str, exp_secs: i64, pod_uid: &str) -> TokenRequest {
    TokenRequest {
        spec: TokenRequestSpec {
            audiences: vec![audience.into()],
            expiration_seconds: Some(exp_secs),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                name: Some("p".into()),
                uid: Some(pod_uid.into()),
            }),
        },
        ..Default::default()
    }
}

/// What the API server answers to `req` at `now`: the token expires `exp_secs` later.
fn issued(req: &TokenRequest, now: Timestamp, token: &str) -> TokenRequest {
    let exp = req.spec.expiration_seconds.unwrap();
    TokenRequest {
        spec: req.spec.clone(),
        status: Some(TokenRequestStatus {
            token: token.into(),
            expiration_timestamp: Time(now.checked_add(SignedDuration::from_secs(exp)).unwrap()),
        }),
        ..Default::default()
    }
}

struct Setup {
    api: FakeObjects<ConfigMap>,
    clock: FakeClock,
    m: TokenManager,
}

fn setup() -> Setup {
    let api = FakeObjects::default();
    let clock = FakeClock::default();
    let m = TokenManager::with_jitter(
        Arc::new(api.clone()),
        Arc::new(clock.clone()),
        Box::new(|| Duration::ZERO),
    );
    Setup { api, clock, m }
}

fn creates(api: &FakeObjects<ConfigMap>) -> usize {
    api.calls()
        .iter()
        .filter(|c| matches!(c, FakeCall::CreateToken(..)))
        .count()
}

async fn token(s: &Setup, req: &TokenRequest) -> String {
    s.m.get_service_account_token("ns", "sa", req)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
}

#[tokio::test]
async fn renewed_after_80_percent_of_the_lifetime() {
    let s = setup();
    let req = request("api", 3600, "uid-1");
    s.api.push_token(Ok(issued(&req, s.clock.now(), "t1")));
    assert_eq!(token(&s, &req).await, "t1");
    assert_eq!(
        s.api.calls()[0],
        FakeCall::CreateToken("ns".into(), "sa".into())
    );
    // 80 % of 3600 s is 2880 s.
    s.clock.step(Duration::from_secs(2880));
    assert_eq!(token(&s, &req).await, "t1");
    assert_eq!(creates(&s.api), 1);
    s.clock.step(Duration::from_secs(1));
    s.api.push_token(Ok(issued(&req, s.clock.now(), "t2")));
    assert_eq!(token(&s, &req).await, "t2");
    assert_eq!(creates(&s.api), 2);
    assert_eq!(token(&s, &req).await, "t2");
    assert_eq!(creates(&s.api), 2);
}

#[tokio::test]
async fn renewed_after_24_hours_whatever_the_lifetime() {
    let s = setup();
    // 80 % of 48 h would be 38.4 h.
    let req = request("api", 48 * 3600, "uid-1");
    s.api.push_token(Ok(issued(&req, s.clock.now(), "t1")));
    assert_eq!(token(&s, &req).await, "t1");
    s.clock.step(Duration::from_secs(24 * 3600));
    assert_eq!(token(&s, &req).await, "t1");
    s.clock.step(Duration::from_secs(1));
    s.api.push_token(Ok(issued(&req, s.clock.now(), "t2")));
    assert_eq!(token(&s, &req).await, "t2");
}

#[tokio::test]
async fn the_jitter_brings_the_renewal_forward() {
    let s = setup();
    let m = TokenManager::with_jitter(
        Arc::new(s.api.clone()),
        Arc::new(s.clock.clone()),
        Box::new(|| Duration::from_secs(9)),
    );
    let tr = issued(&request("api", 3600, "u"), s.clock.now(), "t");
    s.clock.step(Duration::from_secs(2871));
    assert!(!m.requires_refresh(&tr));
    s.clock.step(Duration::from_secs(1));
    assert!(m.requires_refresh(&tr));
    let mut no_exp = tr.clone();
    no_exp.spec.expiration_seconds = None;
    assert!(!m.requires_refresh(&no_exp), "upstream never renews those");
    for _ in 0..100 {
        assert!(random_jitter() < MAX_JITTER);
    }
}

#[tokio::test]
async fn tokens_are_cached_per_request() {
    let s = setup();
    let a = request("a", 3600, "uid-1");
    let b = request("b", 3600, "uid-1");
    let c = request("a", 7200, "uid-1");
    for (r, t) in [(&a, "ta"), (&b, "tb"), (&c, "tc")] {
        s.api.push_token(Ok(issued(r, s.clock.now(), t)));
        assert_eq!(token(&s, r).await, t);
    }
    assert_eq!(token(&s, &a).await, "ta");
    assert_eq!(token(&s, &b).await, "tb");
    assert_eq!(creates(&s.api), 3);
    assert_eq!(
        key_func("sa", "ns", &a),
        r#""sa"/"ns"/[]string{"a"}/3600/v1.BoundObjectReference{Kind:"Pod", APIVersion:"v1", Name:"p", UID:"uid-1"}/"""#
    );
    assert_eq!(
        key_func("sa", "ns", &TokenRequest::default()),
        r#""sa"/"ns"/[]string(nil)/0/v1.BoundObjectReference{Kind:"", APIVersion:"", Name:"", UID:""}/"""#
    );
}

#[tokio::test]
async fn a_failed_renewal_serves_the_old_token_until_it_expires() {
    let s = setup();
    let req = request("api", 3600, "uid-1");
    s.api
        .push_token(Err(ApiError::Transport("connection refused".into())));
    assert_eq!(
        s.m.get_service_account_token("ns", "sa", &req)
            .await
            .unwrap_err()
            .to_string(),
        "failed to fetch token: connection refused"
    );
    s.api.push_token(Ok(issued(&req, s.clock.now(), "t1")));
    assert_eq!(token(&s, &req).await, "t1");
    s.clock.step(Duration::from_secs(3000));
    // The fake answers "connection refused" when nothing is scripted.
    assert_eq!(token(&s, &req).await, "t1");
    s.clock.step(Duration::from_secs(601));
    let e =
        s.m.get_service_account_token("ns", "sa", &req)
            .await
            .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "token {} expired and refresh failed: connection refused",
            key_func("sa", "ns", &req)
        )
    );
}

#[tokio::test]
async fn delete_forgets_a_pods_tokens_and_cleanup_the_expired_ones() {
    let s = setup();
    let one = request("api", 3600, "uid-1");
    let two = request("api", 600, "uid-2");
    let three = request("other", 7200, "uid-2");
    for (r, t) in [(&one, "t1"), (&two, "t2"), (&three, "t3")] {
        s.api.push_token(Ok(issued(r, s.clock.now(), t)));
        token(&s, r).await;
    }
    assert_eq!(s.m.len(), 3);
    s.m.delete_service_account_token("uid-1");
    assert_eq!(s.m.len(), 2);
    s.clock.step(Duration::from_secs(601));
    s.m.cleanup();
    assert_eq!(s.m.len(), 1, "the 600 s token expired");
    s.m.delete_service_account_token("uid-2");
    assert!(s.m.is_empty());
}
