//! The send pacer's clock: waits inside the load client's runtime until a scheduled send
//! instant with microsecond precision. tokio's own timers have millisecond granularity
//! (content/measurement.md, Open loop), so on Linux the wait is a one-shot `timerfd` registered
//! with the runtime's reactor: the worker thread that waits is woken by its own event loop
//! when the timer fires, with no pacer thread to hand requests over from and no
//! cross-thread wake-up per request. Elsewhere it falls back to tokio's timer.

use std::time::Instant;

/// A one-shot high-resolution timer on the current tokio runtime.
pub(crate) struct Pacer {
    #[cfg(target_os = "linux")]
    timer: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
}

impl Pacer {
    /// Creates the timer and registers it with the current runtime's reactor. Must be
    /// called from inside a tokio runtime with its I/O driver enabled.
    ///
    /// Errors: the OS error of `timerfd_create` or of the registration.
    pub(crate) fn new() -> std::io::Result<Self> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::FromRawFd;
            // SAFETY: timerfd_create takes two integer arguments and returns a new file
            // descriptor or -1; it touches no memory of ours.
            let fd = unsafe {
                libc::timerfd_create(
                    libc::CLOCK_MONOTONIC,
                    libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: `fd` was just returned by timerfd_create and is owned by no one else.
            let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
            // SAFETY: the OwnedFd is moved into the AsyncFd, which owns it (and keeps it
            // open, returning the same descriptor) until it is dropped.
            let timer = unsafe {
                tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
            }
            .map_err(|e| e.into_parts().1)?;
            Ok(Self { timer })
        }
        #[cfg(not(target_os = "linux"))]
        Ok(Self {})
    }

    /// Returns at `at` or just after it (immediately if `at` has passed).
    ///
    /// Errors: the OS error of arming, polling or reading the timer.
    pub(crate) async fn wait_until(&self, at: Instant) -> std::io::Result<()> {
        loop {
            let now = Instant::now();
            if now >= at {
                return Ok(());
            }
            #[cfg(target_os = "linux")]
            {
                use std::os::fd::AsRawFd;
                let left = at - now;
                let spec = libc::itimerspec {
                    it_interval: libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 0,
                    },
                    it_value: libc::timespec {
                        tv_sec: libc::time_t::try_from(left.as_secs()).unwrap_or(libc::time_t::MAX),
                        // Below 10^9: fits every `c_long`.
                        tv_nsec: left.subsec_nanos() as libc::c_long,
                    },
                };
                let fd = self.timer.get_ref().as_raw_fd();
                // SAFETY: `fd` is our open timerfd; `spec` is a valid itimerspec that
                // outlives the call; a null old-value pointer is allowed.
                if unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) } < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let mut guard = self.timer.readable().await?;
                let mut expirations = [0u8; 8];
                // SAFETY: reads at most 8 bytes into an 8-byte buffer we own.
                let read = unsafe { libc::read(fd, expirations.as_mut_ptr().cast(), 8) };
                // Consumed (or nothing there: EAGAIN): wait for the next expiry either way.
                guard.clear_ready();
                if read < 0 {
                    let error = std::io::Error::last_os_error();
                    if error.kind() != std::io::ErrorKind::WouldBlock {
                        return Err(error);
                    }
                }
            }
            #[cfg(not(target_os = "linux"))]
            tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn waits_until_the_instant() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let pacer = Pacer::new().unwrap();
            let start = Instant::now();
            for step in 1..=3u64 {
                let at = start + Duration::from_micros(300 * step);
                pacer.wait_until(at).await.unwrap();
                assert!(Instant::now() >= at);
            }
            // A past instant returns at once.
            pacer.wait_until(start).await.unwrap();
        });
    }
}
