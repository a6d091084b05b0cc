//! Client-side rate limiting: client-go's `util/flowcontrol/throttle.go`
//! (`NewTokenBucketRateLimiterWithClock`, a `golang.org/x/time/rate` limiter) as a tower
//! layer in the kube client's service stack. kube has no limiter of its own.
//!
//! The bucket holds `burst` tokens and starts full; it refills at `qps` tokens a second.
//! Every request takes one token. When none is left the request waits until its token
//! is due, as `rate.Limiter.Wait` does: a waiter reserves its token at once, so the
//! n-th request beyond the burst waits `n / qps`. Like client-go, every request is
//! throttled, watches included (`Request.Watch` calls `tryThrottle` too).
//!
//! Time comes from a [`Clock`] (client-go's `flowcontrol.Clock`: `Now`, `Sleep`), so
//! [`FakeClock`] tests the limiter without waiting.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tower::{Layer, Service};

/// A boxed, sendable future of a [`Clock::sleep`].
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

/// client-go `flowcontrol.Clock`: monotonic now and sleep.
pub trait Clock: Send + Sync + Debug {
    /// The current instant.
    fn now(&self) -> Instant;
    /// A future that completes after `d`.
    fn sleep(&self, d: Duration) -> Sleep;
}

/// The real clock (`tokio::time`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, d: Duration) -> Sleep {
        Box::pin(tokio::time::sleep(d))
    }
}

/// A recording fake: `sleep` advances the fake time at once and records the duration.
#[derive(Debug, Clone)]
pub struct FakeClock {
    state: Arc<Mutex<FakeState>>,
}

#[derive(Debug)]
struct FakeState {
    now: Instant,
    sleeps: Vec<Duration>,
}

impl FakeClock {
    /// A fake clock starting now.
    pub fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(FakeState {
                now: Instant::now(),
                sleeps: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Move the fake time forward by `d`.
    pub fn step(&self, d: Duration) {
        let mut s = self.lock();
        s.now += d;
    }

    /// Every duration slept so far, in order.
    pub fn sleeps(&self) -> Vec<Duration> {
        self.lock().sleeps.clone()
    }

    /// The sum of [`FakeClock::sleeps`].
    pub fn slept(&self) -> Duration {
        self.lock().sleeps.iter().sum()
    }
}

impl Default for FakeClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        self.lock().now
    }

    fn sleep(&self, d: Duration) -> Sleep {
        let mut s = self.lock();
        s.now += d;
        s.sleeps.push(d);
        Box::pin(std::future::ready(()))
    }
}

/// `flowcontrol.NewTokenBucketRateLimiterWithClock(qps, burst, clock)`. Clones share
/// the bucket.
#[derive(Debug, Clone)]
pub struct TokenBucketRateLimiter {
    bucket: Arc<Mutex<Bucket>>,
    clock: Arc<dyn Clock>,
}

#[derive(Debug)]
struct Bucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
    admitted: u64,
}

impl TokenBucketRateLimiter {
    /// A full bucket of `burst` tokens refilled at `qps` per second. client-go never
    /// builds one with `qps <= 0` or `burst == 0` (see [`crate::RestClientSettings::limiter`]).
    pub fn new(qps: f32, burst: u32, clock: Arc<dyn Clock>) -> Self {
        let now = clock.now();
        Self {
            bucket: Arc::new(Mutex::new(Bucket {
                qps: f64::from(qps),
                burst: f64::from(burst),
                tokens: f64::from(burst),
                last: now,
                admitted: 0,
            })),
            clock,
        }
    }

    /// The configured rate (`RateLimiter.QPS()`).
    pub fn qps(&self) -> f32 {
        self.lock().qps as f32
    }

    /// How many tokens were handed out so far.
    pub fn admitted(&self) -> u64 {
        self.lock().admitted
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Bucket> {
        self.bucket.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Take one token now (`rate.Limiter.reserveN(now, 1)`) and return how long the
    /// caller must wait before using it.
    pub fn reserve(&self) -> Duration {
        let now = self.clock.now();
        let mut b = self.lock();
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * b.qps).min(b.burst);
        b.last = now;
        b.tokens -= 1.0;
        b.admitted += 1;
        if b.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-b.tokens / b.qps).unwrap_or(Duration::MAX)
        }
    }

    /// `Wait`: take a token and wait until it is due.
    pub async fn wait(&self) {
        let d = self.reserve();
        if !d.is_zero() {
            self.clock.sleep(d).await;
        }
    }

    fn sleep(&self, d: Duration) -> Sleep {
        self.clock.sleep(d)
    }
}

/// The tower layer that puts a [`TokenBucketRateLimiter`] in front of a client's stack.
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    limiter: TokenBucketRateLimiter,
}

impl RateLimitLayer {
    /// Throttle every request through `limiter`.
    pub fn new(limiter: TokenBucketRateLimiter) -> Self {
        Self { limiter }
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> RateLimit<S> {
        RateLimit {
            inner,
            limiter: self.limiter.clone(),
            state: State::Idle,
        }
    }
}

/// The service of [`RateLimitLayer`]: `poll_ready` takes a token and waits until it is
/// due, then asks the inner service (kube's client drives it through a `Buffer`, which
/// calls `poll_ready` once before each request).
pub struct RateLimit<S> {
    inner: S,
    limiter: TokenBucketRateLimiter,
    state: State,
}

enum State {
    Idle,
    Waiting(Sleep),
    Admitted,
}

impl<S: Debug> Debug for RateLimit<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            State::Idle => "idle",
            State::Waiting(_) => "waiting",
            State::Admitted => "admitted",
        };
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .field("limiter", &self.limiter)
            .field("state", &state)
            .finish()
    }
}

impl<S, Req> Service<Req> for RateLimit<S>
where
    S: Service<Req>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        loop {
            match &mut self.state {
                State::Idle => {
                    let d = self.limiter.reserve();
                    self.state = if d.is_zero() {
                        State::Admitted
                    } else {
                        State::Waiting(self.limiter.sleep(d))
                    };
                }
                State::Waiting(sleep) => {
                    if sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    self.state = State::Admitted;
                }
                State::Admitted => return self.inner.poll_ready(cx),
            }
        }
    }

    fn call(&mut self, req: Req) -> Self::Future {
        // The token taken by poll_ready is used by this request; the next one takes its own.
        self.state = State::Idle;
        self.inner.call(req)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    fn limiter(qps: f32, burst: u32) -> (FakeClock, TokenBucketRateLimiter) {
        let clock = FakeClock::new();
        let l = TokenBucketRateLimiter::new(qps, burst, Arc::new(clock.clone()));
        (clock, l)
    }

    #[test]
    fn burst_then_qps() {
        let (clock, l) = limiter(5.0, 10);
        for _ in 0..10 {
            assert_eq!(l.reserve(), Duration::ZERO);
        }
        // Waiters reserve at once: the n-th beyond the burst waits n / qps.
        assert_eq!(l.reserve(), Duration::from_millis(200));
        assert_eq!(l.reserve(), Duration::from_millis(400));
        clock.step(Duration::from_secs(1));
        // One second gave back 5 tokens; 2 were owed.
        for _ in 0..3 {
            assert_eq!(l.reserve(), Duration::ZERO);
        }
        assert_eq!(l.reserve(), Duration::from_millis(200));
        assert_eq!(l.admitted(), 16);
    }

    #[test]
    fn the_bucket_never_holds_more_than_burst() {
        let (clock, l) = limiter(50.0, 100);
        clock.step(Duration::from_secs(3600));
        for _ in 0..100 {
            assert_eq!(l.reserve(), Duration::ZERO);
        }
        assert_eq!(l.reserve(), Duration::from_millis(20));
    }

    #[tokio::test]
    async fn wait_sleeps_on_the_clock() {
        let (clock, l) = limiter(2.0, 1);
        for _ in 0..5 {
            l.wait().await;
        }
        // One free token, then each sleep lets time pass so the next waits 1/qps.
        assert_eq!(clock.sleeps(), vec![Duration::from_millis(500); 4]);
    }

    #[tokio::test]
    async fn the_layer_throttles_every_request() {
        let (clock, l) = limiter(10.0, 3);
        let calls = Arc::new(Mutex::new(0u32));
        let counted = calls.clone();
        let mut svc = RateLimitLayer::new(l.clone()).layer(tower::service_fn(move |r: u32| {
            *counted.lock().unwrap() += 1;
            std::future::ready(Ok::<u32, std::convert::Infallible>(r))
        }));
        for i in 0..13 {
            assert_eq!(svc.ready().await.unwrap().call(i).await.unwrap(), i);
        }
        assert_eq!(*calls.lock().unwrap(), 13);
        assert_eq!(l.admitted(), 13);
        // 3 from the burst, 10 more at 10 qps: one second on the fake clock.
        assert_eq!(clock.sleeps().len(), 10);
        assert_eq!(clock.slept(), Duration::from_secs(1));
    }
}
